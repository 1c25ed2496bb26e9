// Profile: what a profiled run measured, per pipeline pass and per communication, in the form
// the simulator needs (DESIGN.md §1). A value type; importers fill it (kineto_trace.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/op.h"
#include "traces/labels.h"
#include "traces/nccl.h"

namespace bubblesim::traces {

inline constexpr std::int64_t kNoThread = INT64_MIN;

// One labelled range (one pass of one stage for one microbatch) and the GPU work attributed to
// it. GPU work means kernels other than NCCL's, memcpys and memsets. In a trace without any GPU
// work (a pipeline recorded on CPU, e.g. gloo runs), each labelled range is a sample timed by
// itself: gpu_ops = 0, gpu_start_ns/gpu_end_ns are the range's start and end and kernel_ns its
// duration.
struct PassSample {
  RangeLabel label;
  std::int32_t trace = 0;        // index of the trace file among those imported
  std::int64_t process = 0;      // the range's process id in its trace (pid)
  sim::TimeNs gpu_start_ns = 0;  // start of its first GPU op, trace clock
  sim::TimeNs gpu_end_ns = 0;    // end of its last GPU op
  sim::TimeNs kernel_ns = 0;     // sum of the durations of its GPU ops
  std::uint32_t gpu_ops = 0;     // >= 1, or 0 for a range timed on the CPU (above)
  // Which iteration of its trace the range belongs to: how many iteration boundaries
  // (kineto_trace.h) start at or before the range's own start. Not kept in HDF5 profiles.
  std::int32_t iteration = 0;
  // The thread of a range from PiPPy's event recorder (events without "cat"), which records
  // each rank as a thread; kNoThread otherwise. Not kept in HDF5 profiles.
  std::int64_t thread = kNoThread;

  sim::TimeNs span_ns() const { return gpu_end_ns - gpu_start_ns; }
};

// One NCCL kernel.
struct CommSample {
  Collective collective = Collective::Unknown;
  std::int32_t trace = 0;
  std::int32_t device = 0;
  sim::TimeNs start_ns = 0;
  sim::TimeNs duration_ns = 0;
  // From the kernel's collective metadata ("In msg nelems"/"Out msg nelems" times the size of
  // "dtype"); -1 where the trace records none.
  std::int64_t in_bytes = -1;
  std::int64_t out_bytes = -1;
};

// A GPU that ran kernels in a trace.
struct DeviceInfo {
  std::int32_t trace = 0;
  std::int32_t device = 0;  // the kernels' args.device (their pid when absent)
  std::string name;         // from the trace's deviceProperties; empty when absent
  std::size_t kernels = 0;
};

struct Profile {
  std::vector<PassSample> passes;   // in the order of their GPU start within each trace
  std::vector<CommSample> comms;    // in trace order
  std::vector<DeviceInfo> devices;  // by trace, then device
  std::size_t kernels = 0;          // every kernel, NCCL's included
  std::size_t memcpys = 0;
  std::size_t memsets = 0;
  sim::TimeNs total_kernel_ns = 0;       // sum of the durations of every kernel
  std::size_t unattributed_gpu_ops = 0;  // non-NCCL GPU ops in no labelled range
  std::size_t cpu_timed_passes = 0;      // samples with gpu_ops = 0 (traces without GPU work)
  // Samples with gpu_ops = 0 in traces with GPU work: labelled ranges that launched nothing,
  // passes of no time (kineto_attribution.cpp). Not kept in HDF5 profiles.
  std::size_t empty_passes = 0;
};

// Summary statistics of a set of durations: quantiles interpolate linearly between the
// sorted samples (numpy's default), in ms.
struct DurationStats {
  std::size_t count = 0;
  double total_ms = 0;
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
};
DurationStats duration_stats(std::vector<sim::TimeNs> samples_ns);

// Per (stage, pass): the statistics of the kernel time of its samples, and of their GPU span.
struct PassStats {
  std::int32_t stage = kNoNumber;  // kNoNumber when the labels carry none
  sim::OpKind pass = sim::OpKind::F;
  DurationStats kernel;
  DurationStats span;
};
// Sorted by stage (none first), then pass in the order F, B, W, BW.
std::vector<PassStats> pass_stats(const Profile& profile);

// Per collective that occurs: the statistics of the kernel durations, and the bytes.
struct CommStats {
  Collective collective = Collective::Unknown;
  DurationStats duration;
  std::int64_t in_bytes = 0;  // sum over the kernels that record a size
  std::size_t sized = 0;      // how many of them record one
};
// In the order of the Collective enumeration.
std::vector<CommStats> comm_stats(const Profile& profile);

// Per stage: the time the GPU did nothing around and inside its labelled passes.
// `gap`: between consecutive passes of the stage (same trace and process, in GPU-start order),
// from one's last GPU op to the next one's first, counted only where the device was not waiting
// for an input: it is >= 0, no NCCL kernel of the trace ran in it, and the next pass's input
// (the pass that produces it, DESIGN.md §3, when the same trace holds it: the last instance to
// end before the next pass started) had ended by the gap's start. That is the launch and host
// time between passes (sim::OpOverheads). `inside`: span - kernel time of each
// pass, the GPU idle inside a pass.
struct StageOverheads {
  std::int32_t stage = kNoNumber;
  DurationStats gap;
  DurationStats inside;
};
// Sorted by stage (none first).
std::vector<StageOverheads> stage_overheads(const Profile& profile);
// The median of every stage's gaps pooled, in ns; -1 when the profile has none.
sim::TimeNs median_gap_ns(const Profile& profile);

}  // namespace bubblesim::traces
