// What the profiler collects in one process: plain records decoded from CUPTI activity
// buffers (kernels, memcpys, memsets), the launches seen by the CUPTI launch callbacks, the
// labelled NVTX ranges and the NCCL calls. Nothing here depends on CUDA: the CUPTI decoder
// (cupti_decode.h) and the injection library fill these structs, the tests build them by hand,
// and chrome_writer.h writes them.
//
// Times are nanoseconds of CUPTI's clock (cuptiGetTimestamp, CLOCK_REALTIME on Linux), the
// clock of the activity records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/labels.h"
#include "traces/nccl.h"

namespace bubblesim::profiler {

// A kernel (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
struct KernelRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;  // equals the launch callback's correlation id
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
  std::uint32_t name = 0;  // index into Capture::names (the mangled name as CUPTI gives it)
  bool graph = false;      // launched by a CUDA graph (graphId != 0)

  friend bool operator==(const KernelRecord&, const KernelRecord&) = default;
};

enum class MemKind : std::uint8_t { Memcpy, Memset };

// A memcpy (kinds MEMCPY and MEMCPY2, peer to peer) or memset.
struct MemRecord {
  MemKind kind = MemKind::Memcpy;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;

  friend bool operator==(const MemRecord&, const MemRecord&) = default;
};

// Which API a launch callback saw.
enum class LaunchApi : std::uint8_t { Kernel, Memcpy, Memset, Graph };

inline constexpr std::uint64_t kNoRange = 0;
inline constexpr std::int32_t kNoNcclGroup = -1;

// One launch callback (CUPTI_API_ENTER of a kernel launch, memcpy, memset or graph launch, from
// the runtime or driver API): the join key of kernels and labels.
struct LaunchRecord {
  std::uint32_t correlation = 0;
  std::int64_t ts_ns = 0;
  std::uint32_t thread = 0;                // the launching thread (gettid)
  std::uint64_t range = kNoRange;          // RangeRecord::id of the current labelled range
  std::int32_t nccl_group = kNoNcclGroup;  // index into Capture::nccl_groups
  LaunchApi api = LaunchApi::Kernel;

  friend bool operator==(const LaunchRecord&, const LaunchRecord&) = default;
};

// One NVTX range whose name the labeller accepts (a pipeline pass).
struct RangeRecord {
  std::uint64_t id = kNoRange;  // 1, 2, ... in the order the ranges opened
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;   // for a range still open when the capture was taken: that time
  std::uint32_t thread = 0;  // the thread that opened it
  traces::RangeLabel label;
  bool open = false;  // still open when the capture was taken

  friend bool operator==(const RangeRecord&, const RangeRecord&) = default;
};

// One NCCL API call, from NCCL's own NVTX range (domain "NCCL") and its payload.
struct NcclCall {
  traces::Collective collective = traces::Collective::Unknown;
  std::string function;  // the range name: "ncclSend", "ncclAllReduce", ...
  std::uint64_t comm_hash = 0;
  std::int64_t bytes = -1;  // -1: no payload
  std::int32_t peer = -1;   // Send/Recv only; -1 otherwise

  friend bool operator==(const NcclCall&, const NcclCall&) = default;
};

// The NCCL calls enqueued by the launches that refer to it: a single call outside a group, all
// calls of a ncclGroupStart/End group (a grouped send/recv is one kernel).
struct NcclGroup {
  std::vector<NcclCall> calls;

  friend bool operator==(const NcclGroup&, const NcclGroup&) = default;
};

// Everything that was lost or looked wrong. Reported in the file header.
struct Counters {
  std::uint64_t dropped_records = 0;         // cuptiActivityGetNumDroppedRecords, summed
  std::uint64_t zero_timestamp_records = 0;  // kernels/memops with start == end == 0 (skipped)
  std::uint64_t incomplete_buffers = 0;      // buffers whose walk ended at an invalid record
  std::uint64_t buffers_completed = 0;
  std::uint64_t pool_exhausted = 0;      // buffer requests the pool could not serve
  std::uint64_t other_records = 0;       // records of kinds the decoder ignores
  std::uint64_t overlapping_ranges = 0;  // labelled ranges opened while another was open
  std::uint64_t unbalanced_pops = 0;     // NVTX pops/ends without a matching push/start
  std::uint64_t cupti_errors = 0;

  friend bool operator==(const Counters&, const Counters&) = default;
};

// A clock reading at one moment: CUPTI's clock, CLOCK_REALTIME and CLOCK_MONOTONIC.
struct ClockTriple {
  std::int64_t cupti_ns = 0;
  std::int64_t realtime_ns = 0;
  std::int64_t monotonic_ns = 0;

  friend bool operator==(const ClockTriple&, const ClockTriple&) = default;
};

struct DeviceName {
  std::uint32_t id = 0;
  std::string name;

  friend bool operator==(const DeviceName&, const DeviceName&) = default;
};

// The file header: versions as numbers the libraries report (0: unknown), rank and clocks.
struct CaptureHeader {
  std::int32_t cuda_runtime_version = 0;  // cudaRuntimeGetVersion, e.g. 13000
  std::int32_t cuda_driver_version = 0;   // cuDriverGetVersion
  std::uint32_t cupti_api_version = 0;    // cuptiGetVersion, e.g. 130001
  std::int32_t nccl_version = 0;          // ncclGetVersion, e.g. 22809; 0: NCCL not loaded
  std::int32_t built_cuda_version = 0;    // CUDA_VERSION the library was compiled against
  std::vector<DeviceName> devices;
  std::int32_t rank = -1;  // RANK, LOCAL_RANK and WORLD_SIZE; -1 where unset
  std::int32_t local_rank = -1;
  std::int32_t world_size = -1;
  std::int64_t pid = 0;
  std::string hostname;
  std::string status;  // "ok", or why collection stopped ("disabled: ...")
  ClockTriple clock_start;
  ClockTriple clock_end;

  friend bool operator==(const CaptureHeader&, const CaptureHeader&) = default;
};

struct Capture {
  CaptureHeader header;
  std::vector<std::string> names;  // kernel names, indexed by KernelRecord::name
  std::vector<KernelRecord> kernels;
  std::vector<MemRecord> mems;
  std::vector<LaunchRecord> launches;
  std::vector<RangeRecord> ranges;
  std::vector<NcclGroup> nccl_groups;
  Counters counters;

  friend bool operator==(const Capture&, const Capture&) = default;
};

}  // namespace bubblesim::profiler
