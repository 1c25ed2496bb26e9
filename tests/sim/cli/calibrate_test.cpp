// bubblesim calibrate: a synthetic ground truth recovered, the zero-bubble paper's measured 1.5B
// cells fitted, --calibration applied, and bad runs files rejected whole.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "analysis/calibration.h"
#include "analysis/results_file.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::cli {
namespace {

using testing::Outcome;
using testing::parse_json;
using testing::run_cli;

class Calibrate : public bubblesim::testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = path(name);
    std::ofstream(p) << text;
    return p;
  }
  // The iteration time simulate prints for `args`.
  static double simulated_ms(std::vector<std::string> args) {
    args.insert(args.begin(), "simulate");
    args.push_back("--json");
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.status, 0) << o.err;
    return parse_json(o.out)["iteration_time_ms"].GetDouble();
  }
};

struct SyntheticRun {
  const char* schedule;
  int m;
  int v;
};
constexpr SyntheticRun kSynthetic[] = {{"1f1b", 4, 1},   {"1f1b", 12, 1},  {"zb-h1", 8, 1},
                                       {"gpipe", 6, 1},  {"1f1b-i", 8, 2}, {"zb-h2", 12, 1},
                                       {"1f1b-i", 4, 2}, {"zb-h1", 4, 1}};

// Runs simulated with a known overhead and p2p mode are fed to calibrate as measurements: it
// finds the overhead again within 1% and the mode exactly, with (nearly) no error left.
TEST_F(Calibrate, RecoversKnownOverheadsAndP2pMode) {
  for (const auto& [truth, mode] : {std::pair{"0.7", "blocking"}, std::pair{"0.35", "async"}}) {
    std::string runs = "fixed: {p: 4, f: 2, b: 1.5, w: 1, comm: 0.3}\nruns:\n";
    for (const SyntheticRun& r : kSynthetic) {
      std::vector<std::string> args = {"-s",
                                       r.schedule,
                                       "-p",
                                       "4",
                                       "-m",
                                       std::to_string(r.m),
                                       "-v",
                                       std::to_string(r.v),
                                       "--f",
                                       "2",
                                       "--b",
                                       "1.5",
                                       "--w",
                                       "1",
                                       "--comm",
                                       "0.3",
                                       "--op-overhead",
                                       truth,
                                       "--p2p",
                                       mode};
      runs += fmt::format("  - {{schedule: {}, m: {}, v: {}, measured_iteration_ms: {}}}\n",
                          r.schedule, r.m, r.v, simulated_ms(args));
    }
    const std::string cal = path(std::string("cal-") + mode + ".yaml");
    const Outcome o = run_cli({"calibrate", write("runs.yaml", runs), "--out", cal});
    ASSERT_EQ(o.status, 0) << o.err;
    const analysis::Calibration c = analysis::load_calibration(cal);
    const double expected = std::stod(truth);
    EXPECT_NEAR(sim::ns_to_ms(c.overheads.f_ns), expected, 0.01 * expected) << mode;
    EXPECT_EQ(c.overheads.f_ns, c.overheads.b_ns);
    EXPECT_EQ(c.overheads.f_ns, c.overheads.w_ns);
    EXPECT_EQ(c.p2p,
              std::string(mode) == "blocking" ? sim::P2pMode::Blocking : sim::P2pMode::Async);
    EXPECT_LT(c.mape, 1e-4) << o.out;
    EXPECT_EQ(c.num_runs, 8);
    EXPECT_EQ(c.efficiency, 0);  // no run was timed from FLOPs
  }
}

// The measured runs ran some real scheduler: calibrate fits to the generators' own schedules
// (simulate --no-improve), and with --improve to the improved ones simulate runs by default.
// Runs simulated each way with a known overhead are fitted exactly by the matching mode only
// (the improver changes these V schedules' orders, so the other mode leaves an error).
TEST_F(Calibrate, FitsTheGeneratorsOwnSchedulesUnlessAskedForTheImprovedOnes) {
  for (const bool improved : {false, true}) {
    std::string runs = "fixed: {p: 4, f: 2, b: 2.3, w: 1.2, comm: 0.15}\nruns:\n";
    for (const auto& [schedule, m] : {std::pair{"zb-v", 6}, std::pair{"v-half", 8},
                                      std::pair{"v-min", 6}, std::pair{"zb-2p", 8}}) {
      std::vector<std::string> args = {
          "-s",  schedule, "-p",  "4",      "-m",   std::to_string(m), "--f", "2", "--b",
          "2.3", "--w",    "1.2", "--comm", "0.15", "--op-overhead",   "0.4"};
      if (!improved) args.push_back("--no-improve");
      runs += fmt::format("  - {{schedule: {}, m: {}, measured_iteration_ms: {}}}\n", schedule, m,
                          simulated_ms(args));
    }
    const std::string file = write(improved ? "improved.yaml" : "raw.yaml", runs);
    // A run's own setting wins over the option: the improved runs marked as such fit exactly.
    if (improved) {
      const std::string marked =
          write("marked.yaml", "fixed: {p: 4, f: 2, b: 2.3, w: 1.2, comm: 0.15, improve: 'on'}\n" +
                                   runs.substr(runs.find('\n') + 1));
      ASSERT_EQ(run_cli({"calibrate", marked, "--out", path("cal.yaml"), "--no-loo"}).status, 0);
      EXPECT_LT(analysis::load_calibration(path("cal.yaml")).mape, 1e-4);
    }
    for (const bool fit_improved : {false, true}) {
      const std::string cal = path("cal.yaml");
      std::vector<std::string> args = {"calibrate", file,    "--out",   cal,
                                       "--p2p",     "async", "--no-loo"};
      if (fit_improved) args.push_back("--improve");
      const Outcome o = run_cli(args);
      ASSERT_EQ(o.status, 0) << o.err;
      const analysis::Calibration c = analysis::load_calibration(cal);
      if (fit_improved == improved) {
        EXPECT_NEAR(sim::ns_to_ms(c.overheads.f_ns), 0.4, 0.004) << o.out;
        EXPECT_LT(c.mape, 1e-4) << o.out;
      } else {
        EXPECT_GT(c.mape, 1e-3) << o.out;
      }
    }
  }
}

// Per pass kind, and the efficiency of runs timed from a model's FLOPs.
TEST_F(Calibrate, RecoversPerKindOverheadsAndEfficiency) {
  std::string runs = "runs:\n";
  const std::string model = std::string(BUBBLESIM_SOURCE_DIR) + "/models/examples/gpt-1.5b.yaml";
  for (const SyntheticRun& r : kSynthetic) {
    std::vector<std::string> args = {"-s",
                                     r.schedule,
                                     "-p",
                                     "4",
                                     "-m",
                                     std::to_string(r.m),
                                     "-v",
                                     std::to_string(r.v),
                                     "--model",
                                     model,
                                     "--efficiency",
                                     "0.4",
                                     "--comm",
                                     "0.3",
                                     "--op-overhead",
                                     "F=0.2,B=0.9,W=0.5"};
    runs += fmt::format(
        "  - {{schedule: {}, p: 4, m: {}, v: {}, model: {}, comm: 0.3, measured_iteration_ms: "
        "{}}}\n",
        r.schedule, r.m, r.v, model, simulated_ms(args));
  }
  const std::string cal = path("cal.yaml");
  const Outcome o =
      run_cli({"calibrate", write("runs.yaml", runs), "--out", cal, "--per-kind", "--no-loo"});
  ASSERT_EQ(o.status, 0) << o.err;
  const analysis::Calibration c = analysis::load_calibration(cal);
  EXPECT_NEAR(sim::ns_to_ms(c.overheads.f_ns), 0.2, 0.002) << o.out;
  EXPECT_NEAR(sim::ns_to_ms(c.overheads.b_ns), 0.9, 0.009) << o.out;
  EXPECT_NEAR(sim::ns_to_ms(c.overheads.w_ns), 0.5, 0.005) << o.out;
  EXPECT_NEAR(c.efficiency, 0.4, 0.004) << o.out;
  EXPECT_EQ(c.p2p, sim::P2pMode::Async);
}

// The zero-bubble paper's 12 measured 1.5B cells (reference §8): bubblesim is 4-10% optimistic
// without overheads; calibrated, within 2% on average, no cell beyond 4%, and runs left out of
// the fit are predicted within 3% on average.
TEST_F(Calibrate, FitsThePapersMeasuredOnePointFiveBRuns) {
  const std::string cal = path("cal.yaml");
  const Outcome o = run_cli(
      {"calibrate", std::string(BUBBLESIM_SOURCE_DIR) + "/models/examples/zb-1.5b-runs.yaml",
       "--out", cal});
  ASSERT_EQ(o.status, 0) << o.err;
  const analysis::Calibration c = analysis::load_calibration(cal);
  EXPECT_EQ(c.num_runs, 12);
  EXPECT_LE(c.mape, 0.02) << o.out;
  EXPECT_LE(c.worst, 0.04) << o.out;
  EXPECT_LE(c.loo_mape, 0.03) << o.out;
  EXPECT_NE(o.out.find("leave-one-out MAPE"), std::string::npos);
  // A launch and host overhead of the order of a millisecond per pass: plausible for PyTorch
  // on A100s (docs/calibration.md).
  EXPECT_GT(sim::ns_to_ms(c.overheads.f_ns), 0.2);
  EXPECT_LT(sim::ns_to_ms(c.overheads.f_ns), 3.0);

  // Applied with --calibration, simulate predicts the fitted time of a cell (1F1B at m = 24:
  // measured 11.8 samples per GPU per s, i.e. 24 * 6 / 8 / 11.8 s) within the fit's worst
  // error, and says which calibration it applied.
  const std::vector<std::string> cell = {
      "-s",
      "1f1b",
      "-p",
      "8",
      "-m",
      "24",
      "--f",
      "18.522",
      "--b",
      "18.086",
      "--w",
      "9.337",
      "--comm",
      "0.601",
      "--model",
      std::string(BUBBLESIM_SOURCE_DIR) + "/models/examples/gpt-1.5b.yaml",
      "--optimizer-sync",
      "allreduce"};
  std::vector<std::string> with = cell;
  with.insert(with.end(), {"--calibration", cal});
  const double measured_ms = 24.0 * 6 / 8 / 11.8 * 1e3;
  EXPECT_NEAR(simulated_ms(with), measured_ms, c.worst * measured_ms + 1e-6);
  EXPECT_LT(simulated_ms(cell), 0.97 * measured_ms);  // optimistic without it
  const Outcome json = run_cli([&] {
    std::vector<std::string> a = {"simulate"};
    a.insert(a.end(), with.begin(), with.end());
    a.push_back("--json");
    return a;
  }());
  const rapidjson::Document doc = parse_json(json.out);
  EXPECT_EQ(std::string(doc["calibration"].GetString()), cal);
  EXPECT_DOUBLE_EQ(doc["op_overhead_f_ms"].GetDouble(), sim::ns_to_ms(c.overheads.f_ns));
  // An explicit option overrides the calibration's value.
  std::vector<std::string> explicit_zero = with;
  explicit_zero.insert(explicit_zero.end(), {"--op-overhead", "0"});
  EXPECT_DOUBLE_EQ(simulated_ms(explicit_zero), simulated_ms(cell));
}

// sweep and advise apply a calibration too: a sweep row is what simulate --calibration gives,
// and advise says which calibration it applied and predicts lower throughput with it.
TEST_F(Calibrate, SweepAndAdviseApplyACalibration) {
  const std::string cal = write("cal.yaml",
                                "format: bubblesim-calibration\n"
                                "op_overhead_ms: {F: 0.25, B: 0.5, W: 0.125}\np2p: blocking\n");
  const std::string study = write("study.yaml",
                                  "fixed: {p: 4, m: 8, f: 2, b: 1.5, w: 1, comm: 0.3}\n"
                                  "axes: {schedule: [1f1b, zb-h1]}\n");
  const std::string h5 = path("sweep.h5");
  const Outcome swept =
      run_cli({"sweep", study, "--out", h5, "--calibration", cal, "--progress", "none"});
  ASSERT_EQ(swept.status, 0) << swept.err;
  const std::vector<analysis::SweepRow> rows = analysis::ResultsReader(h5).read_sweep_table();
  ASSERT_EQ(rows.size(), 2u);
  for (const analysis::SweepRow& row : rows) {
    const double expected = simulated_ms(
        {"-s", row.schedule, "-p", "4", "-m", "8", "--f", "2", "--b", "1.5", "--w", "1", "--comm",
         "0.3", "--op-overhead", "F=0.25,B=0.5,W=0.125", "--p2p", "blocking"});
    EXPECT_DOUBLE_EQ(row.iteration_time_ms, expected) << row.schedule;
    EXPECT_GT(row.iteration_time_ms,
              simulated_ms({"-s", row.schedule, "-p", "4", "-m", "8", "--f", "2", "--b", "1.5",
                            "--w", "1", "--comm", "0.3"}));
  }
  const std::string model = std::string(BUBBLESIM_SOURCE_DIR) + "/models/examples/gpt-1.5b.yaml";
  const std::vector<std::string> advise = {
      "advise", "--model",     model,        "--gpus",
      "4",      "--schedules", "1f1b,zb-h1", "--microbatch-sizes",
      "2",      "--chunks",    "1",          "--progress",
      "none",   "--top",       "1"};
  std::vector<std::string> calibrated = advise;
  calibrated.insert(calibrated.end(), {"--calibration", cal});
  const Outcome plain = run_cli(advise), with = run_cli(calibrated);
  ASSERT_EQ(with.status, 0) << with.err;
  EXPECT_NE(with.out.find("calibration " + cal + ": op overhead F=0.25,B=0.5,W=0.125 ms"),
            std::string::npos)
      << with.out;
  EXPECT_NE(plain.out, with.out);
}

// Runs over a cluster's network cannot block: the fit keeps to async transfers and says so.
TEST_F(Calibrate, RunsOverAClusterAreFittedAsync) {
  const std::string cluster =
      std::string(BUBBLESIM_SOURCE_DIR) + "/models/examples/a100-4x8-roce.yaml";
  std::string runs =
      "fixed: {p: 4, f: 2, b: 1.5, w: 1, comm-bytes: 1e7, cluster: " + cluster + "}\nruns:\n";
  for (const int m : {4, 8, 12}) {
    runs += fmt::format("  - {{schedule: 1f1b, m: {}, measured_iteration_ms: {}}}\n", m,
                        simulated_ms({"-s", "1f1b", "-p", "4", "-m", std::to_string(m), "--f", "2",
                                      "--b", "1.5", "--w", "1", "--comm-bytes", "1e7", "--cluster",
                                      cluster, "--op-overhead", "0.3"}));
  }
  const std::string file = write("runs.yaml", runs), cal = path("cal.yaml");
  const Outcome o = run_cli({"calibrate", file, "--out", cal});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("fitted with async transfers only"), std::string::npos) << o.out;
  const analysis::Calibration c = analysis::load_calibration(cal);
  EXPECT_EQ(c.p2p, sim::P2pMode::Async);
  EXPECT_NEAR(sim::ns_to_ms(c.overheads.f_ns), 0.3, 0.003);
  const Outcome blocking = run_cli({"calibrate", file, "--out", cal, "--p2p", "blocking"});
  EXPECT_EQ(blocking.status, 2);
  EXPECT_NE(blocking.err.find(file + ":3: key 'cluster': blocking transfers"), std::string::npos)
      << blocking.err;
}

// The results file keeps the overheads and the p2p mode with the run.
TEST_F(Calibrate, ResultsFileRecordsOverheadsAndP2p) {
  const std::string h5 = path("runs.h5");
  const Outcome o = run_cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--op-overhead",
                             "F=0.5,B=0.25,W=0", "--p2p", "blocking", "--out", h5});
  ASSERT_EQ(o.status, 0) << o.err;
  const analysis::RunRecord run = analysis::ResultsReader(h5).read_run("1f1b");
  const auto number = [&](const std::string& key) {
    for (const auto& [k, v] : run.extra_numbers) {
      if (k == key) return v;
    }
    return -1.0;
  };
  EXPECT_EQ(number("op_overhead_f_ms"), 0.5);
  EXPECT_EQ(number("op_overhead_b_ms"), 0.25);
  EXPECT_EQ(number("op_overhead_w_ms"), 0);
  EXPECT_NE(std::find(run.extra_texts.begin(), run.extra_texts.end(),
                      std::pair<std::string, std::string>{"p2p", "blocking"}),
            run.extra_texts.end());
}

// Overheads 0 and async transfers change nothing: the output is byte for byte the default's.
TEST(CalibrateOptions, ZeroOverheadAndAsyncLeaveOutputUnchanged) {
  for (const char* format : {"--json", "--no-improve"}) {
    const char* schedules = "1f1b,zb-h2,zb-2p,1f1b-i,zb-v,dualpipe";
    const Outcome plain = run_cli({"compare", "-s", schedules, "-m", "16", format});
    const Outcome zero = run_cli(
        {"compare", "-s", schedules, "-m", "16", format, "--op-overhead", "0", "--p2p", "async"});
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.out, zero.out);
  }
}

// Bad runs files: one line naming the file, the line and the key; exit 2; nothing written.
TEST_F(Calibrate, BadRunsFilesAreOneLineAndWriteNothing) {
  const std::string ok = "  - {schedule: 1f1b, p: 4, m: 8, measured_iteration_ms: 100}\n";
  const struct {
    const char* name;
    std::string text;
    const char* expected;  // in the message, after "FILE:"
  } cases[] = {
      {"unknown",
       "runs:\n" + ok + "  - {schedule: 1f1b, p: 4, m: 8, speed: 3, measured_iteration_ms: 90}\n",
       "3: key 'speed': unknown setting"},
      {"missing", "runs:\n" + ok + "  - {schedule: 1f1b, p: 4, m: 12}\n",
       "3: key 'measured_iteration_ms': each run needs exactly one measurement"},
      {"bad-number",
       "runs:\n" + ok + "  - {schedule: 1f1b, p: 4, m: 8, measured_iteration_ms: -1}\n",
       "3: key 'measured_iteration_ms': expected a number > 0"},
      {"cannot-simulate",
       "runs:\n" + ok + "  - {schedule: 1f1b-i, p: 4, m: 6, v: 2, measured_iteration_ms: 90}\n",
       "3: run '1f1b-i': setting 'microbatches': schedule '1f1b-i' needs a multiple"},
      {"fitted-key",
       "runs:\n" + ok +
           "  - {schedule: 1f1b, p: 4, m: 9, p2p: blocking, measured_iteration_ms: 90}\n",
       "3: key 'p2p': calibrate fits it"},
      {"too-few", "runs:\n" + ok, "1: key 'runs': 1 run(s) for 1 fitted parameter(s)"},
  };
  for (const auto& c : cases) {
    const std::string runs = write(std::string(c.name) + ".yaml", c.text);
    const std::string cal = path(std::string(c.name) + "-cal.yaml");
    const Outcome o = run_cli({"calibrate", runs, "--out", cal});
    EXPECT_EQ(o.status, 2) << c.name << ": " << o.out;
    EXPECT_NE(o.err.find(runs + ":" + c.expected), std::string::npos) << c.name << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_TRUE(o.out.empty()) << c.name;
    EXPECT_FALSE(std::filesystem::exists(cal)) << c.name;
  }
}

}  // namespace
}  // namespace bubblesim::cli
