// The command line: the paper's published rows through --json, determinism, and bad input.
#include "sim/cli/cli.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/results_file.h"

namespace bubblesim::cli {
namespace {

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

Outcome run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = run(args, out, err);
  return {status, out.str(), err.str()};
}

rapidjson::Document parse_json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

double round4(double x) {
  return std::round(x * 1e4) / 1e4;
}

// ../shared/reference/zero-bubble.md §8, the 1.5B model at p = 8 (paper Tables 5 and 9).
struct PaperRow {
  int m;
  const char *f, *b, *w, *comm;
  double one_f_one_b, zb_h1, zb_h2;
};
constexpr PaperRow kPaperRows[] = {
    {24, "18.522", "18.086", "9.337", "0.601", 0.2431, 0.1585, 0.1083},
    {32, "18.513", "18.086", "9.331", "0.626", 0.1985, 0.1242, 0.0837},
    {64, "18.546", "18.097", "9.321", "0.762", 0.1240, 0.0674, 0.0444},
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
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(run_cli(args).out, first.out);
  const Outcome table = run_cli({"compare"});
  EXPECT_EQ(run_cli({"compare"}).out, table.out);
}

TEST(Cli, CompareAllLeavesOutWhatTheParametersDoNotSuit) {
  const Outcome o = run_cli({"compare", "-p", "4", "-m", "6", "--json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("1f1b-i left out"), std::string::npos) << o.err;
  EXPECT_EQ(parse_json(o.out).Size(), 10u);  // all but 1f1b-i
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
       "v-min"},
      {{"simulate", "-s", "zb-v", "--mem-limit", "0.25"}, "below what one microbatch needs"},
      {{"simulate", "-s", "zb-v", "--mem-limit", "-1"}, "option --mem-limit"},
      {{"simulate", "-s", "zb-auto", "--mem-limit", "0.5"},
       "schedule 'zb-auto': memory limit 0.5 on device 0 is below what one microbatch needs "
       "there; the smallest feasible limit is 1"},
      {{"simulate", "-s", "gpipe", "--exact"},
       "option --exact: applies to zb-1p, zb-2p and zb-auto, not 'gpipe'"},
      {{"simulate", "-s", "zb-2p", "--exact", "--time-limit", "0"}, "option --time-limit"},
      {{"simulate", "-s", "zb-1p", "--mem-limit-sweep", "1:2:0.5"},
       "schedule 'zb-1p' does not take a memory limit"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2"}, "expected FROM:TO:STEP"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "2:1:0.5"}, "expected FROM:TO:STEP"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:x:0.5"}, "'x' is not a number"},
      {{"simulate", "-s", "zb-auto", "--mem-limit-sweep", "1:2:0.5", "--exact"},
       "cannot be combined"},
      {{"compare", "-p", "0"}, "-p/--pp"},
      {{"compare", "-p", "x"}, "pp"},
      {{"compare", "-p"}, "pp"},
      {{"compare", "-m", "-3"}, "-m/--microbatches"},
      {{"simulate", "-s", "gpipe", "-v", "2"}, "-v/--chunks must be 1"},
      {{"simulate", "-s", "1f1b-i", "-m", "12"}, "multiple of -p/--pp"},
      {{"compare", "-s", "1f1b-i", "-v", "1"}, "-v/--chunks >= 2"},
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
      {{"simulate", "-s", "gpipe", "-m", "16000000", "--f", "1e9"}, "70 years"},
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
  const std::string path = ::testing::TempDir() + "/bubblesim_cli_zbh2.csv";
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

TEST(Cli, OutAddsRunsToAResultsFile) {
  const std::string path = ::testing::TempDir() + "/bubblesim_cli_out.h5";
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
  const std::string path = ::testing::TempDir() + "/bubblesim_cli_clash.h5";
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

  const std::string text = ::testing::TempDir() + "/bubblesim_cli_notes.txt";
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

TEST(Cli, ExecutableExitsWithTwoOnBadInput) {
  const std::string exe = BUBBLESIM_EXE;
  EXPECT_EQ(exit_status(exe + " compare -p 0 >/dev/null 2>&1"), 2);
  EXPECT_EQ(exit_status(exe + " simulate -s nope >/dev/null 2>&1"), 2);
  EXPECT_EQ(exit_status(exe + " compare >/dev/null 2>&1"), 0);
}

}  // namespace
}  // namespace bubblesim::cli
