// import --out and simulate/compare --profile: a synthetic PP-labelled trace with known kernel
// times through the HDF5 profile into the simulator, and Monte Carlo over its samples.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

#include "analysis/profile_file.h"
#include "sim/cli/cli.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::cli {
namespace {

using testing::Outcome;
using testing::parse_json;
using testing::run_cli;

std::string temp(const std::string& name) {
  // The pid keeps test runs in other checkouts on this machine from sharing the files.
  return bubblesim::testing::temp_path("profile_cli_" + name);
}

// A Kineto trace of `stages` stages (process 100 + s launches the kernels of GPU s) and
// `microbatches` microbatches: for each (stage, pass letter, microbatch) one labelled range
// "PP:<s><letter><mb>" and one kernel of kernel_us(stage, letter, mb) microseconds launched in
// it; and one send/recv NCCL kernel per entry of `sendrecv_us`.
template <typename KernelUs>
std::string pp_trace(int stages, int microbatches, const std::string& letters, KernelUs kernel_us,
                     const std::vector<int>& sendrecv_us = {}) {
  std::string events;
  int correlation = 0;
  const auto add = [&](const std::string& event) {
    events += (events.empty() ? "" : ",\n") + event;
  };
  for (int s = 0; s < stages; ++s) {
    long ts = 1000;
    for (int mb = 0; mb < microbatches; ++mb) {
      for (const char letter : letters) {
        const int us = kernel_us(s, letter, mb);
        ++correlation;
        add(fmt::format(
            R"j({{"ph": "X", "cat": "user_annotation", "name": "PP:{}{}{}", "pid": {}, "tid": 1, "ts": {}, "dur": {}}})j",
            s, letter, mb, 100 + s, ts, us + 100));
        add(fmt::format(
            R"j({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}})j",
            100 + s, ts + 10, correlation));
        add(fmt::format(
            R"j({{"ph": "X", "cat": "kernel", "name": "gemm", "pid": {}, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": {}, "correlation": {}}}}})j",
            s, ts + 20, us, s, correlation));
        ts += us + 200;
      }
    }
  }
  long ts = 1'000'000;
  for (const int us : sendrecv_us) {
    add(fmt::format(
        R"j({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": {}, "dur": {}, "args": {{"device": 0}}}})j",
        ts, us));
    ts += 10'000;
  }
  return "{\"traceEvents\": [\n" + events + "\n]}\n";
}

// Writes `trace` and imports it into a profile; returns the profile's path.
std::string import(const std::string& name, const std::string& trace) {
  const std::string json = temp(name + ".json"), h5 = temp(name + ".h5");
  std::ofstream(json) << trace;
  std::filesystem::remove(h5);
  const Outcome o = run_cli({"import", json, "--out", h5});
  EXPECT_EQ(o.status, 0) << o.err;
  return h5;
}

// F 1.9/2.0/2.1 ms (median 2.0), I (B) 1.5, W 1.0 ms, with the same spread; send/recv kernels
// of 0.1, 0.2 and 0.3 ms (median 0.2).
int varied_us(int /*stage*/, char letter, int mb) {
  const int base = letter == 'F' ? 2000 : letter == 'I' ? 1500 : 1000;
  return base + (mb % 3 - 1) * 100;
}

TEST(ProfileCli, ImportOutThenSimulateProfileGivesTheMediansAndTheClosedForm) {
  const std::string h5 = import("varied", pp_trace(4, 3, "FIW", varied_us, {100, 200, 300}));
  const traces::Profile profile = analysis::read_profile(h5);
  EXPECT_EQ(profile.passes.size(), 4u * 3 * 3);
  EXPECT_EQ(profile.comms.size(), 3u);

  // p = the profile's 4 stages; with T_comm = 0 (--comm given overrides the profile's), 1F1B
  // takes (m + p - 1)(T_F + T_B + T_W).
  const Outcome json = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5,
                                "--op-overhead", "0", "--comm", "0", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const rapidjson::Document doc = parse_json(json.out);
  EXPECT_EQ(doc["pp"].GetInt(), 4);
  EXPECT_DOUBLE_EQ(doc["iteration_time_ms"].GetDouble(), (8 + 4 - 1) * 4.5);
  EXPECT_STREQ(doc["profile"]["statistic"].GetString(), "median_kernel_time");

  const Outcome table = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("p=4 m=8 | F 2 B 1.5 W 1 comm 0.2 ms"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("median kernel time of its samples (at least 3 per stage and pass)"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("comm = median of its 3 send/recv kernels"), std::string::npos);

  // With the profile's send/recv median as T_comm: the same as giving the medians by hand, for
  // every schedule compare runs.
  const Outcome by_profile =
      run_cli({"compare", "-m", "8", "--profile", h5, "--op-overhead", "0", "--json"});
  const Outcome by_hand = run_cli({"compare", "-p", "4", "-m", "8", "--f", "2", "--b", "1.5", "--w",
                                   "1", "--comm", "0.2", "--json"});
  ASSERT_EQ(by_profile.status, 0) << by_profile.err;
  const rapidjson::Document a = parse_json(by_profile.out), b = parse_json(by_hand.out);
  ASSERT_EQ(a.Size(), b.Size());
  for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
    EXPECT_EQ(a[i]["iteration_time_ms"].GetDouble(), b[i]["iteration_time_ms"].GetDouble())
        << a[i]["schedule"].GetString();
  }

  // Explicit --f and --comm override the profile.
  const Outcome overridden = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5,
                                      "--op-overhead", "0", "--f", "3", "--comm", "0", "--json"});
  ASSERT_EQ(overridden.status, 0) << overridden.err;
  EXPECT_DOUBLE_EQ(parse_json(overridden.out)["iteration_time_ms"].GetDouble(), 11 * 5.5);
}

// The synthetic trace launches each stage's kernels 200 us after the previous one ends (pp_trace:
// ranges 200 us apart, the kernel 20 us into each), with no NCCL kernel in between: import
// reports a gap of 0.2 ms per stage, and simulate --profile pays it before every pass. 1F1B at
// p = 4, m = 8, comm 0: (m + p - 1) (F + o + BW + o) = 11 (2 + 2.5 + 0.4) ms.
TEST(ProfileCli, MedianGapBetweenPassesIsTheOpOverhead) {
  const std::string trace = pp_trace(4, 3, "FIW", varied_us, {100, 200, 300});
  const std::string json = temp("gaps.json");
  std::ofstream(json) << trace;
  const Outcome imported = run_cli({"import", json});
  ASSERT_EQ(imported.status, 0) << imported.err;
  // Per stage: 8 gaps between its 9 passes, median 0.2 ms; no idle inside a one-kernel pass.
  for (int s = 0; s < 4; ++s) {
    EXPECT_NE(imported.out.find(fmt::format("{:>5}  {:>7} {:>14.3f}", s, 8, 0.2)),
              std::string::npos)
        << imported.out;
  }
  const std::string h5 = import("gaps", trace);
  const Outcome o =
      run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5, "--comm", "0", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NEAR(parse_json(o.out)["iteration_time_ms"].GetDouble(), 11 * (2 + 2.5 + 0.4), 1e-9);
  EXPECT_DOUBLE_EQ(parse_json(o.out)["op_overhead_f_ms"].GetDouble(), 0.2);
  const Outcome table = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5});
  EXPECT_NE(table.out.find("op overhead = 0.200 ms, the median GPU idle gap"), std::string::npos)
      << table.out;
  // An explicit --op-overhead wins.
  const Outcome given = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5, "--comm",
                                 "0", "--op-overhead", "0.5", "--json"});
  EXPECT_NEAR(parse_json(given.out)["iteration_time_ms"].GetDouble(), 11 * (2 + 2.5 + 1.0), 1e-9);
}

// A simulated run has no overhead: its exported trace's gaps are all waits for an input (the
// trace has no NCCL kernels to show them, but each input's producer ends after the gap starts).
// None counts as overhead, so simulate --profile adds none.
TEST(ProfileCli, WaitingForAnInputIsNoOverhead) {
  const std::string json = temp("waits.json");
  ASSERT_EQ(run_cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--comm", "0.6",
                     "--trace-json", json})
                .status,
            0);
  const Outcome imported = run_cli({"import", json});
  ASSERT_EQ(imported.status, 0) << imported.err;
  // 1F1B waits on every stage but the first; passes run back to back otherwise (gap 0).
  for (int s = 0; s < 4; ++s) {
    EXPECT_NE(imported.out.find(fmt::format("{:>5}  ", s)), std::string::npos);
  }
  const std::string h5 = temp("waits.h5");
  std::filesystem::remove(h5);
  ASSERT_EQ(run_cli({"import", json, "--out", h5}).status, 0);
  const traces::Profile profile = analysis::read_profile(h5);
  EXPECT_EQ(traces::median_gap_ns(profile), 0);
  std::size_t gaps = 0;
  for (const traces::StageOverheads& o : traces::stage_overheads(profile)) {
    gaps += o.gap.count;
    EXPECT_EQ(o.gap.median_ms, 0) << "stage " << o.stage;
  }
  EXPECT_GT(gaps, 0u);
  const Outcome o = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5, "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_FALSE(parse_json(o.out).HasMember("op_overhead_f_ms")) << o.out;
}

TEST(ProfileCli, FusedBackwardIsSplitOneToOneWithANote) {
  // PyTorch's "B" is the fused backward: 3 ms, so B = W = 1.5 ms. No send/recv: --comm.
  const std::string h5 = import("fused", pp_trace(2, 2, "FB", [](int, char letter, int) {
                                  return letter == 'F' ? 2000 : 3000;
                                }));
  const Outcome o =
      run_cli({"simulate", "-s", "zb-h1", "-m", "4", "--profile", h5, "--comm", "0.5"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("p=2 m=4 | F 2 B 1.5 W 1.5 comm 0.5 ms"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("note: stages 0,1 ran a fused backward (BW) only; each BW sample was split "
                       "B : W = 1 : 1"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("comm = the comm setting (given)"), std::string::npos) << o.out;
}

TEST(ProfileCli, MissingStagesOrPassesAreNamed) {
  const std::string h5 = import("two", pp_trace(2, 2, "FIW", varied_us));
  // No W anywhere.
  const std::string partial = import("partial", pp_trace(2, 2, "FI", varied_us));
  Outcome o = run_cli({"simulate", "-s", "1f1b", "--profile", partial});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "bubblesim simulate: error: option --profile: " + partial +
                       ": the profile has no samples of stage 0 W (or fused BW), stage 1 W (or "
                       "fused BW)\n");
  o = run_cli({"simulate", "-s", "1f1b", "-p", "3", "--profile", h5});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "bubblesim simulate: error: option --profile: " + h5 +
                       ": the profile has no samples of stage 2 F, stage 2 B and W (or fused "
                       "BW)\n");
  o = run_cli({"compare", "-p", "1", "--profile", h5});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("the profile has 2 stages, more than the 1 pipeline devices"),
            std::string::npos)
      << o.err;

  const std::string missing = temp("missing.h5");
  std::filesystem::remove(missing);
  o = run_cli({"simulate", "-s", "1f1b", "--profile", missing});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "bubblesim simulate: error: " + missing + ": no such file\n");
  o = run_cli({"simulate", "-s", "1f1b", "--samples", "5"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("option --samples"), std::string::npos);
}

TEST(ProfileCli, ImportOutFailureNamesTheFileAndWritesNothing) {
  const std::string json = temp("ok.json");
  std::ofstream(json) << pp_trace(1, 1, "FIW", varied_us);
  const std::string out = temp("no_such_dir/p.h5");
  const Outcome o = run_cli({"import", json, "--out", out});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err.rfind("bubblesim import: error: " + out + ": ", 0), 0u) << o.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ProfileCli, MonteCarloWithEqualSamplesHasNoSpread) {
  const std::string h5 = import(
      "equal", pp_trace(4, 5, "FIW", [](int, char l, int) { return l == 'F' ? 2000 : 1000; }));
  const Outcome o = run_cli({"simulate", "-s", "zb-h1", "-m", "8", "--profile", h5, "--comm", "0.1",
                             "--samples", "20", "--seed", "7", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  const double deterministic = doc["iteration_time_ms"].GetDouble();
  const auto& mc = doc["monte_carlo"];
  EXPECT_EQ(mc["samples"].GetInt(), 20);
  EXPECT_EQ(mc["seed"].GetUint64(), 7u);
  for (const char* q : {"p50", "p90", "p99"}) {
    EXPECT_EQ(mc["iteration_time_ms"][q].GetDouble(), deterministic) << q;
    EXPECT_EQ(mc["bubble_rate"][q].GetDouble(), doc["bubble_rate"].GetDouble()) << q;
  }
  EXPECT_DOUBLE_EQ(mc["iteration_time_ms"]["mean"].GetDouble(), deterministic);
}

TEST(ProfileCli, MonteCarloIsReproducibleBySeed) {
  const std::string h5 = import("mc", pp_trace(4, 6, "FIW", varied_us, {200}));
  const auto json = [&](const std::string& seed) {
    const Outcome o = run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5,
                               "--op-overhead", "0", "--samples", "50", "--seed", seed, "--json"});
    EXPECT_EQ(o.status, 0) << o.err;
    return o.out;
  };
  const std::string one = json("42");
  EXPECT_EQ(json("42"), one);
  EXPECT_NE(json("43"), one);
  const rapidjson::Document doc = parse_json(one);
  const auto& t = doc["monte_carlo"]["iteration_time_ms"];
  // Durations vary by +-0.1 ms around the medians: the iterations spread, within bounds.
  EXPECT_LE(t["p50"].GetDouble(), t["p90"].GetDouble());
  EXPECT_LE(t["p90"].GetDouble(), t["p99"].GetDouble());
  EXPECT_LT(t["p50"].GetDouble(), t["p99"].GetDouble());
  // Each op's drawn duration has its median as its mean (samples median - 0.1, median,
  // median + 0.1 ms, equally often), and the iteration time is a maximum over paths, a convex
  // function of the durations: its mean is at least the deterministic 52.7 ms (Jensen).
  EXPECT_GE(t["mean"].GetDouble(), 52.7 - 1e-9);
  EXPECT_GT(t["p99"].GetDouble(), 52.7);

  // Times given explicitly are not drawn: with all three given, no spread.
  const Outcome fixed =
      run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5, "--op-overhead", "0", "--f",
               "2", "--b", "1.5", "--w", "1", "--samples", "10", "--json"});
  ASSERT_EQ(fixed.status, 0) << fixed.err;
  const rapidjson::Document f = parse_json(fixed.out);
  EXPECT_DOUBLE_EQ(f["monte_carlo"]["iteration_time_ms"]["p50"].GetDouble(), 52.7);
  EXPECT_DOUBLE_EQ(f["monte_carlo"]["iteration_time_ms"]["p99"].GetDouble(), 52.7);

  const Outcome table =
      run_cli({"simulate", "-s", "1f1b", "-m", "8", "--profile", h5, "--samples", "10"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("Monte Carlo: 10 runs, seed 1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("iteration time ms"), std::string::npos);
}

}  // namespace
}  // namespace bubblesim::cli
