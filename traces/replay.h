// What a profiled run really executed, and its replay (docs/replay.md).
//
// Executed order: per iteration (PassSample::iteration), each device, a process of a trace (one
// rank; a thread of it for PiPPy's recorder, PassSample::thread), ran its labelled passes in the
// order of their starts. A pass is timed from its first GPU op's start to its last GPU op's end (a
// range's own start and end in a trace recorded on CPU). A label without a stage takes its device's
// index (one stage per device); a label without a microbatch takes the count of earlier passes of
// the same device, stage and kind in the iteration (0, 1, ...). An input gradient (B) whose stage
// and microbatch have no weight gradient (W) in the iteration is a full backward (BW), as PiPPy's
// recorder's "B" is.
//
// Replay: that order simulated (sim::Engine, transfers of `comm_ns`, default 0, async unless
// asked) with every
// pass taking its own measured time, and again with every pass taking the median time of its
// (stage, kind) over all iterations (what a what-if run with the profile uses). The measured
// iteration is the first pass start to the last pass end over all devices (trace clocks, which
// Kineto takes from the host: ranks on different hosts are only as aligned as their clocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/error.h"
#include "sim/op.h"
#include "sim/schedule.h"
#include "traces/profile.h"

namespace bubblesim::traces {

struct ExecutedPass {
  sim::Op op;                // stage and microbatch resolved as above; chunk from the placement
  sim::TimeNs start_ns = 0;  // trace clock
  sim::TimeNs end_ns = 0;
};

struct ExecutedDevice {
  std::int32_t trace = 0;
  std::int64_t process = 0;
  std::int64_t thread = kNoThread;   // PiPPy's recorder: each rank is a thread
  std::vector<ExecutedPass> passes;  // in order of start (ties: trace order)
};

struct ExecutedIteration {
  std::int32_t iteration = 0;
  std::vector<ExecutedDevice> devices;  // by trace, then process
  sim::TimeNs start_ns = 0;             // first pass start over all devices
  sim::TimeNs end_ns = 0;               // last pass end
};

// The profile's passes grouped by iteration (in order) and device.
std::vector<ExecutedIteration> executed_iterations(const Profile& profile);

// The executed order as a schedule (device d = devices[d]; stage on the device that runs it;
// microbatches 0 to the largest seen). Throws Error naming the trace iteration ("iteration 2:
// ...") when the order is not a complete, deadlock-free schedule (a pass missing, as in an
// iteration the profiler cut, or a stage on two devices).
sim::Schedule executed_schedule(const ExecutedIteration& iteration);

// One op's idle time before it, on its device: in the trace (from the later of the iteration's
// start and the end of the device's earlier passes; negative when the trace overlaps the op with
// the pass before) and in the replay (from 0 or the end of the op before).
struct GapComparison {
  int device = 0;
  std::size_t index = 0;  // position in the device's order
  sim::Op op;
  sim::TimeNs measured_gap_ns = 0;
  sim::TimeNs replayed_gap_ns = 0;
};

struct DeviceReplay {
  std::int32_t trace = 0;
  std::int64_t process = 0;
  std::int64_t thread = kNoThread;
  sim::TimeNs measured_span_ns = 0;  // first pass start to last pass end on the device
  sim::TimeNs replayed_span_ns = 0;
  bool has_gap = false;   // whether the trace has any idle time on the device
  GapComparison largest;  // the op after the trace's largest idle time, when has_gap
};

struct IterationReplay {
  std::int32_t iteration = 0;
  sim::Schedule schedule;
  sim::TimeNs measured_ns = 0;
  sim::TimeNs replayed_ns = 0;  // own durations
  sim::TimeNs median_ns = 0;    // per-(stage, kind) medians
  std::vector<DeviceReplay> devices;
  // Every op whose idle time before it differs between trace and replay, largest absolute
  // difference first.
  std::vector<GapComparison> gaps;

  // (replayed - measured) / measured; 0 for an empty measurement.
  double error() const {
    return measured_ns > 0 ? static_cast<double>(replayed_ns - measured_ns) / measured_ns : 0;
  }
};

struct ReplayResult {
  std::vector<IterationReplay> iterations;  // those that form a complete schedule
  std::vector<std::string> skipped;         // one line each for the others (why)
};

// Replays every iteration of `profile`. Throws Error when no iteration forms a complete
// schedule (its message gives each iteration's reason) or the profile has no passes.
// Transfers take `comm_ns` and use the compute streams as `p2p` says (sim::P2pMode).
ReplayResult replay_profile(const Profile& profile, sim::TimeNs comm_ns = 0,
                            sim::P2pMode p2p = sim::P2pMode::Async);

}  // namespace bubblesim::traces
