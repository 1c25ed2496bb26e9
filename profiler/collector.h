// The thread-safe store of one profiled process: NVTX range tracking, the launch-time join of
// launches to labels, NCCL call accumulation, and the decoded activity records. The injection
// library (injection.cpp) feeds it from NVTX hooks, CUPTI callbacks and buffer completions; the
// tests feed it fake sequences. It never calls CUDA.
//
// Labels are tracked per *process*, not per thread: PyTorch launches backward kernels from its
// autograd threads, so a range pushed on the main thread must label launches from any thread.
// The current label at a launch is the open labelled range (a range whose name the labeller
// accepts, opened by push/pop or start/end on any thread) that opened last. This is the
// attribution rule of the Kineto importer (traces/kineto_trace.h) for ranges and launches of
// one process, so the written file imports to the same attribution.
//
// NCCL: NVTX ranges of the domain "NCCL" are NCCL API calls (ncclSend, ncclAllReduce,
// ncclGroupStart, ncclGroupEnd...). Per thread, the calls with payloads are accumulated until
// the group closes (the pop of an op range outside a group, or of the ncclGroupEnd that closes
// the outermost group). A launch on a thread that is inside an NCCL range refers to the calls
// accumulated so far: NCCL launches its kernels inside ncclSend/ncclAllReduce when ungrouped
// and inside ncclGroupEnd when grouped.
//
// Steps: a range (any domain, labelled or not) whose name starts with the step prefix ends a
// step when it closes; every `flush_every_steps` steps range_pop/range_end return true so the
// caller flushes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/capture.h"

namespace bubblesim::profiler {

struct CollectorOptions {
  std::string step_prefix = "step";     // empty: no steps
  std::uint64_t flush_every_steps = 0;  // 0: never
};

// A decoded activity buffer (cupti_decode.h), merged into the collector at once.
struct DecodedRecords {
  std::vector<KernelRecord> kernels;  // KernelRecord::name indexes `names`
  std::vector<std::string> names;
  std::vector<MemRecord> mems;
  Counters counters;  // zero_timestamp_records, incomplete_buffers, other_records
};

// The launch kind of a CUDA runtime or driver API function, by its name as
// cuptiGetCallbackName gives it ("cudaLaunchKernel_v7000", "cuLaunchKernelEx",
// "cudaMemcpyAsync_v3020", "cuGraphLaunch"...); nothing for other functions (which get no
// callback).
std::optional<LaunchApi> launch_api_of(std::string_view api_name);

class Collector {
 public:
  Collector(std::unique_ptr<traces::RangeLabeller> labeller, CollectorOptions options);

  // NVTX push/pop ranges of a thread (default domain or any domain but "NCCL"). The return of
  // range_pop: whether a flush is due (steps).
  void range_push(std::uint32_t thread, std::string_view name, std::int64_t ts_ns);
  bool range_pop(std::uint32_t thread, std::int64_t ts_ns);
  // NVTX start/end ranges (process ranges): range_start returns the handle range_end takes
  // (never 0).
  std::uint64_t range_start(std::uint32_t thread, std::string_view name, std::int64_t ts_ns);
  bool range_end(std::uint64_t handle, std::int64_t ts_ns);

  // NVTX ranges of the "NCCL" domain: `call` is the decoded payload, absent for ranges without
  // one (ncclGroupStart, ncclGroupEnd, ncclCommInitRank...).
  void nccl_push(std::uint32_t thread, std::string_view function, std::optional<NcclCall> call);
  void nccl_pop(std::uint32_t thread);

  // A launch callback (CUPTI_API_ENTER). One with the correlation id of the thread's last
  // launch is the same launch seen again (a runtime call's driver call) and is dropped.
  void launch(std::uint32_t thread, std::uint32_t correlation, LaunchApi api, std::int64_t ts_ns);

  // A completed activity buffer.
  void add_records(DecodedRecords records);
  void add_counters(const Counters& counters);  // dropped records, pool exhaustion, errors

  // A copy of everything so far (the header left default); ranges still open end at `now_ns`
  // and are marked open.
  Capture snapshot(std::int64_t now_ns) const;

 private:
  struct OpenRange {
    std::uint64_t id;  // RangeRecord id; kNoRange: not labelled
    std::int64_t start_ns;
    bool step;
  };
  enum class NcclRange : std::uint8_t { Call, GroupStart, GroupEnd };
  struct ThreadState {
    std::vector<OpenRange> stack;       // push/pop ranges
    std::vector<NcclRange> nccl_stack;  // open NCCL ranges
    int nccl_group_depth = 0;
    std::vector<NcclCall> pending;              // NCCL calls of the open group
    std::int32_t pending_group = kNoNcclGroup;  // their NcclGroup, once a launch referred to it
    std::optional<std::uint32_t> last_launch;   // correlation id of the thread's last launch
  };

  OpenRange open(std::uint32_t thread, std::string_view name, std::int64_t ts_ns);
  bool close(const OpenRange& range, std::int64_t ts_ns);
  std::uint64_t current_range() const;

  std::unique_ptr<traces::RangeLabeller> labeller_;
  CollectorOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, ThreadState> threads_;
  std::map<std::uint64_t, OpenRange> process_ranges_;  // start/end ranges by handle
  std::uint64_t next_handle_ = 1;
  std::vector<std::uint64_t> open_labelled_;  // ids of open labelled ranges, in open order
  std::uint64_t steps_ = 0;
  Capture capture_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
};

}  // namespace bubblesim::profiler
