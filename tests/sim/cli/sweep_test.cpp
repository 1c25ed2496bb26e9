// `bubblesim sweep`: the table's rows against `simulate --json`, resuming after a stop, and the
// errors of bad study files.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "analysis/results_file.h"
#include "analysis/study.h"
#include "sim/cli/cli.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::cli {
namespace {

using testing::Outcome;
using testing::parse_json;
using testing::run_cli;

namespace fs = std::filesystem;

// A time as the shortest text that reads back as the same double.
std::string fmt_number(double x) {
  std::ostringstream text;
  text.precision(17);
  text << x;
  return text.str();
}

class SweepTest : public bubblesim::testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string file = path(name);
    std::ofstream(file) << text;
    return file;
  }
};

// 5 schedules x p {2, 4} x m {4, 6, 8, 12, 16} x f {1, 2.5} x comm {0, 0.1}: 200 configurations.
constexpr const char* kStudy = R"(name: grid
fixed:
  b: 1.25
  w: [0.5, 0.75, 0.5, 0.75]
  v: 2
axes:
  schedule: [gpipe, 1f1b, zb-h1, 1f1b-i, zb-v]
  p: [2, 4]
  m: [4, 6, 8, 12, 16]
  f: [1, 2.5]
  comm: [0, 0.1]
)";

// The per-device w list has 4 values, so the p = 2 configurations fail; keep w per device
// out of the big study.
std::string study_text() {
  std::string text = kStudy;
  text.replace(text.find("[0.5, 0.75, 0.5, 0.75]"), 22, "0.5");
  return text;
}

TEST_F(SweepTest, TableRowsMatchSimulateJson) {
  const std::string study = write("study.yaml", study_text());
  const std::string out = path("sweep.h5");
  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none", "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 200 of 200 configurations"), std::string::npos) << r.out;

  const std::vector<analysis::SweepRow> rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 200u);
  for (std::size_t i = 0; i < rows.size(); ++i)
    ASSERT_EQ(rows[i].index, static_cast<int>(i));
  // The last axis varies fastest: row 1 differs from row 0 only in comm.
  EXPECT_EQ(rows[0].key, "schedule=gpipe pp=2 microbatches=4 chunks=2 f=1 b=1.25 w=0.5 comm=0");
  EXPECT_EQ(rows[1].key, "schedule=gpipe pp=2 microbatches=4 chunks=2 f=1 b=1.25 w=0.5 comm=0.1");

  int checked = 0, failed = 0;
  for (const analysis::SweepRow& row : rows) {
    if (row.status != "ok") {
      ++failed;
      // 1f1b-i needs m to be a multiple of p: only p = 4 with m = 6 fails.
      EXPECT_EQ(row.schedule, "1f1b-i");
      EXPECT_EQ(row.pp, 4);
      EXPECT_EQ(row.microbatches, 6);
      EXPECT_EQ(row.status, "error");
      EXPECT_NE(row.error.find("multiple"), std::string::npos) << row.error;
      EXPECT_EQ(row.iteration_time_ms, 0);
      continue;
    }
    EXPECT_GT(row.iteration_time_ms, 0);
    // Chunks apply only where the schedule takes them.
    EXPECT_EQ(row.chunks,
              row.schedule == "gpipe" || row.schedule == "1f1b" || row.schedule == "zb-h1" ? 1 : 2);
    if (row.index % 37 != 5 && row.index != 199) continue;
    std::vector<std::string> args = {"simulate",
                                     "-s",
                                     row.schedule,
                                     "-p",
                                     std::to_string(row.pp),
                                     "-m",
                                     std::to_string(row.microbatches),
                                     "--f",
                                     fmt_number(row.f_ms),
                                     "--b",
                                     "1.25",
                                     "--w",
                                     "0.5",
                                     "--comm",
                                     fmt_number(row.comm_ms),
                                     "--json"};
    if (row.chunks == 2) args.insert(args.end() - 1, {"-v", "2"});
    const Outcome sim = run_cli(args);
    ASSERT_EQ(sim.status, 0) << sim.err;
    rapidjson::Document doc;
    doc.Parse(sim.out.c_str());
    ASSERT_FALSE(doc.HasParseError());
    EXPECT_DOUBLE_EQ(row.iteration_time_ms, doc["iteration_time_ms"].GetDouble()) << row.key;
    EXPECT_DOUBLE_EQ(row.max_device_span_ms, doc["max_device_span_ms"].GetDouble()) << row.key;
    EXPECT_DOUBLE_EQ(row.bubble_rate, doc["bubble_rate"].GetDouble()) << row.key;
    EXPECT_DOUBLE_EQ(row.peak_activation_memory, doc["peak_activation_memory"].GetDouble())
        << row.key;
    EXPECT_EQ(row.chunks, doc["chunks"].GetInt());
    ++checked;
  }
  EXPECT_GE(checked, 5);
  EXPECT_EQ(failed, 2 * 2);  // m = 6 at p = 4, for each f and comm
}

TEST_F(SweepTest, StoppedRunsResumeToTheUninterruptedTable) {
  const std::string study = write("study.yaml", study_text());
  const std::string whole = path("whole.h5"), pieces = path("pieces.h5");
  ASSERT_EQ(run_cli({"sweep", study, "--out", whole, "--progress", "none"}).status, 0);

  // Stop after 70 new rows, then 55 more, then finish: each stop leaves a valid file.
  Outcome r = run_cli({"sweep", study, "--out", pieces, "--progress", "none", "--limit", "70"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("stopped by --limit"), std::string::npos) << r.out;
  std::vector<analysis::SweepRow> rows = analysis::ResultsReader(pieces).read_sweep_table();
  ASSERT_EQ(rows.size(), 70u);
  EXPECT_EQ(rows.back().index, 69);
  r = run_cli({"sweep", study, "--out", pieces, "--progress", "none", "--limit", "55", "-j", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 125 of 200 configurations (55 simulated now, 70 from the file"),
            std::string::npos)
      << r.out;
  r = run_cli({"sweep", study, "--out", pieces, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(75 simulated now, 125 from the file"), std::string::npos) << r.out;

  const std::vector<analysis::SweepRow> expected =
      analysis::ResultsReader(whole).read_sweep_table();
  rows = analysis::ResultsReader(pieces).read_sweep_table();
  ASSERT_EQ(rows.size(), 200u);
  EXPECT_EQ(rows, expected);

  // A finished sweep rerun simulates nothing and keeps the table.
  r = run_cli({"sweep", study, "--out", pieces, "--progress", "none"});
  EXPECT_NE(r.out.find("(0 simulated now, 200 from the file"), std::string::npos) << r.out;
  EXPECT_EQ(analysis::ResultsReader(pieces).read_sweep_table(), expected);
}

TEST_F(SweepTest, SigintStopsTheExecutableLeavingAResumableFile) {
  // 4 x 40 configurations of p = 32, m = 1024: several tenths of a second on one core.
  const std::string study = write("big.yaml", R"(fixed: {p: 32, m: 1024, b: 1, w: 1}
axes:
  schedule: [zb-h1, 1f1b, zb-h2, gpipe]
  f: [1, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.1, 1.11, 1.12, 1.13, 1.14, 1.15,
      1.16, 1.17, 1.18, 1.19, 1.2, 1.21, 1.22, 1.23, 1.24, 1.25, 1.26, 1.27, 1.28, 1.29, 1.3,
      1.31, 1.32, 1.33, 1.34, 1.35, 1.36, 1.37, 1.38, 1.39]
)");
  const std::string out = path("big.h5");
  // The signal is sent when the progress bar is first drawn (on standard error, a pipe here),
  // so it comes while the sweep runs however fast the machine is, not after a fixed sleep.
  int err_pipe[2];
  ASSERT_EQ(::pipe(err_pipe), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    ::execl(BUBBLESIM_EXE, BUBBLESIM_EXE, "sweep", study.c_str(), "--out", out.c_str(), "-j", "1",
            "--progress", "bar", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  bool signalled = false;
  char buffer[256];
  for (ssize_t n; (n = ::read(err_pipe[0], buffer, sizeof buffer)) > 0;) {
    if (!signalled && std::string_view(buffer, static_cast<std::size_t>(n)).find('\r') !=
                          std::string_view::npos) {
      ::kill(child, SIGINT);
      signalled = true;
    }
  }
  ::close(err_pipe[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(signalled);
  ASSERT_TRUE(WIFEXITED(status));
  // 130 when the signal stopped the sweep; 0 only if the last configuration had already run.
  ASSERT_TRUE(WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 0) << WEXITSTATUS(status);
  const std::size_t kept = analysis::ResultsReader(out).read_sweep_table().size();
  EXPECT_EQ(kept < 160u, WEXITSTATUS(status) == 130) << kept;

  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string whole = path("whole.h5");
  ASSERT_EQ(run_cli({"sweep", study, "--out", whole, "--progress", "none"}).status, 0);
  EXPECT_EQ(analysis::ResultsReader(out).read_sweep_table(),
            analysis::ResultsReader(whole).read_sweep_table());
}

// A cluster axis: each row runs as `simulate --cluster FILE` would (path relative to the study).
TEST_F(SweepTest, ClusterAxisRunsEachClusterAsSimulateWould) {
  write("ideal.yaml",
        "nodes:\n  - {count: 1, gpus_per_node: 8, gpu: A100-80GB}\n"
        "links:\n  intra_node: {type: nvlink, bandwidth_gb_per_s: .inf, latency_us: 0}\n"
        "  inter_node: {type: roce, bandwidth_gb_per_s: .inf, latency_us: 0}\n");
  write("slow.yaml",
        "nodes:\n  - {count: 8, gpus_per_node: 1, gpu: A100-80GB}\n"
        "links:\n  intra_node: {type: nvlink, bandwidth_gb_per_s: 300, latency_us: 3}\n"
        "  inter_node: {type: ethernet, bandwidth_gb_per_s: 1, latency_us: 50}\n");
  const std::string study = write(
      "study.yaml",
      "fixed: {schedule: zb-h1, comm_bytes: 1e7}\naxes:\n  cluster: [ideal.yaml, slow.yaml]\n");
  const std::string out = path("out.h5");
  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rows[i].status, "ok") << rows[i].error;
    const Outcome one = run_cli({"simulate", "-s", "zb-h1", "--comm-bytes", "1e7", "--cluster",
                                 path(i == 0 ? "ideal.yaml" : "slow.yaml"), "--json"});
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(rows[i].iteration_time_ms, parse_json(one.out)["iteration_time_ms"].GetDouble());
  }
  EXPECT_GT(rows[1].iteration_time_ms, rows[0].iteration_time_ms + 7 * 10);  // 10 ms hops
  EXPECT_EQ(rows[1].cluster, path("slow.yaml"));  // resolved against the study's folder
  EXPECT_EQ(rows[1].dp, 1);
  EXPECT_EQ(rows[1].samples_per_gpu_per_s, 0);  // no model: no samples
}

// `improve: off` (or --no-improve for every configuration that does not name it) runs the
// generators' own schedules, as simulate --no-improve does; `on` is the default.
TEST_F(SweepTest, ImproveOffRunsAsSimulateNoImproveWould) {
  const std::string fixed = "fixed: {p: 4, m: 6, f: 2, b: 2.3, w: 1.2, comm: 0.15}\n";
  const std::string study =
      write("study.yaml", fixed + "axes:\n  schedule: [zb-v, v-min]\n  improve: ['on', 'off']\n");
  const std::string out = path("out.h5");
  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 4u);
  for (const analysis::SweepRow& row : rows) {
    std::vector<std::string> args = {"simulate", "-s",     row.schedule, "-p",    "4",   "-m",
                                     "6",        "--f",    "2",          "--b",   "2.3", "--w",
                                     "1.2",      "--comm", "0.15",       "--json"};
    if (row.key.find("improve=off") != std::string::npos) args.emplace_back("--no-improve");
    const Outcome one = run_cli(args);
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(row.iteration_time_ms, parse_json(one.out)["iteration_time_ms"].GetDouble())
        << row.key;
  }
  // The improver changes these schedules: the two settings give different rows.
  EXPECT_NE(rows[0].iteration_time_ms, rows[1].iteration_time_ms);
  // --no-improve: a study that does not name the setting runs without the improver.
  const std::string plain = write("plain.yaml", fixed + "axes:\n  schedule: [zb-v, v-min]\n");
  const std::string out2 = path("out2.h5");
  ASSERT_EQ(run_cli({"sweep", plain, "--out", out2, "--progress", "none", "--no-improve"}).status,
            0);
  const auto without = analysis::ResultsReader(out2).read_sweep_table();
  ASSERT_EQ(without.size(), 2u);
  EXPECT_EQ(without[0].iteration_time_ms, rows[1].iteration_time_ms);  // zb-v, off
  EXPECT_EQ(without[1].iteration_time_ms, rows[3].iteration_time_ms);  // v-min, off
}

// A profile (bubblesim import --out) is a setting like any other: each row runs as simulate
// --profile would.
TEST_F(SweepTest, ProfileAxisRunsAsSimulateProfileWould) {
  // A profile from a simulated timeline: export it, import it.
  const std::string trace = path("t.json"), fast = path("fast.h5"), slow = path("slow.h5");
  ASSERT_EQ(run_cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--f", "1", "--b", "1", "--w",
                     "0.5", "--trace-json", trace})
                .status,
            0);
  ASSERT_EQ(run_cli({"import", trace, "--out", fast}).status, 0);
  ASSERT_EQ(run_cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--f", "3", "--b", "2", "--w",
                     "1", "--trace-json", trace})
                .status,
            0);
  ASSERT_EQ(run_cli({"import", trace, "--out", slow}).status, 0);
  const std::string study =
      write("study.yaml",
            "fixed: {p: 4, m: 8, comm: 0}\naxes:\n  profile: [fast.h5, slow.h5]\n  schedule: "
            "[1f1b, zb-h1]\n");
  const std::string out = path("p.h5");
  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 4u);
  for (const analysis::SweepRow& row : rows) {
    ASSERT_EQ(row.status, "ok") << row.error;
    const std::string profile = row.key.find("fast.h5") != std::string::npos ? fast : slow;
    const Outcome one = run_cli({"simulate", "-s", row.schedule, "-p", "4", "-m", "8", "--comm",
                                 "0", "--profile", profile, "--json"});
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_DOUBLE_EQ(row.iteration_time_ms, parse_json(one.out)["iteration_time_ms"].GetDouble())
        << row.key;
  }
  // The profile's times, not the default example's: 1F1B at p = 4, m = 8 with F 1, B+W 1.5 ms
  // takes (m + p - 1)(F + B + W) = 27.5 ms.
  EXPECT_DOUBLE_EQ(rows[0].iteration_time_ms, 27.5);
  EXPECT_GT(rows[2].iteration_time_ms, rows[0].iteration_time_ms);
}

// With a model and data parallelism the table has the throughput and memory columns of the
// JSON.
TEST_F(SweepTest, ModelAndDpRowsCarryThroughputAndMemory) {
  const std::string model = BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml";
  const std::string cluster = BUBBLESIM_SOURCE_DIR "/models/examples/a100-4x8-roce.yaml";
  const std::string study =
      write("study.yaml", "fixed: {schedule: zb-h1, model: " + model + ", cluster: " + cluster +
                              "}\naxes:\n  dp: [1, 2]\n");
  const std::string out = path("dp.h5");
  const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(rows[i].status, "ok") << rows[i].error;
    EXPECT_EQ(rows[i].dp, static_cast<int>(i + 1));
    const Outcome one = run_cli({"simulate", "-s", "zb-h1", "--model", model, "--cluster", cluster,
                                 "--dp", std::to_string(i + 1), "--json"});
    ASSERT_EQ(one.status, 0) << one.err;
    const auto json = parse_json(one.out);
    EXPECT_DOUBLE_EQ(rows[i].samples_per_gpu_per_s, json["samples_per_gpu_per_s"].GetDouble());
    EXPECT_DOUBLE_EQ(rows[i].peak_memory_bytes, json["peak_memory_bytes"].GetDouble());
    EXPECT_DOUBLE_EQ(rows[i].iteration_time_ms, json["iteration_time_ms"].GetDouble());
  }
  // Two replicas add the gradient all-reduce: fewer samples per GPU per second.
  EXPECT_LT(rows[1].samples_per_gpu_per_s, rows[0].samples_per_gpu_per_s);
}

struct BadStudy {
  const char* text;
  const char* message;  // what the error line contains after "study.yaml:"
};

TEST_F(SweepTest, BadStudiesNameFileLineAndKeyAndWriteNothing) {
  const BadStudy cases[] = {
      {"fixed: {p: 4}\naxes:\n  schedule: [1f1b]\n  colour: [red]\n",
       "study.yaml:4: key 'colour': unknown setting"},
      {"axes:\n  schedule: [1f1b]\n  p: [4, x]\n", "study.yaml:3: key 'p': expected an integer"},
      {"axes:\n  schedule: [1f1b, nope]\n", "study.yaml:2: key 'schedule': "},
      {"fixed:\n  schedule: 1f1b\n  f: [1, -2]\n", "study.yaml:3: key 'f': expected times"},
      {"axes:\n  schedule: [1f1b\n  p: [1]\n", "study.yaml:"},
      {"fixed: {p: 4}\naxes:\n  p: [2]\n  schedule: [1f1b]\n",
       "study.yaml:3: key 'p': is both fixed and an axis"},
      {"axes:\n  p: [2, 4]\n", "key 'schedule': every configuration needs one"},
      {"fixed:\n  schedule: 1f1b\n  model: missing.yaml\n", "study.yaml:3: key 'model': no such"},
      {"sweeps: 3\n", "study.yaml:1: key 'sweeps': unknown section"},
      {"fixed:\n  schedule: zb-v\n  improve: maybe\n",
       "study.yaml:3: key 'improve': expected on or off, got 'maybe'"},
  };
  for (const BadStudy& c : cases) {
    const std::string study = write("study.yaml", c.text);
    const std::string out = path("never.h5");
    const Outcome r = run_cli({"sweep", study, "--out", out});
    EXPECT_EQ(r.status, 2) << c.text;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
    EXPECT_FALSE(fs::exists(out)) << c.text;
  }
  // The unknown schedule's error lists the valid names.
  write("study.yaml", "axes:\n  schedule: [1f1b, nope]\n");
  EXPECT_NE(run_cli({"sweep", path("study.yaml"), "--out", path("x.h5")}).err.find("zb-h1"),
            std::string::npos);
}

TEST_F(SweepTest, ExplicitConfigsCrossTheAxes) {
  const std::string study = write("study.yaml", R"(fixed: {f: 2, b: 2, w: 1, comm: 0}
configs:
  - {schedule: 1f1b, p: 4}
  - {schedule: zb-v, p: 2, v: 2, mem_limit: inf}
axes:
  m: [8, 16]
)");
  const analysis::Study s = analysis::load_study(study);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.configuration(3).key(),
            "schedule=zb-v pp=2 microbatches=16 chunks=2 f=2 b=2 w=1 comm=0 mem-limit=inf");
  EXPECT_EQ(s.configuration(3).find("microbatches")->line, 6);
  const std::string out = path("c.h5");
  ASSERT_EQ(run_cli({"sweep", study, "--out", out, "--progress", "none"}).status, 0);
  const std::vector<analysis::SweepRow> rows = analysis::ResultsReader(out).read_sweep_table();
  ASSERT_EQ(rows.size(), 4u);
  // 1F1B with uniform costs: (m + p - 1)(F + B + W) = 11 x 5 ms at p = 4, m = 8.
  EXPECT_EQ(rows[0].iteration_time_ms, 55);
  EXPECT_EQ(rows[0].pp, 4);
  EXPECT_TRUE(std::isinf(rows[3].mem_limit));
  EXPECT_EQ(rows[3].status, "ok");
}

// --keep-best N: the N fastest completed rows also become full runs, the same as simulate
// --out would write them, and a rerun that has nothing left to simulate keeps them.
TEST_F(SweepTest, KeepBestAddsTheFastestRowsAsFullRuns) {
  const std::string study = write("study.yaml", R"(fixed: {f: 2, b: 2, w: 1, comm: 0.1}
axes:
  schedule: [1f1b, zb-h1, zb-h2, 1f1b-i]
  p: [4]
  m: [6, 8]
)");
  const std::string out = path("best.h5");
  const Outcome r =
      run_cli({"sweep", study, "--out", out, "--progress", "none", "--keep-best", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("kept the full runs of the 3 fastest"), std::string::npos) << r.out;

  const analysis::ResultsReader reader(out);
  std::vector<analysis::SweepRow> rows = reader.read_sweep_table();
  ASSERT_EQ(rows.size(), 8u);
  std::erase_if(rows, [](const analysis::SweepRow& row) { return row.status != "ok"; });
  ASSERT_EQ(rows.size(), 7u);  // 1f1b-i needs m a multiple of p: m = 6 fails
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.iteration_time_ms < b.iteration_time_ms;
  });
  EXPECT_EQ(reader.run_names(),
            (std::vector<std::string>{"sweep-best-1", "sweep-best-2", "sweep-best-3"}));
  for (int k = 0; k < 3; ++k) {
    const analysis::SweepRow& row = rows[static_cast<std::size_t>(k)];
    const analysis::RunRecord run = reader.read_run("sweep-best-" + std::to_string(k + 1));
    EXPECT_EQ(run.parameters.schedule, row.schedule) << k;
    EXPECT_EQ(run.parameters.microbatches, row.microbatches) << k;
    EXPECT_DOUBLE_EQ(run.summary.iteration_time_ms, row.iteration_time_ms) << k;
    EXPECT_DOUBLE_EQ(run.summary.bubble_rate, row.bubble_rate) << k;
    // Every op of the schedule: F, B and W (or F and BW) of each stage and microbatch.
    const std::size_t passes = row.schedule == "zb-h1" || row.schedule == "zb-h2" ? 3 : 2;
    EXPECT_EQ(run.ops.size(), passes * static_cast<std::size_t>(row.chunks * row.pp) *
                                  static_cast<std::size_t>(row.microbatches))
        << k;
  }

  const Outcome again =
      run_cli({"sweep", study, "--out", out, "--progress", "none", "--keep-best", "3"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(analysis::ResultsReader(out).run_names().size(), 3u);
  EXPECT_EQ(run_cli({"sweep", study, "--out", out, "--keep-best", "-1"}).status, 2);
}

}  // namespace
}  // namespace bubblesim::cli
