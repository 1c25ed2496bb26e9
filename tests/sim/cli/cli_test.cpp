// The command line: the paper's published rows through --json, determinism, and bad input.
#include "sim/cli/cli.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/results_file.h"

namespace bubblesim::cli {
namespace {

using testing::Outcome;
using testing::parse_json;
using testing::run_cli;

double round4(double x) {
  return std::round(x * 1e4) / 1e4;
}

// ../shared/reference/zero-bubble.md §8, the 1.5B model at p = 8 (paper Tables 5 and 9).
struct PaperRow {
  int m;
  const char *f, *b, *w, *comm;
  double one_f_one_b, zb_h1, zb_h2, one_f_one_b_i;
};
constexpr PaperRow kPaperRows[] = {
    {24, "18.522", "18.086", "9.337", "0.601", 0.2431, 0.1585, 0.1083, 0.1055},
    {32, "18.513", "18.086", "9.331", "0.626", 0.1985, 0.1242, 0.0837, 0.0818},
    {64, "18.546", "18.097", "9.321", "0.762", 0.1240, 0.0674, 0.0444, 0.0443},
};

TEST(Cli, ReproducesThePapersOnePointFiveBRows) {
  for (const PaperRow& row : kPaperRows) {
    const Outcome o =
        run_cli({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "8", "-m", std::to_string(row.m), "--f",
                 row.f, "--b", row.b, "--w", row.w, "--comm", row.comm, "--json"});
    ASSERT_EQ(o.status, 0) << o.err;
    const rapidjson::Document doc = parse_json(o.out);
    ASSERT_TRUE(doc.IsArray());
    ASSERT_EQ(doc.Size(), 3u);
    const double expected[] = {row.one_f_one_b, row.zb_h1, row.zb_h2};
    for (rapidjson::SizeType i = 0; i < 3; ++i) {
      EXPECT_DOUBLE_EQ(round4(doc[i]["bubble_rate"].GetDouble()), expected[i])
          << doc[i]["schedule"].GetString() << " m=" << row.m;
      EXPECT_EQ(doc[i]["microbatches"].GetInt(), row.m);
    }
  }
}

// The 1F1B-I column (v = 3) comes out of --paper-evaluator, which times the runs as the paper's
// evaluator did (sim::InputRule::PaperEvaluator); one-chunk schedules are unchanged by it.
TEST(Cli, PaperEvaluatorReproducesTheInterleavedColumn) {
  for (const PaperRow& row : kPaperRows) {
    const std::vector<std::string> args = {"compare", "-s",     "1f1b-i,1f1b,zb-h1",
                                           "-v",      "3",      "-p",
                                           "8",       "-m",     std::to_string(row.m),
                                           "--f",     row.f,    "--b",
                                           row.b,     "--w",    row.w,
                                           "--comm",  row.comm, "--json"};
    std::vector<std::string> paper = args;
    paper.push_back("--paper-evaluator");
    const Outcome o = run_cli(paper);
    ASSERT_EQ(o.status, 0) << o.err;
    const rapidjson::Document doc = parse_json(o.out);
    ASSERT_EQ(doc.Size(), 3u);
    EXPECT_DOUBLE_EQ(round4(doc[0]["bubble_rate"].GetDouble()), row.one_f_one_b_i) << row.m;
    EXPECT_STREQ(doc[0]["input_rule"].GetString(), "paper-evaluator");
    EXPECT_DOUBLE_EQ(round4(doc[1]["bubble_rate"].GetDouble()), row.one_f_one_b) << row.m;
    EXPECT_DOUBLE_EQ(round4(doc[2]["bubble_rate"].GetDouble()), row.zb_h1) << row.m;
    // Without it every input is awaited: the same order is slower, and says nothing of a rule.
    const rapidjson::Document all = parse_json(run_cli(args).out);
    EXPECT_GT(all[0]["bubble_rate"].GetDouble(), row.one_f_one_b_i + 0.001) << row.m;
    EXPECT_FALSE(all[0].HasMember("input_rule"));
  }
  // A results file says how its run was timed.
  const std::string out = bubblesim::testing::temp_path("paper_evaluator.h5");
  std::remove(out.c_str());
  const Outcome o =
      run_cli({"simulate", "-s", "1f1b-i", "-v", "3", "--paper-evaluator", "--out", out});
  ASSERT_EQ(o.status, 0) << o.err;
  const analysis::RunRecord record = analysis::ResultsReader(out).read_run("1f1b-i");
  std::remove(out.c_str());
  EXPECT_DOUBLE_EQ(round4(record.summary.bubble_rate), 0.1055);
  EXPECT_EQ(record.extra_texts,
            (std::vector<std::pair<std::string, std::string>>{{"input_rule", "paper-evaluator"}}));
}

TEST(Cli, DefaultExampleIsThePapersOnePointFiveBAtM24) {
  const Outcome o = run_cli({"compare", "-s", "zb-h2", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  EXPECT_EQ(doc[0]["pp"].GetInt(), 8);
  EXPECT_EQ(doc[0]["microbatches"].GetInt(), 24);
  EXPECT_DOUBLE_EQ(round4(doc[0]["bubble_rate"].GetDouble()), 0.1083);
}

TEST(Cli, SimulateJsonHasTheDesignFields) {
  const Outcome o = run_cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--f", "1", "--b",
                             "1", "--w", "1", "--comm", "0", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["schedule"].GetString(), "zb-h1");
  EXPECT_EQ(doc["pp"].GetInt(), 4);
  EXPECT_EQ(doc["microbatches"].GetInt(), 8);
  EXPECT_EQ(doc["chunks"].GetInt(), 1);
  // Unit costs: cost = 3m + (p-1)(T_F + T_B - T_W) = 24 + 3.
  EXPECT_DOUBLE_EQ(doc["iteration_time_ms"].GetDouble(), 27.0);
  EXPECT_DOUBLE_EQ(doc["max_device_span_ms"].GetDouble(), 27.0);
  EXPECT_DOUBLE_EQ(doc["bubble_rate"].GetDouble(), 1.0 - 24.0 / 27.0);
  EXPECT_DOUBLE_EQ(doc["peak_activation_memory"].GetDouble(), 4.0);
  ASSERT_EQ(doc["devices"].Size(), 4u);
  const auto& d3 = doc["devices"][3];
  EXPECT_EQ(d3["device"].GetInt(), 3);
  EXPECT_DOUBLE_EQ(d3["busy_ms"].GetDouble(), 24.0);
  EXPECT_DOUBLE_EQ(d3["peak_activation_memory"].GetDouble(), 1.0 + 3 * 0.5);
  EXPECT_TRUE(d3.HasMember("span_ms"));
  EXPECT_TRUE(d3.HasMember("bubble_rate"));
}

TEST(Cli, PerDeviceListsChangeTheResult) {
  const Outcome uniform = run_cli({"simulate", "-s", "1f1b", "-p", "3", "-m", "6", "--f", "1",
                                   "--b", "1", "--w", "1", "--comm", "0", "--json"});
  const Outcome slow_last = run_cli({"simulate", "-s", "1f1b", "-p", "3", "-m", "6", "--f", "1,1,2",
                                     "--b", "1", "--w", "1", "--comm", "0", "--json"});
  ASSERT_EQ(slow_last.status, 0) << slow_last.err;
  const auto a = parse_json(uniform.out), b = parse_json(slow_last.out);
  EXPECT_DOUBLE_EQ(a["devices"][2]["busy_ms"].GetDouble(), 18.0);
  EXPECT_DOUBLE_EQ(b["devices"][2]["busy_ms"].GetDouble(), 24.0);
  EXPECT_GT(b["iteration_time_ms"].GetDouble(), a["iteration_time_ms"].GetDouble());
}

TEST(Cli, SameInputGivesByteIdenticalOutput) {
  const std::vector<std::string> args = {
      "compare", "-p", "5", "-m", "13", "--f", "1.1,1.2,1.3,1.4,1.5", "--comm", "0.05", "--json"};
  const Outcome first = run_cli(args);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(run_cli(args).out, first.out);
  const Outcome table = run_cli({"compare"});
  EXPECT_EQ(run_cli({"compare"}).out, table.out);
}

TEST(Cli, CompareAllLeavesOutWhatTheParametersDoNotSuit) {
  const Outcome o = run_cli({"compare", "-p", "4", "-m", "6", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("1f1b-i left out"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("dualpipe left out: option --microbatches: schedule 'dualpipe' needs an "
                       "even number >= 2p = 8, got 6"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("dualpipe-v left out"), std::string::npos) << o.err;
  EXPECT_EQ(parse_json(o.out).Size(), 10u);  // all but 1f1b-i, dualpipe and dualpipe-v
  const Outcome odd = run_cli({"compare", "-p", "5", "-m", "10", "--json"});
  ASSERT_EQ(odd.status, 0) << odd.err;
  EXPECT_NE(odd.err.find("dualpipe left out: option --pp: schedule 'dualpipe' needs an even "
                         "number, got 5"),
            std::string::npos)
      << odd.err;
  EXPECT_EQ(parse_json(odd.out).Size(), 12u);  // all but dualpipe
}

// compare runs its schedules at once (-j, default all cores) and reports them in the order
// named, with the same notes and the same first error, whatever the number of threads.
TEST(Cli, CompareRunsTheSchedulesAtOnceWithTheSameOutputWhateverTheJobs) {
  const std::vector<std::string> args = {"compare", "-p", "4", "-m", "6", "--f", "1,1.2,0.9,1.1",
                                         "--comm", "0.05", "--json"};
  auto with_jobs = [&](const char* jobs) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-j", jobs});
    return run_cli(a);
  };
  const Outcome one = with_jobs("1");
  ASSERT_EQ(one.status, 0) << one.err;
  for (const char* jobs : {"2", "3", "0"}) {
    const Outcome many = with_jobs(jobs);
    ASSERT_EQ(many.status, 0) << many.err;
    EXPECT_EQ(many.out, one.out) << jobs;
    EXPECT_EQ(many.err, one.err) << jobs;
  }
  // The schedules in registry order, as -j 1 ran them one after another.
  const rapidjson::Document doc = parse_json(one.out);
  ASSERT_EQ(doc.Size(), 10u);
  EXPECT_STREQ(doc[0]["schedule"].GetString(), "gpipe");
  EXPECT_STREQ(doc[9]["schedule"].GetString(), "v-min");
  // A named list stops at its first schedule that cannot run, in the order named.
  const Outcome named = run_cli({"compare", "-s", "1f1b,dualpipe,1f1b-i", "-p", "4", "-m", "6"});
  EXPECT_EQ(named.status, 2);
  EXPECT_NE(named.err.find("schedule 'dualpipe' needs an even number >= 2p = 8, got 6"),
            std::string::npos)
      << named.err;
  EXPECT_EQ(named.out, "");
  const Outcome bad = run_cli({"compare", "-j", "-1"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("option -j/--jobs: expected 0 (all cores) to 4096"), std::string::npos)
      << bad.err;
}

// Parameters per device in DeepSeek's convention (reference §6: 2x for DualPipe and DualPipeV,
// against 1F1B with as many stages), and the share of the model each device actually holds:
// only dualpipe keeps two copies.
TEST(Cli, DualPipeReportsTwiceTheParametersPerDevice) {
  const Outcome o =
      run_cli({"compare", "-s", "1f1b,zb-v,dualpipe,dualpipe-v,1f1b-i", "-p", "4", "-m", "8", "--f",
               "1", "--b", "1", "--w", "1", "--comm", "0", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  const double expected[] = {1, 2, 2, 2, 3};
  const double share[] = {0.25, 0.25, 0.5, 0.25, 0.25};
  for (rapidjson::SizeType i = 0; i < 5; ++i) {
    EXPECT_EQ(doc[i]["parameters_per_device"].GetDouble(), expected[i])
        << doc[i]["schedule"].GetString();
    EXPECT_EQ(doc[i]["model_share_per_device"].GetDouble(), share[i])
        << doc[i]["schedule"].GetString();
  }
  // dualpipe: a pass per rank and microbatch costs the whole --f (v = 1); 3m = 24 ms of work
  // per rank, and the closed form's 2 ms of idle on ranks 0 and 3 (dual_pipe.h).
  EXPECT_EQ(doc[2]["chunks"].GetInt(), 1);
  EXPECT_DOUBLE_EQ(doc[2]["max_device_span_ms"].GetDouble(), 26.0);
  EXPECT_DOUBLE_EQ(doc[2]["peak_activation_memory"].GetDouble(), 5.0);  // (p+1) M_B
  EXPECT_EQ(doc[3]["chunks"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(doc[3]["peak_activation_memory"].GetDouble(), 4.5);  // (2p+1)/2 M_B
  // The table says it too.
  const Outcome table =
      run_cli({"compare", "-s", "1f1b,dualpipe,dualpipe-v", "-p", "4", "-m", "8"});
  ASSERT_EQ(table.status, 0) << table.err;
  for (const auto& [name, ending] :
       {std::pair{"dualpipe ", "2x        1/2"}, std::pair{"dualpipe-v ", "2x        1/4"},
        std::pair{"1f1b ", "1x        1/4"}}) {
    const std::size_t row = table.out.find(std::string("\n") + name);
    ASSERT_NE(row, std::string::npos) << table.out;
    const std::string line = table.out.substr(row + 1, table.out.find('\n', row + 1) - row - 1);
    EXPECT_TRUE(line.ends_with(ending)) << line;
  }
  const Outcome simulate = run_cli({"simulate", "-s", "dualpipe", "-p", "4", "-m", "8"});
  EXPECT_NE(simulate.out.find("parameters/device            2x  (1F1B with as many stages = 1x); "
                              "1/2 of the model's parameters per device"),
            std::string::npos)
      << simulate.out;
}

TEST(Cli, OverlapEfficiencyShortensTheOverlappedPairs) {
  auto span = [](const std::string& e) {
    const Outcome o =
        run_cli({"simulate", "-s", "dualpipe", "-p", "4", "-m", "8", "--f", "1", "--b", "1", "--w",
                 "1", "--comm", "0", "--overlap-efficiency", e, "--json"});
    EXPECT_EQ(o.status, 0) << o.err;
    return parse_json(o.out)["max_device_span_ms"].GetDouble();
  };
  // Rank 0 runs 3 pairs of F (1 ms) and BW (2 ms): each takes 3 - e ms; its idle is
  // (1 - e)(PP - 2) + e = 2 - e (dual_pipe.h).
  EXPECT_DOUBLE_EQ(span("0"), 24 + 2);
  EXPECT_DOUBLE_EQ(span("0.5"), 24 - 3 * 0.5 + 1.5);
  EXPECT_DOUBLE_EQ(span("1"), 24 - 3 + 1);
}

TEST(Cli, ChunksApplyToTheSchedulesThatTakeThem) {
  const Outcome o = run_cli({"compare", "-s", "1f1b,1f1b-i", "-v", "2", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  EXPECT_EQ(doc[0]["chunks"].GetInt(), 1);
  EXPECT_EQ(doc[1]["chunks"].GetInt(), 2);
  const Outcome fallback = run_cli({"compare", "-s", "1f1b-i", "--json"});
  EXPECT_EQ(parse_json(fallback.out)[0]["chunks"].GetInt(), 3);  // its default
}

TEST(Cli, CompareTableMarksTheBest) {
  const Outcome o = run_cli({"compare"});
  ASSERT_EQ(o.status, 0) << o.err;
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p"}) {
    EXPECT_NE(o.out.find(name), std::string::npos) << name;
  }
  // zb-2p has the lowest bubble rate on the default example (the paper's 0.0433).
  const std::size_t row = o.out.find("zb-2p");
  const std::string line = o.out.substr(row, o.out.find('\n', row) - row);
  EXPECT_NE(line.find("0.0433 *"), std::string::npos) << line;
}

TEST(Cli, MemoryLimitSweepGivesTheBubbleAgainstMemoryCurve) {
  const Outcome o = run_cli(
      {"simulate", "-s", "zb-auto", "-m", "32", "--mem-limit-sweep", "1:3:0.125", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  EXPECT_STREQ(doc["schedule"].GetString(), "zb-auto");
  const auto& points = doc["points"];
  ASSERT_EQ(points.Size(), 17u);
  for (rapidjson::SizeType i = 0; i < points.Size(); ++i) {
    const double factor = 1 + 0.125 * i;
    EXPECT_DOUBLE_EQ(points[i]["mem_limit_factor"].GetDouble(), factor);
    EXPECT_DOUBLE_EQ(points[i]["mem_limit"].GetDouble(), factor * 8);  // p M_B with M_B = 1
    EXPECT_LE(points[i]["peak_activation_memory"].GetDouble(), factor * 8 + 1e-9);
  }
  // The Figure 7 shape: ZB-1p's 0.1242 at p M_B (the paper's m = 32 row), falling to under a
  // tenth of it by 2p M_B, flat from there.
  EXPECT_LE(points[0]["bubble_rate"].GetDouble(), 0.1242 + 0.00005);
  EXPECT_LT(points[8]["bubble_rate"].GetDouble(), 0.01242);
  for (rapidjson::SizeType i = 9; i < points.Size(); ++i)
    EXPECT_LE(points[i]["bubble_rate"].GetDouble(), points[8]["bubble_rate"].GetDouble() + 1e-12);

  const Outcome table = run_cli({"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2:0.5"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("limit x pM_B"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\n         1.5          12"), std::string::npos) << table.out;
}

// A schedule within a limit fits every higher one: no point of a sweep is beaten by a lower
// limit's (here V-Half's own schedule at 0.45 p M_B is longer than at 0.4: 77.56 ms against
// 77.075), and a point that takes a lower limit's run says so and keeps that run's peak.
TEST(Cli, MemoryLimitSweepNeverRisesWithTheMemory) {
  const std::vector<std::string> input = {"-s",   "v-half", "-p",   "5",   "-m",   "12",     "--f",
                                          "1.53", "--b",    "1.64", "--w", "0.97", "--comm", "0"};
  auto simulate = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"simulate"};
    args.insert(args.end(), input.begin(), input.end());
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.status, 0) << o.err;
    return parse_json(o.out);
  };
  const rapidjson::Document doc = simulate({"--mem-limit-sweep", "0.4:0.5:0.05", "--json"});
  const auto& points = doc["points"];
  ASSERT_EQ(points.Size(), 3u);
  auto value = [&](rapidjson::SizeType i, const char* key) { return points[i][key].GetDouble(); };
  int taken = 0;
  for (rapidjson::SizeType i = 0; i < points.Size(); ++i) {
    const double factor = value(i, "mem_limit_factor"),
                 from = value(i, "schedule_mem_limit_factor");
    EXPECT_LE(from, factor);
    EXPECT_LE(value(i, "peak_activation_memory"), from * 5 + 1e-9);  // p M_B = 5
    for (rapidjson::SizeType j = 0; j < i; ++j) {
      const double iteration = value(j, "iteration_time_ms") - value(i, "iteration_time_ms");
      const double span = value(j, "max_device_span_ms") - value(i, "max_device_span_ms");
      EXPECT_FALSE(iteration <= 0 && span <= 0 && (iteration < 0 || span < 0))
          << "limit " << factor << " beaten by " << value(j, "mem_limit_factor");
    }
    if (from == factor) continue;
    // A point that took a lower limit's run is shorter than the generator's own at its limit.
    ++taken;
    const rapidjson::Document own =
        simulate({"--mem-limit", std::to_string(value(i, "mem_limit")), "--json"});
    EXPECT_LT(value(i, "max_device_span_ms"), own["max_device_span_ms"].GetDouble());
  }
  EXPECT_EQ(taken, 1);  // 0.45 takes 0.4's schedule
}

TEST(Cli, ExactModeReportsTheOptimum) {
  const Outcome o = run_cli({"simulate", "-s", "zb-2p", "-p", "3", "-m", "4", "--exact", "--json"});
  if (o.status == 2 && o.err.find("no ILP solver") != std::string::npos) {
    GTEST_SKIP() << "built without CBC";
  }
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  const auto& exact = doc["exact"];
  EXPECT_STREQ(exact["status"].GetString(), "optimal");
  EXPECT_DOUBLE_EQ(exact["max_device_span_ms"].GetDouble(), doc["max_device_span_ms"].GetDouble());
  EXPECT_DOUBLE_EQ(exact["bound_ms"].GetDouble(), doc["max_device_span_ms"].GetDouble());
  EXPECT_LE(exact["max_device_span_ms"].GetDouble(),
            exact["heuristic_max_device_span_ms"].GetDouble());
  EXPECT_EQ(exact["gap"].GetDouble(), 0.0);

  const Outcome too_big = run_cli({"simulate", "-s", "zb-1p", "-m", "32", "--exact"});
  EXPECT_EQ(too_big.status, 2);
  EXPECT_NE(too_big.err.find("p*m = 256 is above the 200"), std::string::npos) << too_big.err;
}

// CBC's set-up, root relaxation and root heuristics are not cut short by its time limit (on V
// programs of p*m near 200 they take many times a short limit), so a stopped solve says how long
// the solver ran, not only the limit it was given: at least the limit, as it stopped on it.
TEST(Cli, ExactModeStoppedByItsLimitSaysHowLongTheSolverRan) {
  const Outcome o =
      run_cli({"simulate", "-s", "zb-2p", "-p", "4", "-m", "8", "--exact", "--time-limit", "1"});
  if (o.status == 2 && o.err.find("no ILP solver") != std::string::npos) {
    GTEST_SKIP() << "built without CBC";
  }
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string prefix = "stopped at the 1 s limit after ";
  const std::size_t at = o.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << o.out;
  const double ran_s = std::strtod(o.out.c_str() + at + prefix.size(), nullptr);
  EXPECT_GE(ran_s, 0.95) << o.out;  // printed to 0.1 s
}

TEST(Cli, ModelPredictsThePapersMeasuredMemory) {
  // The 1.5B model on 8 A100-80GB with its profiled times: the paper measured 30 GB for 1F1B,
  // 32 GB for ZB-1p and 59 GB for ZB-2p (../shared/reference/zero-bubble.md §8).
  const Outcome o = run_cli({"compare", "-s", "1f1b,zb-1p,zb-2p", "--model",
                             BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml", "--f", "18.522",
                             "--b", "18.086", "--w", "9.337", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const rapidjson::Document doc = parse_json(o.out);
  const double measured_gb[] = {30, 32, 59};
  for (rapidjson::SizeType i = 0; i < 3; ++i) {
    const double predicted_gb = doc[i]["peak_memory_bytes"].GetDouble() / 1e9;
    EXPECT_NEAR(predicted_gb, measured_gb[i], 0.15 * measured_gb[i])
        << doc[i]["schedule"].GetString();
    // Every device's peak is its static memory plus its activation peak.
    for (const auto& d : doc[i]["devices"].GetArray()) {
      EXPECT_DOUBLE_EQ(
          d["peak_memory_bytes"].GetDouble(),
          d["static_memory_bytes"].GetDouble() + d["peak_activation_memory"].GetDouble());
    }
  }
  // The measured times were kept: the paper's bubble rates.
  EXPECT_NEAR(doc[0]["bubble_rate"].GetDouble(), 0.2431, 0.00005);
  EXPECT_NEAR(doc[2]["bubble_rate"].GetDouble(), 0.0433, 0.00005);
  // Without the times the model computes them from FLOPs: F on a middle stage (3 layers) is
  // 3 * sbh(24h + 4s) FLOPs at 45% of 312 TFLOP/s.
  const Outcome flops = run_cli({"simulate", "-s", "1f1b", "--model",
                                 BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml", "--json"});
  ASSERT_EQ(flops.status, 0) << flops.err;
  const double sbh = 1024.0 * 6 * 2304;
  const double busy_ms = parse_json(flops.out)["devices"][1]["busy_ms"].GetDouble();
  const double per_pass = 3 * sbh / (312e12 * 0.45) * 1e3;
  EXPECT_NEAR(busy_ms,
              24 * per_pass * ((24 * 2304 + 4 * 1024) + (24 * 2304 + 8 * 1024) + 24 * 2304),
              24 * 3e-6);
}

TEST(Cli, ModelPredictsThePapersMeasuredThroughput) {
  // Samples per GPU per second for the 1.5B model on 8 A100s with the profiled times of each
  // row (§8): 1F1B, ZB-1p, ZB-2p at m = 24 / 32 / 64, within 10% of the measured figures.
  const double measured[3][3] = {{11.8, 12.5, 13.6}, {12.9, 13.4, 14.2}, {14.5, 14.8, 14.9}};
  for (int row = 0; row < 3; ++row) {
    const PaperRow& r = kPaperRows[row];
    const Outcome o = run_cli({"compare", "-s", "1f1b,zb-1p,zb-2p", "-m", std::to_string(r.m),
                               "--f", r.f, "--b", r.b, "--w", r.w, "--comm", r.comm, "--model",
                               BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml", "--json"});
    ASSERT_EQ(o.status, 0) << o.err;
    const rapidjson::Document doc = parse_json(o.out);
    for (rapidjson::SizeType i = 0; i < 3; ++i) {
      const double predicted = doc[i]["samples_per_gpu_per_s"].GetDouble();
      // m microbatches of 6 samples over 8 GPUs in the iteration time.
      EXPECT_DOUBLE_EQ(predicted, r.m * 6 / (8 * doc[i]["iteration_time_ms"].GetDouble() / 1e3));
      EXPECT_NEAR(predicted, measured[i][row], 0.1 * measured[i][row])
          << doc[i]["schedule"].GetString() << " m=" << r.m;
    }
  }
}

TEST(Cli, SchedulesListsEveryGenerator) {
  const Outcome o = run_cli({"schedules"});
  ASSERT_EQ(o.status, 0);
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) {
    EXPECT_NE(o.out.find(name), std::string::npos) << name;
  }
}

TEST(Cli, HelpExplainsTheOptions) {
  for (const char* cmd : {"simulate", "compare"}) {
    const Outcome o = run_cli({cmd, "--help"});
    EXPECT_EQ(o.status, 0);
    for (const char* opt : {"--pp", "--microbatches", "--comm", "--m-b", "--json"}) {
      EXPECT_NE(o.out.find(opt), std::string::npos) << cmd << " " << opt;
    }
  }
  EXPECT_EQ(run_cli({"--help"}).status, 0);
}

TEST(Cli, BadInputGetsOneLineAndStatusTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "missing command"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"simulate"}, "schedule"},
      {{"simulate", "-s", "zb-h9"},
       "valid values are: gpipe, 1f1b, zb-h1, zb-h2, zb-1p, zb-2p, zb-auto, 1f1b-i, zb-v, v-half, "
       "v-min, dualpipe, dualpipe-v"},
      {{"simulate", "-s", "zb-v", "--mem-limit", "0.25"}, "below what one microbatch needs"},
      // Where a B allocates (M_W > M_B): both chunks' forwards and one B, (M_B + M_W) / 2.
      {{"simulate", "-s", "v-min", "--m-w", "3", "--mem-limit", "1.5"},
       "option --mem-limit: schedule 'v-min': 1.5 is below what one microbatch needs on a device, "
       "2 (M_B = 1)"},
      {{"simulate", "-s", "zb-v", "--mem-limit", "-1"}, "option --mem-limit"},
      {{"simulate", "-s", "zb-auto", "--mem-limit", "0.5"},
       "schedule 'zb-auto': memory limit 0.5 on device 0 is below what one microbatch needs "
       "there; the smallest feasible limit is 1"},
      {{"compare", "--model", "no-such.yaml"}, "no-such.yaml: cannot open the model file"},
      {{"compare", "--model", BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml", "--gpu",
        "V100"},
       "unknown GPU type 'V100'"},
      {{"compare", "--model", BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml", "--efficiency",
        "0"},
       "option --efficiency: expected a fraction in (0, 1], got 0"},
      {{"simulate", "-s", "gpipe", "--exact"},
       "option --exact: applies to zb-1p, zb-2p, zb-auto, zb-v, v-half and v-min, not 'gpipe'"},
      {{"simulate", "-s", "zb-2p", "--exact", "--time-limit", "0"}, "option --time-limit"},
      {{"simulate", "-s", "zb-1p", "--mem-limit-sweep", "1:2:0.5"},
       "schedule 'zb-1p' does not take a memory limit"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2"}, "expected FROM:TO:STEP"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "2:1:0.5"}, "expected FROM:TO:STEP"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:x:0.5"}, "'x' is not a number"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2:0.5", "--exact"},
       "cannot be combined"},
      {{"compare", "-p", "0"}, "option --pp: the pipeline devices must be between 1 and"},
      {{"compare", "-p", "x"}, "pp"},
      {{"compare", "-p"}, "pp"},
      {{"compare", "-m", "-3"}, "option --microbatches: must be between 1 and 16777216, got -3"},
      {{"simulate", "-s", "gpipe", "-v", "2"}, "option --chunks: schedule 'gpipe' places 1 chunk"},
      {{"simulate", "-s", "1f1b-i", "-m", "12"},
       "option --microbatches: schedule '1f1b-i' needs a multiple"},
      {{"compare", "-s", "1f1b-i", "-v", "1"},
       "option --chunks: schedule '1f1b-i' needs at least 2"},
      {{"compare", "--f", "1,2"}, "option --f: expected one time in ms or 8"},
      {{"compare", "--b", "abc"}, "option --b: 'abc' is not a number"},
      {{"compare", "--w", "1,,2,3,4,5,6,7"}, "option --w"},
      {{"compare", "--comm", "-1"}, "option --comm: time -1 ms is out of range"},
      {{"compare", "--f", "nan"}, "option --f"},
      {{"compare", "--f", "1e12"}, "option --f"},
      {{"compare", "--m-b", "-1"}, "option --m-b"},
      {{"compare", "-s", "1f1b,1f1b"}, "listed twice"},
      {{"compare", "--bogus"}, "bogus"},
      {{"compare", "stray"}, "stray"},
      {{"simulate", "-s", "gpipe", "-m", "16000000", "--f", "1e9", "--max-memory", "1e6"},
       "70 years"},
      {{"simulate", "-s", "dualpipe", "-p", "3", "-m", "12"},
       "option --pp: schedule 'dualpipe' needs an even number, got 3"},
      {{"simulate", "-s", "dualpipe", "-m", "15"},
       "option --microbatches: schedule 'dualpipe' needs an even number >= 2p = 16, got 15"},
      {{"compare", "-s", "dualpipe-v", "-m", "10"},
       "option --microbatches: schedule 'dualpipe-v' needs at least 2p = 16, got 10"},
      {{"compare", "--overlap-efficiency", "1.5"},
       "option --overlap-efficiency: expected a number from 0 to 1, got 1.5"},
      {{"compare", "--overlap-efficiency", "-0.25"}, "option --overlap-efficiency"},
      {{"compare", "--overlap-efficiency", "nan"}, "option --overlap-efficiency"},
      {{"compare", "--overlap-efficiency", "x"}, "overlap-efficiency"},
      {{"simulate", "-s", "zb-2p", "--exact", "--paper-evaluator"},
       "option --exact: cannot be combined with paper-evaluator"},
      {{"simulate", "-s", "1f1b-i", "--paper-evaluator", "--optimizer-sync", "allreduce"},
       "option --paper-evaluator: cannot be combined with cluster, dp or optimizer-sync"},
  };
  for (const auto& [args, needle] : cases) {
    const Outcome o = run_cli(args);
    std::string joined;
    for (const auto& a : args)
      joined += a + " ";
    EXPECT_EQ(o.status, 2) << joined;
    EXPECT_TRUE(o.out.empty()) << joined;
    EXPECT_NE(o.err.find(needle), std::string::npos) << joined << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << joined << ": " << o.err;
  }
}

TEST(Cli, ScheduleFileRoundTripsThroughSimulate) {
  const std::string path = bubblesim::testing::temp_path("cli_zbh2.csv");
  const Outcome generated = run_cli({"simulate", "-s", "zb-h2", "-p", "4", "-m", "9", "--f",
                                     "1,2,1,2", "--write-schedule", path, "--json"});
  ASSERT_EQ(generated.status, 0) << generated.err;
  const Outcome from_file =
      run_cli({"simulate", "--schedule-file", path, "--f", "1,2,1,2", "--json"});
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  const auto a = parse_json(generated.out), b = parse_json(from_file.out);
  EXPECT_STREQ(b["schedule"].GetString(), path.c_str());
  EXPECT_EQ(b["pp"].GetInt(), 4);
  EXPECT_EQ(b["microbatches"].GetInt(), 9);
  EXPECT_EQ(a["iteration_time_ms"].GetDouble(), b["iteration_time_ms"].GetDouble());
  EXPECT_EQ(a["bubble_rate"].GetDouble(), b["bubble_rate"].GetDouble());
  EXPECT_EQ(a["peak_activation_memory"].GetDouble(), b["peak_activation_memory"].GetDouble());
  // The file fixes p, m and v: a contradicting option is an error.
  const Outcome contradiction = run_cli({"simulate", "--schedule-file", path, "-p", "8"});
  EXPECT_EQ(contradiction.status, 2);
  EXPECT_NE(contradiction.err.find("the schedule file has 4 ranks"), std::string::npos)
      << contradiction.err;
  const Outcome both = run_cli({"simulate", "-s", "1f1b", "--schedule-file", path});
  EXPECT_EQ(both.status, 2);
  const Outcome missing = run_cli({"simulate", "--schedule-file", path + ".none"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
}

TEST(Cli, DualPipeScheduleFileRoundTripsThroughSimulate) {
  const std::string path = bubblesim::testing::temp_path("cli_dualpipe.csv");
  const std::vector<std::string> costs = {"--f", "1,2,1,2", "--comm", "0.1", "--overlap-efficiency",
                                          "0.5", "--json"};
  for (const char* name : {"dualpipe", "dualpipe-v"}) {
    std::vector<std::string> args = {"simulate",         "-s", name, "-p", "4", "-m", "10",
                                     "--write-schedule", path};
    args.insert(args.end(), costs.begin(), costs.end());
    const Outcome generated = run_cli(args);
    ASSERT_EQ(generated.status, 0) << generated.err;
    args = {"simulate", "--schedule-file", path};
    args.insert(args.end(), costs.begin(), costs.end());
    const Outcome from_file = run_cli(args);
    ASSERT_EQ(from_file.status, 0) << from_file.err;
    const auto a = parse_json(generated.out), b = parse_json(from_file.out);
    for (const char* field : {"pp", "microbatches", "chunks"})
      EXPECT_EQ(a[field].GetInt(), b[field].GetInt()) << name << " " << field;
    for (const char* field : {"iteration_time_ms", "max_device_span_ms", "bubble_rate",
                              "peak_activation_memory", "parameters_per_device"}) {
      EXPECT_EQ(a[field].GetDouble(), b[field].GetDouble()) << name << " " << field;
    }
    // A dualpipe file holds 2 stages per rank, but each microbatch runs one of them: v = 1.
    const Outcome v2 = run_cli({"simulate", "--schedule-file", path, "-v", "2"});
    EXPECT_EQ(v2.status, std::string(name) == "dualpipe" ? 2 : 0) << v2.err;
    if (std::string(name) == "dualpipe") {
      EXPECT_NE(v2.err.find("the schedule file has 1 stages per rank on each microbatch's route"),
                std::string::npos)
          << v2.err;
    }
  }
}

TEST(Cli, OutAddsRunsToAResultsFile) {
  const std::string path = bubblesim::testing::temp_path("cli_out.h5");
  std::filesystem::remove(path);
  const std::vector<std::string> inputs = {"-p", "4", "-m", "8", "--f", "1,2,1,2", "--comm", "0.1"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), inputs.begin(), inputs.end());
    return run_cli(args);
  };
  const Outcome one = with({"simulate", "-s", "zb-h1", "--out", path, "--json"});
  ASSERT_EQ(one.status, 0) << one.err;
  const rapidjson::Document json = parse_json(one.out);
  const Outcome two = with({"compare", "-s", "1f1b,zb-h2", "--out", path, "--run-name", "p4"});
  ASSERT_EQ(two.status, 0) << two.err;

  const analysis::ResultsReader reader(path);
  EXPECT_EQ(reader.run_names(), (std::vector<std::string>{"p4.1f1b", "p4.zb-h2", "zb-h1"}));
  EXPECT_EQ(reader.writer().command_line, "bubblesim compare -s 1f1b,zb-h2 --out " + path +
                                              " --run-name p4 -p 4 -m 8 --f "
                                              "1,2,1,2 --comm 0.1");
  const analysis::RunRecord run = reader.read_run("zb-h1");
  // The summary is the JSON's, to the bit.
  EXPECT_EQ(run.summary.iteration_time_ms, json["iteration_time_ms"].GetDouble());
  EXPECT_EQ(run.summary.bubble_rate, json["bubble_rate"].GetDouble());
  EXPECT_EQ(run.devices[1].span_ms, json["devices"][1]["span_ms"].GetDouble());
  EXPECT_EQ(run.parameters.schedule, "zb-h1");
  EXPECT_EQ(run.parameters.f_ms, (std::vector<double>{1, 2, 1, 2}));
  EXPECT_EQ(run.parameters.comm_ms, (std::vector<double>(4, 0.1)));
  EXPECT_EQ(run.ops.size(), 96u);
  EXPECT_EQ(run.transfers.size(), 48u);
}

TEST(Cli, OutRefusesClashesAndForeignFilesWithOneLine) {
  const std::string path = bubblesim::testing::temp_path("cli_clash.h5");
  std::filesystem::remove(path);
  ASSERT_EQ(run_cli({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--out", path}).status, 0);
  const auto bytes = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string before = bytes();
  const Outcome clash =
      run_cli({"compare", "-s", "zb-h1,1f1b", "-p", "2", "-m", "2", "--out", path});
  EXPECT_EQ(clash.status, 2);
  EXPECT_EQ(clash.out, "");
  EXPECT_EQ(clash.err, "bubblesim compare: error: " + path +
                           ": already holds a run named '1f1b' (give --overwrite to replace it, "
                           "or --run-name)\n");
  EXPECT_EQ(bytes(), before);
  EXPECT_EQ(run_cli({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--out", path, "--overwrite"})
                .status,
            0);
  EXPECT_EQ(analysis::ResultsReader(path).read_run("1f1b").parameters.microbatches, 4);

  const std::string text = bubblesim::testing::temp_path("cli_notes.txt");
  std::ofstream(text) << "hello\n";
  const Outcome foreign = run_cli({"simulate", "-s", "1f1b", "--out", text});
  EXPECT_EQ(foreign.status, 2);
  EXPECT_EQ(foreign.err, "bubblesim simulate: error: " + text +
                             ": not an HDF5 file (expected a bubblesim results file)\n");

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"simulate", "-s", "1f1b", "--run-name", "x"},
        {"compare", "--overwrite"},
        {"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2:0.5", "--out", path},
        {"simulate", "-s", "1f1b", "--out", path, "--run-name", "a/b"}}) {
    const Outcome o = run_cli(bad);
    EXPECT_EQ(o.status, 2) << bad.back();
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

int exit_status(const std::string& command) {
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// `validate` on a copy of the reference sets cut to their first rows at p <= 4 (one per
// schedule): the summary has one row per family, the listing the file's lines and reference
// costs, and the output does not depend on -j.
TEST(Cli, ValidateListsTheRowsAndOneSummaryLinePerFamilyWhateverTheJobs) {
  const std::filesystem::path reference =
      std::filesystem::path(BUBBLESIM_SHARED_DATA) / "reference";
  const std::filesystem::path dir = bubblesim::testing::temp_path("validate_small");
  std::filesystem::create_directories(dir);
  std::vector<std::string> first_lines;  // "family line reference-cost" of each row kept
  for (const char* name : {"zb_auto_visible.csv", "zbv_visible.csv", "v_half_min_visible.csv"}) {
    std::ifstream in(reference / name);
    std::ofstream out(dir / name);
    std::string line;
    std::getline(in, line);
    out << line << '\n';
    // The reference cost's column: ref_cost, or V-Half/V-Min's max_stage_span.
    const std::size_t cost_column = [&] {
      std::stringstream split(line);
      std::size_t k = 0;
      for (std::string cell; std::getline(split, cell, ','); ++k) {
        if (!cell.empty() && cell.back() == '\r') cell.pop_back();  // the files end lines CRLF
        if (cell == "ref_cost" || cell == "max_stage_span") return k;
      }
      return k;
    }();
    std::vector<std::string> kinds;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream split(line);
      for (std::string cell; std::getline(split, cell, ',');)
        cells.push_back(cell);
      if (std::stoi(cells[1]) > 4 || std::count(kinds.begin(), kinds.end(), cells[0]) != 0) {
        continue;
      }
      kinds.push_back(cells[0]);
      out << line << '\n';
      // Its line in the copy: after the header and the rows kept before it.
      first_lines.push_back(cells[0] + " " + std::to_string(kinds.size() + 1) + " " +
                            std::to_string(std::lround(std::stod(cells.at(cost_column)))));
    }
  }
  ASSERT_EQ(first_lines.size(), 4u);

  const Outcome one =
      run_cli({"validate", dir.string(), "--rows", "-j", "1", "--progress", "none"});
  const Outcome many =
      run_cli({"validate", dir.string(), "--rows", "-j", "3", "--progress", "none"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(many.out, one.out);
  // The listing: family, line, p, m, cost, reference, ratio, peak.
  std::istringstream text(one.out);
  std::string line;
  std::getline(text, line);
  for (const std::string& expected : first_lines) {
    ASSERT_TRUE(std::getline(text, line));
    std::istringstream cells(line);
    std::string family, number, p, m, cost, reference_cost;
    cells >> family >> number >> p >> m >> cost >> reference_cost;
    EXPECT_EQ(family + " " + number + " " + reference_cost, expected);
  }
  // The summary: one line per family, each of one row.
  int families = 0;
  while (std::getline(text, line)) {
    std::istringstream cells(line);
    std::string family;
    int rows = 0;
    if (cells >> family >> rows && family != "family") {
      ++families;
      EXPECT_EQ(rows, 1) << line;
    }
  }
  EXPECT_EQ(families, 4);

  const Outcome bad = run_cli({"validate", dir.string(), "-j", "-1"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("option -j/--jobs: expected 0 (all cores) to 4096, got -1"),
            std::string::npos)
      << bad.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, ExecutableExitsWithTwoOnBadInput) {
  const std::string exe = BUBBLESIM_EXE;
  EXPECT_EQ(exit_status(exe + " compare -p 0 >/dev/null 2>&1"), 2);
  EXPECT_EQ(exit_status(exe + " simulate -s nope >/dev/null 2>&1"), 2);
  // Every schedule with the improver, as the default example runs them, at a size the
  // sanitizer build runs in 7 s (the example itself took 100 s there; cmake/setup.sh runs it
  // in the release build).
  EXPECT_EQ(exit_status(exe + " compare -p 2 -m 4 >/dev/null 2>&1"), 0);
}

}  // namespace
}  // namespace bubblesim::cli
