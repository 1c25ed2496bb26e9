// A fixture of known launches, ranges, NCCL calls and kernels, fed to a Collector as the
// injection library would (two threads: the main thread opens the ranges, an "autograd"
// thread launches B's kernels), and the Profile it must import to.
#pragma once

#include <memory>

#include "profiler/collector.h"

namespace bubblesim::profiler::testing {

inline constexpr std::uint32_t kMain = 100;
inline constexpr std::uint32_t kAutograd = 200;

inline const char kSendRecvMangled[] =
    "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE";

inline NcclCall nccl_call(traces::Collective c, const char* function, std::int64_t bytes,
                          std::int32_t peer) {
  NcclCall call;
  call.collective = c;
  call.function = function;
  call.comm_hash = 7;
  call.bytes = bytes;
  call.peer = peer;
  return call;
}

// The callback sequence; add_records() of the kernels comes last (as buffers complete).
inline void feed_fixture(Collector& c) {
  using traces::Collective;
  c.range_push(kMain, "PP:0F0", 1000);
  c.launch(kMain, 1, LaunchApi::Kernel, 1100);
  c.range_pop(kMain, 1500);
  const std::uint64_t b = c.range_start(kMain, "PP:0I0", 2000);  // torch.cuda.nvtx.range_start
  c.launch(kAutograd, 2, LaunchApi::Kernel, 2100);
  c.launch(kAutograd, 3, LaunchApi::Memcpy, 2200);
  c.range_end(b, 2500);
  c.range_push(kMain, "PP:0W0", 3000);
  c.range_push(kMain, "aten::mm", 3050);  // not a pass: does not take the label
  c.launch(kMain, 4, LaunchApi::Kernel, 3100);
  c.range_pop(kMain, 3150);
  c.range_pop(kMain, 3500);
  // batch_isend_irecv: one kernel launched in ncclGroupEnd for the grouped send and recv.
  c.nccl_push(kMain, "ncclGroupStart", std::nullopt);
  c.nccl_pop(kMain);
  c.nccl_push(kMain, "ncclSend", nccl_call(Collective::SendRecv, "ncclSend", 4096, 1));
  c.nccl_pop(kMain);
  c.nccl_push(kMain, "ncclRecv", nccl_call(Collective::SendRecv, "ncclRecv", 4096, 1));
  c.nccl_pop(kMain);
  c.nccl_push(kMain, "ncclGroupEnd", std::nullopt);
  c.launch(kMain, 5, LaunchApi::Kernel, 4000);
  c.nccl_pop(kMain);
  // An ungrouped all-reduce launches inside its own range.
  c.nccl_push(kMain, "ncclAllReduce", nccl_call(Collective::AllReduce, "ncclAllReduce", 1024, -1));
  c.launch(kMain, 6, LaunchApi::Kernel, 5000);
  c.nccl_pop(kMain);
  c.launch(kMain, 7, LaunchApi::Kernel, 6000);  // in no labelled range

  DecodedRecords r;
  r.names = {"gemmF", "_Z5gemmBv", kSendRecvMangled, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
             "other"};
  const auto kernel = [](std::uint32_t corr, std::uint32_t name, std::int64_t s, std::int64_t e) {
    KernelRecord k;
    k.start_ns = s;
    k.end_ns = e;
    k.device = 0;
    k.stream = 7;
    k.correlation = corr;
    k.grid[0] = 4;
    k.block[0] = 128;
    k.name = name;
    return k;
  };
  r.kernels = {kernel(1, 0, 10000, 12000), kernel(2, 1, 13000, 16000), kernel(4, 1, 17000, 18000),
               kernel(5, 2, 20000, 25000), kernel(6, 3, 26000, 27000), kernel(7, 4, 28000, 29000)};
  r.mems = {MemRecord{MemKind::Memcpy, 16000, 16500, 100, 0, 7, 3}};
  r.counters.buffers_completed = 1;
  c.add_records(std::move(r));
}

}  // namespace bubblesim::profiler::testing
