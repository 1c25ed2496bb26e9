// `bubblesim replay` and the lowered schedule output of `import` (the command line), on the
// synthetic two-rank pipeline of tests/traces/replay_test_util.h and the real traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/sim/cli/cli_test_util.h"
#include "tests/traces/replay_test_util.h"
#include "traces/kineto_trace.h"
#include "traces/replay.h"
#include "traces/schedule_csv.h"

namespace bubblesim::traces {
namespace {

using namespace bubblesim::traces::testing;
using cli::testing::Outcome;
using cli::testing::parse_json;
using cli::testing::run_cli;

TEST(Replay, OwnDurationsReproduceTheMeasuredIterationExactly) {
  const ReplayResult r =
      replay_profile(import_kineto_traces(gpipe_traces("exact"), PipeliningLabeller()));
  ASSERT_EQ(r.iterations.size(), 2u);
  for (const IterationReplay& it : r.iterations) {
    EXPECT_EQ(it.measured_ns, 9'000'000);
    EXPECT_EQ(it.replayed_ns, 9'000'000);
    EXPECT_EQ(it.median_ns, 9'000'000);  // every sample of a (stage, kind) is the same
    EXPECT_EQ(it.error(), 0.0);
    EXPECT_TRUE(it.gaps.empty());
    ASSERT_EQ(it.devices.size(), 2u);
    EXPECT_EQ(it.devices[0].measured_span_ns, 9'000'000);
    EXPECT_EQ(it.devices[1].measured_span_ns, 6'000'000);  // 1 to 7 ms
    EXPECT_EQ(it.devices[1].replayed_span_ns, 6'000'000);
    // The idle time of the trace, waiting for input: rank 1 before 1F0 (1 ms), rank 0 before
    // 0B0 (3 ms); the simulation waits the same.
    ASSERT_TRUE(it.devices[1].has_gap);
    EXPECT_EQ(it.devices[1].largest.op, op(sim::OpKind::F, 1, 0));
    EXPECT_EQ(it.devices[1].largest.measured_gap_ns, 1'000'000);
    EXPECT_EQ(it.devices[1].largest.replayed_gap_ns, 1'000'000);
    EXPECT_EQ(it.devices[0].largest.op, op(sim::OpKind::BW, 0, 0));
    EXPECT_EQ(it.devices[0].largest.measured_gap_ns, 3'000'000);
  }
  const Outcome o = run_cli({"replay", gpipe_traces("exact_cli")[0], gpipe_traces("exact_cli")[1]});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("replay error +0.00%"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1.000 ms before 1F0 (simulation 1.000 ms)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("16 passes timed on the CPU"), std::string::npos) << o.out;
}

TEST(Replay, AnIdleGapTheSimulationDoesNotHaveIsNamed) {
  // Rank 0 idles 3 ms before 0B1: the trace takes 12 ms, the replay 9 ms (25% shorter).
  const auto paths = gpipe_traces("gap", 3, 1);
  const Outcome o = run_cli({"replay", paths[0], paths[1], "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto doc = parse_json(o.out);
  EXPECT_DOUBLE_EQ(doc["measured_iteration_ms"].GetDouble(), 12);
  EXPECT_DOUBLE_EQ(doc["replayed_iteration_ms"].GetDouble(), 9);
  EXPECT_DOUBLE_EQ(doc["median_iteration_ms"].GetDouble(), 9);
  EXPECT_DOUBLE_EQ(doc["replay_error"].GetDouble(), -0.25);
  ASSERT_EQ(doc["devices"].Size(), 2u);
  EXPECT_DOUBLE_EQ(doc["devices"][0]["measured_span_ms"].GetDouble(), 12);
  EXPECT_DOUBLE_EQ(doc["devices"][0]["replayed_span_ms"].GetDouble(), 9);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["measured_span_ms"].GetDouble(), 6);

  const Outcome table = run_cli({"replay", paths[0], paths[1]});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("the replay is 25.0% shorter than the trace"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("device 0 (trace 0 pid 500) before 0B1: the trace idles 3.000 ms, "
                           "the simulation 0.000 ms (idle time the trace has and the simulation "
                           "does not)"),
            std::string::npos)
      << table.out;
  // Rank 1's span is unchanged: only device 0 differs by more than 5%.
  EXPECT_NE(table.out.find("span differs by more than 5%: 0 (trace 0 pid 500: 12.000 ms "
                           "measured, 9.000 replayed)\n"),
            std::string::npos)
      << table.out;
}

// PiPPy's own event recorder: no "cat", every rank a thread of process "0", "F_<stage>,<mb>"
// and "B_<stage>,<mb>" (its B is the full backward), strings for pid and tid, times in us.
TEST(Replay, TransfersTakeCommAndBlockingHoldsTheStreams) {
  const auto paths = gpipe_traces("comm", 0, 1);
  // By hand, 0.5 ms per transfer. Async: 1F0 1.5-2.5, 1F1 2.5-3.5, 1B0 3.5-5.5, 1B1 5.5-7.5;
  // 0B0 waits for 1B0's gradient until 6, 0B0 6-8, 0B1 8-10.
  Outcome o = run_cli({"replay", paths[0], paths[1], "--comm", "0.5", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_DOUBLE_EQ(parse_json(o.out)["replayed_iteration_ms"].GetDouble(), 10);
  // Blocking: rank 0 sends 1-1.5 and 2.5-3 after its forwards; rank 1 receives 1-1.5 (1F0
  // 1.5-2.5) and 2.5-3 (1F1 3-4), 1B0 4-6, sends 6-6.5, 1B1 6.5-8.5, sends 8.5-9; rank 0
  // receives 6-6.5 (0B0 6.5-8.5) and 8.5-9 (0B1 9-11).
  o = run_cli({"replay", paths[0], paths[1], "--comm", "0.5", "--p2p", "blocking", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_DOUBLE_EQ(parse_json(o.out)["replayed_iteration_ms"].GetDouble(), 11);
  o = run_cli({"replay", paths[0], paths[1], "--p2p", "sync"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --p2p: expected async or blocking, got 'sync'"), std::string::npos);
  o = run_cli({"replay", paths[0], paths[1], "--comm", "-1"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --comm"), std::string::npos) << o.err;
}

TEST(Replay, ImportWritesTheExecutedOrderAsACsv) {
  const auto paths = gpipe_traces("csv");
  const std::string csv = temp("order.csv");
  std::filesystem::remove(csv);
  const Outcome o = run_cli({"import", paths[0], paths[1], "--write-schedule", csv});
  ASSERT_EQ(o.status, 0) << o.err;
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  EXPECT_NE(o.out.find("iteration 1: 2 devices, measured 9.000 ms"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("device 1 (trace 1 pid 501): 4 passes, span 6.000 ms: 1F0 1F1 1B0 1B1"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("16 passes are timed by their own ranges"), std::string::npos) << o.out;
}

TEST(Replay, IterationRegexAndIncompleteIterations) {
  // One boundary range per iteration under another name: without --iteration-regex both
  // iterations fall into one, which the passes that come again split as the boundary would.
  const auto paths = gpipe_traces("regex");
  for (const std::string& path : paths) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    for (std::size_t at; (at = s.find("Optimizer.step#SGD.step")) != std::string::npos;)
      s.replace(at, 23, "ProfilerStep#7");
    std::ofstream(path) << s;
  }
  Outcome o = run_cli({"replay", paths[0], paths[1]});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("2 iterations replayed"), std::string::npos) << o.out;
  const Outcome split =
      run_cli({"replay", paths[0], paths[1], "--iteration-regex", "ProfilerStep#\\d+"});
  EXPECT_EQ(split.status, 0) << split.err;
  EXPECT_EQ(split.out, o.out);
  o = run_cli({"replay", paths[0], paths[0]});  // the same rank twice: a pass on two devices
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("no iteration of the traces is a complete schedule to replay: iteration 0"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("stage 0 runs on two devices (trace 0 process 500 and trace 1 process 500)"),
            std::string::npos)
      << o.err;
  o = run_cli({"replay", paths[1], "--iteration-regex", "ProfilerStep#\\d+"});  // rank 1 alone
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("no pass of stage 0 (stages 0 to 1 appear)"), std::string::npos) << o.err;
  o = run_cli({"replay", paths[0], "--iteration-regex", "(("});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --iteration-regex"), std::string::npos) << o.err;
}

// The real traces (PyTorch DDP runs, one rank each) have no pipeline labels but "## forward ##"
// and "## backward ##" ranges: one stage, one microbatch per iteration.
TEST(Replay, RealTracesReplayAndPrintAFigure) {
  if (!std::filesystem::exists(kTraces)) GTEST_SKIP() << "no real traces at " << kTraces;
  for (const char* file :
       {"kineto_ddp_nccl_2ranks_rank0.json.gz", "kineto_sampled_128ranks_rank0.json.gz"}) {
    const Outcome o = run_cli(
        {"replay", kTraces + file, "--label-regex", "## (?<pass>forward|backward) ##", "--json"});
    ASSERT_EQ(o.status, 0) << file << ": " << o.err;
    const auto doc = parse_json(o.out);
    const double measured = doc["measured_iteration_ms"].GetDouble();
    const double replayed = doc["replayed_iteration_ms"].GetDouble();
    EXPECT_GT(measured, 0) << file;
    // One device, F then BW: the replay is their sum, at most the measured span.
    EXPECT_LE(replayed, measured) << file;
    EXPECT_GT(replayed, 0.9 * measured) << file;
    EXPECT_GE(doc["iterations"].Size(), 2u) << file;  // split at the optimizer step
  }
}

TEST(ScheduleCsvCli, LoweredOutputAndTheOlderNaming) {
  const std::string lowered = temp("lowered.csv"), compute = temp("compute.csv");
  Outcome o = run_cli({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--write-schedule", lowered,
                       "--write-schedule-format", "comms", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const double generated = parse_json(o.out)["iteration_time_ms"].GetDouble();
  std::ifstream in(lowered);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
            "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
  o = run_cli({"simulate", "--schedule-file", lowered, "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(parse_json(o.out)["iteration_time_ms"].GetDouble(), generated);

  std::ofstream(compute) << "0F0,0B0,0W0\n";  // B the input gradient, as PyTorch once wrote
  o = run_cli({"simulate", "--schedule-file", compute});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("give --csv-naming legacy"), std::string::npos) << o.err;
  o = run_cli({"simulate", "--schedule-file", compute, "--csv-naming", "legacy"});
  EXPECT_EQ(o.status, 0) << o.err;
  o = run_cli({"simulate", "--schedule-file", compute, "--csv-naming", "old"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --csv-naming: expected current or legacy"), std::string::npos);
  // A memory action between two passes holds the stream: rank 1's backwards, and everything
  // after them, start 0.25 ms later (F, B, W 1 ms, transfers 0.5 ms: 10 ms without it).
  const std::string memory = temp("memory.csv");
  std::ofstream(memory) << "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                           "1RECV_F0,1F0,1RECV_F1,1F1,1UNSHARD,1B0,1SEND_B0,1B1,1SEND_B1\n";
  for (const auto& [unshard, expected] : {std::pair{"0", 10.0}, std::pair{"0.25", 10.25}}) {
    o = run_cli({"simulate", "--schedule-file", memory, "--f", "1", "--b", "1", "--w", "1",
                 "--comm", "0.5", "--unshard-ms", unshard, "--json"});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_DOUBLE_EQ(parse_json(o.out)["iteration_time_ms"].GetDouble(), expected) << unshard;
  }
  o = run_cli({"simulate", "--schedule-file", memory, "--out", temp("memory.h5")});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("a lowered file"), std::string::npos) << o.err;
  o = run_cli({"simulate", "-s", "1f1b", "--unshard-ms", "1"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --unshard-ms: applies to a --schedule-file"), std::string::npos);
  o = run_cli({"simulate", "-s", "1f1b", "--write-schedule-format", "comms"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("applies with --write-schedule"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace bubblesim::traces
