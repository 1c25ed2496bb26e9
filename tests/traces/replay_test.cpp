// The executed order of a trace and its replay (the library): a synthetic two-rank pipeline
// recorded on CPU with times worked out by hand, and the real traces. The command:
// tests/sim/cli/replay_cli_test.cpp.
#include "traces/replay.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/traces/replay_test_util.h"
#include "traces/kineto_trace.h"
#include "traces/schedule_csv.h"

namespace bubblesim::traces {
namespace {

using namespace bubblesim::traces::testing;

TEST(Replay, ExtractedOrderIsTheWrittenOneSplitAtTheOptimizerStep) {
  const auto paths = gpipe_traces("order");
  const Profile profile = import_kineto_traces(paths, PipeliningLabeller());
  EXPECT_EQ(profile.cpu_timed_passes, 16u);  // 2 ranks x 2 iterations x 4 ranges
  const std::vector<ExecutedIteration> iterations = executed_iterations(profile);
  ASSERT_EQ(iterations.size(), 2u);
  for (const ExecutedIteration& it : iterations) {
    ASSERT_EQ(it.devices.size(), 2u);
    EXPECT_EQ(it.devices[0].trace, 0);
    EXPECT_EQ(it.devices[0].process, 500);
    EXPECT_EQ(it.devices[1].trace, 1);
    const sim::Schedule s = executed_schedule(it);
    using sim::OpKind;
    const std::vector<sim::Op> rank0 = {op(OpKind::F, 0, 0), op(OpKind::F, 0, 1),
                                        op(OpKind::BW, 0, 0), op(OpKind::BW, 0, 1)};
    const std::vector<sim::Op> rank1 = {op(OpKind::F, 1, 0), op(OpKind::F, 1, 1),
                                        op(OpKind::BW, 1, 0), op(OpKind::BW, 1, 1)};
    EXPECT_EQ(s.device_ops[0], rank0);
    EXPECT_EQ(s.device_ops[1], rank1);
    EXPECT_EQ(s.stage_device, (std::vector<int>{0, 1}));
    // 9 ms from 0F0's start to 0B1's end, on the trace clock (1 s + 20 ms per iteration).
    EXPECT_EQ(it.start_ns, 1'000'000'000 + 20'000'000LL * it.iteration);
    EXPECT_EQ(it.end_ns - it.start_ns, 9'000'000);
    // A pass is timed by its own range: 0B0 runs 5 to 7 ms.
    EXPECT_EQ(it.devices[0].passes[2].end_ns - it.devices[0].passes[2].start_ns, 2'000'000);
  }
}

// Without an optimizer step (a bare forward-backward loop, the CUPTI profiler's files) a pass
// that comes again starts the next step: the same iterations as the optimizer step gives.
TEST(Replay, RepeatedPassesSplitTracesWithoutAnIterationBoundary) {
  const std::vector<ExecutedIteration> split =
      executed_iterations(import_kineto_traces(gpipe_traces("steps", 0, 3), PipeliningLabeller()));
  const std::vector<ExecutedIteration> repeated = executed_iterations(
      import_kineto_traces(gpipe_traces("nosteps", 0, 3, false), PipeliningLabeller()));
  ASSERT_EQ(split.size(), 3u);
  ASSERT_EQ(repeated.size(), 3u);
  for (std::size_t i = 0; i < split.size(); ++i) {
    EXPECT_EQ(repeated[i].iteration, static_cast<int>(i));
    EXPECT_EQ(repeated[i].start_ns, split[i].start_ns);
    EXPECT_EQ(repeated[i].end_ns, split[i].end_ns);
    EXPECT_EQ(executed_schedule(repeated[i]).device_ops, executed_schedule(split[i]).device_ops);
  }
  // Labels without microbatches never cut: one iteration of 3 steps (an incomplete schedule).
  const std::string path = temp("unnumbered.json");
  std::ofstream(path) << cpu_trace(7, {{"forward", 0, 1}, {"backward", 1, 3}}, 3, false);
  const RegexLabeller labeller("(?<pass>forward|backward)");
  EXPECT_EQ(executed_iterations(import_kineto_traces({path}, labeller)).size(), 1u);
}

TEST(Replay, PiPPyRecorderTracesReplayRankByThread) {
  const std::string path = temp("pippy.json");
  std::ofstream(path) << R"([
{"name": "F_0,0", "ph": "X", "ts": 1000000.0, "dur": 1000.0, "pid": "0", "tid": "0"},
{"name": "F_0,1", "ph": "X", "ts": 1001000.0, "dur": 1000.0, "pid": "0", "tid": "0"},
{"name": "B_0,0", "ph": "X", "ts": 1005000.0, "dur": 2000.0, "pid": "0", "tid": "0"},
{"name": "B_0,1", "ph": "X", "ts": 1007000.0, "dur": 2000.0, "pid": "0", "tid": "0"},
{"name": "F_1,0", "ph": "X", "ts": 1001000.0, "dur": 1000.0, "pid": "0", "tid": "1"},
{"name": "F_1,1", "ph": "X", "ts": 1002000.0, "dur": 1000.0, "pid": "0", "tid": "1"},
{"name": "B_1,0", "ph": "X", "ts": 1003000.0, "dur": 2000.0, "pid": "0", "tid": "1"},
{"name": "S_1,0", "ph": "X", "ts": 1005000.0, "dur": 10.0, "pid": "0", "tid": "1"},
{"name": "B_1,1", "ph": "X", "ts": 1005000.0, "dur": 2000.0, "pid": "0", "tid": "1"}
])";
  const Profile profile = import_kineto_traces(
      {path}, RegexLabeller("(?<pass>[FB])_(?<stage>\\d+),(?<microbatch>\\d+)"));
  EXPECT_EQ(profile.cpu_timed_passes, 8u);  // S_1,0 is no pass
  const std::vector<ExecutedIteration> iterations = executed_iterations(profile);
  ASSERT_EQ(iterations.size(), 1u);
  ASSERT_EQ(iterations[0].devices.size(), 2u);
  EXPECT_EQ(iterations[0].devices[1].thread, 1);
  EXPECT_EQ(iterations[0].devices[1].passes[2].op, op(sim::OpKind::BW, 1, 0));
  const ReplayResult r = replay_profile(profile);
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].measured_ns, 9'000'000);
  EXPECT_EQ(r.iterations[0].replayed_ns, 9'000'000);
}

// The same GPipe on GPUs: each range launches one kernel 0.1 ms after the range starts, the
// kernel runs at the pass's time; the CPU runs ahead, so rank 0's optimizer step starts (6.8
// ms) before its last backward's kernel (7-9 ms, range from 6.5): the pass stays in its iteration,
// which is the one of its range's start.
TEST(Replay, GpuTracesTimePassesByTheirKernels) {
  const std::vector<Range> ranks[2] = {
      {{"PP:0F0", 0, 1}, {"PP:0F1", 1, 2}, {"PP:0B0", 5, 7}, {"PP:0B1", 7, 9}},
      {{"PP:1F0", 1, 2}, {"PP:1F1", 2, 3}, {"PP:1B0", 3, 5}, {"PP:1B1", 5, 7}}};
  std::vector<std::string> paths;
  for (int rank = 0; rank < 2; ++rank) {
    std::string events;
    int correlation = 0;
    const auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
    for (int i = 0; i < 2; ++i) {
      for (const Range& r : ranks[rank]) {
        const double kernel_us = 1e6 + (r.start_ms + 20.0 * i) * 1e3;
        const double cpu_us = kernel_us - 500;  // the range, 0.5 ms ahead of its kernel
        ++correlation;
        add(fmt::format(
            R"j({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 7, "tid": 1, "ts": {:.3f}, "dur": 200}})j",
            r.name, cpu_us));
        add(fmt::format(
            R"j({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": {:.3f}, "dur": 5, "args": {{"correlation": {}}}}})j",
            cpu_us + 100, correlation));
        add(fmt::format(
            R"j({{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, "args": {{"device": 0, "correlation": {}}}}})j",
            kernel_us, (r.end_ms - r.start_ms) * 1e3, correlation));
      }
      add(fmt::format(
          R"j({{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 7, "tid": 1, "ts": {:.3f}, "dur": 100}})j",
          1e6 + (6.8 + 20.0 * i) * 1e3));
    }
    paths.push_back(temp("gpu_rank" + std::to_string(rank) + ".json"));
    std::ofstream(paths.back()) << "{\"traceEvents\": [\n" + events + "\n]}\n";
  }
  const Profile profile = import_kineto_traces(paths, PipeliningLabeller());
  EXPECT_EQ(profile.cpu_timed_passes, 0u);
  const ReplayResult r = replay_profile(profile);
  ASSERT_EQ(r.iterations.size(), 2u) << (r.skipped.empty() ? "" : r.skipped[0]);
  for (const IterationReplay& it : r.iterations) {
    EXPECT_EQ(it.measured_ns, 9'000'000);
    EXPECT_EQ(it.replayed_ns, 9'000'000);
  }
}

}  // namespace
}  // namespace bubblesim::traces
