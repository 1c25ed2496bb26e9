// The findings of issue 19 (tests/fuzz/regressions/NN, from ../shared/data/fuzz-findings): each
// finding's command, run with the executable in a fresh copy of its folder. Bad input gives one
// line on standard error and exit status 2, leaves no output file behind and ends quickly; valid
// input that used to crash gives the right answer.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/temp_path.h"

namespace bubblesim {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;  // exit status; -1 for a signal
  std::string out, err;
  double seconds = 0;
};

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class FuzzRegression : public testing::TempDirTest {
 protected:
  // Copies finding `finding`'s inputs into the test's folder.
  void inputs(const std::string& finding) {
    const fs::path from = fs::path(BUBBLESIM_SOURCE_DIR) / "tests/fuzz/regressions" / finding;
    for (const fs::directory_entry& e : fs::directory_iterator(from)) {
      fs::copy_file(e.path(), dir_ / e.path().filename());
      fs::permissions(dir_ / e.path().filename(), fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add);
    }
    before_ = listing();
  }

  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      names.insert(e.path().filename().string());
    return names;
  }

  // Runs `bubblesim ARGS` (a shell word list) in the test's folder, killed after 20 s.
  Result run(const std::string& args) const {
    return run_script("timeout -s KILL 20 \"$B\" " + args);
  }

  // Runs the shell `script` in the test's folder, with $B the executable.
  Result run_script(const std::string& script) const {
    const std::string command =
        "cd '" + dir_.string() + "' && B='" + BUBBLESIM_EXE + "' && (" + script + ") >.out 2>.err";
    const auto start = std::chrono::steady_clock::now();
    const int raw = std::system(command.c_str());
    Result r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_text(dir_ / ".out");
    r.err = read_text(dir_ / ".err");
    fs::remove(dir_ / ".out");
    fs::remove(dir_ / ".err");
    return r;
  }

  // `args` fails as bad input: one line naming `expected`, exit 2, within `seconds`, and the
  // folder holds exactly what it held before (no output, no temporary file).
  void expect_refused(const std::string& args, const std::string& expected, double seconds = 5) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_LT(r.seconds, seconds) << args;
    EXPECT_EQ(listing(), before_) << args;
  }

  std::set<std::string> before_;
};

TEST_F(FuzzRegression, F01HugeProfileStageIsRefusedAtImportAndInTheProfile) {
  inputs("01");
  expect_refused("import trace.json --out new.h5", "stage, microbatch or chunk of 2147483647");
  expect_refused("simulate -s 1f1b --profile p.h5", "p.h5: dataset 'passes', row 3: stage");
}

TEST_F(FuzzRegression, F02OverlongSampleCannotMakeTheBubbleRateExceedOne) {
  inputs("02");
  expect_refused("import trace.json --out new.h5", "\"dur\" out of range");
  expect_refused("simulate -s 1f1b --profile p.h5 -m 8 --samples 50",
                 "root attribute 'total_kernel_ns' is out of range");
}

TEST_F(FuzzRegression, F03NegativeDurationsAreRefused) {
  inputs("03");
  expect_refused("import trace.json --out new.h5", "\"dur\" out of range");
  expect_refused("simulate -s 1f1b --profile p.h5 -m 4", "kernel_ns -5000 out of range");
}

TEST_F(FuzzRegression, F04TsPlusDurOverflowIsRefused) {
  inputs("04");
  // ts and dur near int64's limit: the duration alone is already out of range.
  expect_refused("import trace.json", "event 0 ('k') has a \"dur\" out of range");
  // A short kernel at the very end of int64's range: ts + dur overflows.
  std::ofstream(path("late.json"))
      << R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":0,)"
      << R"("ts":9223372036854000,"dur":1000}]})";
  before_ = listing();
  expect_refused("import late.json", "event 0 ('k') ends after the largest time");
}

TEST_F(FuzzRegression, F05LabelRegexOnAHugeNameMatchesWithoutOverflowingTheStack) {
  inputs("05");
  const Result r = run("import trace.json --label-regex '(?<name>.*)\\((?<pass>[FBW])\\)'");
  ASSERT_EQ(r.status, 0) << r.err;
  // The one range is named "<50,000 characters>(F)": one labelled range, pass F.
  EXPECT_NE(r.out.find("1 labelled ranges with GPU work"), std::string::npos) << r.out;
}

TEST_F(FuzzRegression, F06DeepJsonIsRefusedPlainAndCompressed) {
  inputs("06");
  expect_refused("import deep.json", "nested more than 64 deep");
  expect_refused("import deep.json.gz", "nested more than 64 deep");
}

TEST_F(FuzzRegression, F07ScheduleFileFromDevZeroFailsAtOnce) {
  inputs("07");
  expect_refused("simulate --schedule-file /dev/zero", "a NUL byte", 1);
}

TEST_F(FuzzRegression, F08WritersWriteIntoPipesAndThroughSymlinks) {
  inputs("08");
  // A pipe stands for /dev/null or /dev/stdout: written into, never replaced by a file.
  for (const char* option : {"--trace-json", "--write-schedule"}) {
    ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0644), 0);
    const Result r = run_script(std::string("timeout 20 \"$B\" simulate -s zb-h1 -p 2 -m 2 ") +
                                option + " pipe & timeout 20 cat pipe > got; wait");
    EXPECT_EQ(r.err, "") << option;
    EXPECT_TRUE(fs::is_fifo(path("pipe"))) << option;
    const std::string got = read_text(path("got"));
    // zb-h1 at p = 2, m = 2: 12 ops, so the trace names 12 of them; the CSV has 2 rows.
    if (std::string(option) == "--trace-json") {
      EXPECT_EQ(got.rfind("{\"displayTimeUnit\"", 0), 0u) << got.substr(0, 80);
    } else {
      EXPECT_EQ(count_lines(got), 2) << got;
    }
    fs::remove(path("pipe"));
    fs::remove(path("got"));
  }
  for (const char* command : {"import synth_pp.json --out", "report r1.h5 --html"}) {
    ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0644), 0);
    const Result r = run_script(std::string("timeout 20 \"$B\" ") + command +
                                " pipe > /dev/null & timeout 20 cat pipe > got; wait");
    EXPECT_EQ(r.err, "") << command;
    EXPECT_TRUE(fs::is_fifo(path("pipe"))) << command;
    EXPECT_GT(fs::file_size(path("got")), 1000u) << command;
    fs::remove(path("pipe"));
    fs::remove(path("got"));
  }
  // A symlink: its target is written, the link stays.
  std::ofstream(path("target.json")) << "original\n";
  fs::create_symlink("target.json", path("link.json"));
  const Result r = run("simulate -s zb-h1 -p 2 -m 2 --trace-json link.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link.json"))));
  EXPECT_EQ(read_text(path("target.json")).rfind("{\"displayTimeUnit\"", 0), 0u);
}

TEST_F(FuzzRegression, F09ReadOnlyTargetsAreRefusedAndKept) {
  inputs("09");
  fs::copy_file(path("r1.h5"), path("ro.h5"));
  std::ofstream(path("ro.json")) << "keep\n";
  fs::permissions(path("ro.h5"), fs::perms::owner_read | fs::perms::group_read);
  fs::permissions(path("ro.json"), fs::perms::owner_read | fs::perms::group_read);
  before_ = listing();
  const std::string original = read_text(path("ro.h5"));
  expect_refused("simulate -s zb-h1 -p 2 -m 2 --out ro.h5 --run-name newrun",
                 "ro.h5: the file is read-only");
  expect_refused("simulate -s zb-h1 -p 2 -m 2 --trace-json ro.json",
                 "ro.json: the file is read-only");
  EXPECT_EQ(read_text(path("ro.h5")), original);
  EXPECT_EQ(read_text(path("ro.json")), "keep\n");
}

TEST_F(FuzzRegression, F10AFailedCommandLeavesNoneOfItsOutputs) {
  inputs("10");
  expect_refused(
      "simulate -s zb-h1 -p 2 -m 2 --write-schedule w.csv --trace-json t.json "
      "--out /nonexistent/r.h5",
      "/nonexistent/r.h5: its folder /nonexistent does not exist");
  // A failure found only after the schedule and trace were written (the --out file is no
  // results file): those two are not left behind either.
  std::ofstream(path("notes.h5")) << "not HDF5\n";
  before_ = listing();
  expect_refused(
      "simulate -s zb-h1 -p 2 -m 2 --write-schedule w.csv --trace-json t.json "
      "--out notes.h5",
      "notes.h5: not an HDF5 file");
}

TEST_F(FuzzRegression, F11ResultsWithOutOfRangeDevicesOrKindsAreRefused) {
  inputs("11");
  expect_refused("report memdev_minus1.h5 --html x.html", "dataset 'memory', row 14: device -1");
  expect_refused("report memdev_intmin.h5 --html x.html", "device -2147483648 out of range");
  expect_refused("report memdev_1073741823.h5 --html x.html", "device 1073741823 out of range");
  expect_refused("report opsdev_intmax.h5 --html x.html",
                 "dataset 'ops', row 0: device 2147483647");
  expect_refused("report opkind_255.h5 --html x.html", "an op kind out of range");
}

TEST_F(FuzzRegression, F12CorruptedHdf5CrashesGiveOneLine) {
  inputs("12");
  expect_refused("report segv_report.h5 --json", "segv_report.h5: damaged: libhdf5 crashed");
  // Release builds: libhdf5 fails cleanly and the reader says so; sanitizer builds: its 70 TB
  // allocation aborts the guard's child. One line either way.
  expect_refused("report multiline_report.h5", "multiline_report.h5: ");
  expect_refused("simulate -s 1f1b --profile segv_profile.h5 --samples 20 -m 8",
                 "segv_profile.h5: damaged: libhdf5 crashed");
  // Release: the guard's size check; sanitizer builds may stop at libhdf5's own request first.
  expect_refused("simulate -s 1f1b --profile badalloc_profile.h5 --samples 20 -m 8",
                 "badalloc_profile.h5: damaged: ");
  fs::copy_file(path("segv_out.h5"), path("target.h5"));
  before_ = listing();
  expect_refused("simulate -s zb-h1 -p 2 -m 2 --out target.h5 --run-name 1f1b",
                 "target.h5: damaged: libhdf5 crashed");
  EXPECT_EQ(read_text(path("target.h5")), read_text(path("segv_out.h5")));
}

TEST_F(FuzzRegression, F12CorruptedHdf5HangsEndAfterTheTimeLimit) {
  inputs("12");
  // A 1 s base instead of the default 5 s, to keep the test short (the commands inherit it).
  ::setenv("BUBBLESIM_HDF5_GUARD", "1", 1);
  expect_refused("report hang_report.h5 --json", "did not finish reading it within 1.0 s");
  expect_refused("simulate -s 1f1b --profile hang_profile.h5 --samples 20 -m 8",
                 "did not finish reading it within 1.0 s");
  ::unsetenv("BUBBLESIM_HDF5_GUARD");
}

TEST_F(FuzzRegression, F13SweepLimitDoesNotBuildEveryConfiguration) {
  inputs("13");
  const Result r = run("sweep study_1e7.yaml --out big.h5 --limit 10 -j 1 --progress none");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 10 of 10000000 configurations"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 5);  // was over a minute and 7.9 GB
}

TEST_F(FuzzRegression, F14TooLargeARunIsRefusedAtOnceWithItsEstimate) {
  inputs("14");
  // 3 p v m ops (v = 2 where not given) at 64 bytes: 3 * 1048576 * 2 * 680 * 64 = 273.8 GB.
  expect_refused("simulate -s 1f1b -p 1048576 -m 680 --max-memory 100",
                 "needs about 273.8 GB (4278190080 ops at about 64 bytes each), more than the "
                 "limit of 100 GB",
                 1);
  // p = 4, m = 8: 192 ops, 12288 bytes = 1.2288e-05 GB: just below the limit runs.
  expect_refused("simulate -s 1f1b -p 4 -m 8 --max-memory 1.22e-5", "needs about 1.229e-05 GB");
  const Result r = run("simulate -s 1f1b -p 4 -m 8 --max-memory 1.23e-5");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(FuzzRegression, F14MonteCarloOfHoursIsRefusedUnlessAllowed) {
  inputs("22");
  // 1F1B at p = 2, m = 100000: 2 fused ops per stage and microbatch, 400000 ops; a million runs
  // at 2e7 ops per second: 4e11 / 2e7 / 3600 = 5.6 hours.
  expect_refused("simulate -s 1f1b --profile p1.h5 --samples 1000000 -m 100000",
                 "1000000 runs of 400000 ops would take about 5.6 hours", 1);
}

TEST_F(FuzzRegression, F15SlowLinksAreRefusedNotFree) {
  inputs("15");
  expect_refused("simulate -s 1f1b -p 4 -m 8 --model gpt-1.5b.yaml --cluster bw_1e-12.yaml",
                 "check the links' bandwidth");
  expect_refused("simulate -s 1f1b -p 4 -m 8 --model gpt-1.5b.yaml --cluster slowbw.yaml",
                 "check the links' bandwidth");
}

TEST_F(FuzzRegression, F16DerivedTimesOutOfRangeNameTheirInput) {
  inputs("16");
  expect_refused("simulate -s 1f1b -p 4 -m 8 --model gpt-1.5b.yaml --cluster slowdev.yaml",
                 "cluster slowdev.yaml: device 1");
  expect_refused("simulate -s 1f1b --model bighidden.yaml",
                 "bighidden.yaml: line 5: key 'hidden': expected a whole number from 1 to");
  expect_refused("simulate -s 1f1b --model gpt-1.5b.yaml --efficiency 1e-300",
                 "at efficiency 1e-300: a time of");
  expect_refused("advise --model gpt-1.5b.yaml --link-gbps 1e-300 --progress none",
                 "option --link-gbps: expected 1e-6 to 1e9 GB/s");
}

TEST_F(FuzzRegression, F17StageLayersCannotWrapAround) {
  inputs("17");
  expect_refused("simulate -s 1f1b -p 4 --model stage_layers_wrap.yaml",
                 "key 'stage_layers': expected whole numbers from 1 to 16777216");
  expect_refused("simulate -s 1f1b -p 4 --model biglayers.yaml",
                 "key 'layers': expected a whole number from 1 to 16777216");
}

TEST_F(FuzzRegression, F18WrongYamlTypesAndDirectoriesNameTheFile) {
  inputs("18");
  fs::create_directory(path("adir"));
  before_ = listing();
  expect_refused("simulate -s 1f1b --model name_list.yaml", "name_list.yaml: line 3: key 'name'");
  expect_refused("simulate -s 1f1b --model adir", "adir: is a directory, expected a model file");
  expect_refused("simulate -s 1f1b --comm-bytes 1 --cluster adir",
                 "adir: is a directory, expected a cluster file");
  expect_refused("sweep adir --out x.h5", "adir: is a directory, expected a study file");
  expect_refused("simulate --schedule-file adir", "adir: is a directory, expected a schedule");
}

TEST_F(FuzzRegression, F19HugeMicrobatchNumbersInScheduleFiles) {
  inputs("19");
  expect_refused("simulate --schedule-file bigmb.csv", "need at least 2000000000 actions");
}

TEST_F(FuzzRegression, F20ManyNicsDoNotOverflow) {
  inputs("20");
  const Result r = run("simulate -s 1f1b -p 4 -m 8 --model gpt-1.5b.yaml --cluster nics.yaml");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(FuzzRegression, F21MemLimitZeroAndOnSchedulesWithoutOneAreRefused) {
  inputs("21");
  expect_refused("simulate -s zb-auto --mem-limit 0", "option --mem-limit: expected a number > 0");
  expect_refused("simulate -s 1f1b --mem-limit 1",
                 "option --mem-limit: schedule '1f1b' does not take a memory limit");
  // In a study, mem_limit 0 still names the schedule's default, and 1f1b ignores the axis.
  std::ofstream(path("study.yaml")) << "fixed: {f: 1, b: 1, w: 0.5, p: 4, m: 8}\n"
                                       "axes:\n  schedule: [1f1b, zb-v]\n  mem_limit: [0, inf]\n";
  const Result r = run("sweep study.yaml --out s.h5 --progress none");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 4 of 4 configurations (4 simulated now, 0 from the file; 0 failed"),
            std::string::npos)
      << r.out;
}

TEST_F(FuzzRegression, F22OptionOddities) {
  inputs("22");
  expect_refused("simulate -s 1f1b --profile p1.h5 --samples 3 --seed -1",
                 "option --seed: expected a whole number");
  expect_refused("report r1.h5 --html mb.html --max-boxes -1",
                 "option --max-boxes: expected a whole number from 1");
  expect_refused("simulate -s zb-h1 -p 2 -m 2 --out rn.h5 --run-name ''",
                 "option --run-name: expected a non-empty name");
  expect_refused("simulate -s zb-h1 -p 2 -m 2 --trace-json same.x --write-schedule same.x",
                 "both write same.x");
  // A trailing ",,," row is no rank: the file's two rows are the pipeline.
  const Result r = run("simulate --schedule-file phantom.csv");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("p=2 m=2"), std::string::npos) << r.out;
}

// Found by options_fuzz: Boost.Program_options' error message substitutes the token for
// %original_token% until none is left, forever when the token holds one.
TEST_F(FuzzRegression, F23PlaceholdersInOptionsDoNotHangTheErrorMessage) {
  inputs("23");
  expect_refused("simulate '--x%original_token%'", "option '--x%original_token%': not an option",
                 1);
  expect_refused("simulate -p 'x%value%'", "option '--pp': not an option", 1);
  expect_refused("compare '---jsonp%original_token%'", "not an option this command takes", 1);
}

TEST_F(FuzzRegression, F24ProfileThatOverflowsLibhdf5sTypeConversionIsRefused) {
  inputs("24");
  // Sanitizer builds: libhdf5 overflows a buffer converting the damaged 'passes' rows into the
  // reader's types, which the guard's child meets only when it rehearses the reader (before,
  // the process itself aborted); release builds: the overflow goes unnoticed and the reader's
  // range check refuses the row. One line either way, naming the file.
  expect_refused("simulate -s 1f1b -p 2 -m 2 --profile conversion_profile.h5",
                 "conversion_profile.h5: ");
}

// Found by options_fuzz in a CI smoke run: with M_W above M_B a B allocates, and the zero-bubble
// greedy, which checked only F's against the limit, overran it and stopped on its own check.
TEST_F(FuzzRegression, F25BackwardsThatAllocateAreScheduledWithinTheLimit) {
  inputs("25");
  Result r = run("compare --m-w 2 -s 1f1b,zb-h1,zb-2p --no-improve");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("zb-2p"), std::string::npos) << r.out;
  r = run("simulate -s zb-auto --m-w 5 --json");
  EXPECT_EQ(r.status, 0) << r.err;
  // p = 8 at the default limit p M_B = 8.
  EXPECT_NE(r.out.find("\"peak_activation_memory\": 8"), std::string::npos) << r.out;
}

// Found by options_fuzz (UBSan, float-cast-overflow): a stage whose forward takes 0 ms fits
// billions of warm-up forwards before its first B, and zb-auto's warm-up estimate cast that count
// to int before capping it at m (undefined; the release build went on with INT_MIN). The
// sanitized build of this test stops there without the fix; both builds check the answer.
TEST_F(FuzzRegression, F27AStageWithAForwardOfNoTimeGetsAWarmUpWithinM) {
  inputs("27");
  Result r = run("compare -s 1f1b,zb-h1,zb-2p --no-improve --f 0,2,2,3,332,3,0,1");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("zb-2p"), std::string::npos) << r.out;
  r = run("simulate -s zb-2p --no-improve --f 0,2,2,3,332,3,0,1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  // Within zb-2p's limit 2p M_B = 16, and no shorter than stage 4's 24 forwards of 332 ms.
  EXPECT_NE(r.out.find("\"peak_activation_memory\": 16.0,"), std::string::npos) << r.out;
  const std::string key = "\"max_device_span_ms\": ";
  const std::size_t at = r.out.find(key);
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(at + key.size())), 24 * 332.0);
}

// Found by options_fuzz (a timeout): an input ending in --gpu took the harness's --no-improve as
// the GPU's name, and --gpu without --model or --cluster was ignored; so was --efficiency
// without --model. Options that would change nothing are refused, as --mem-limit on a schedule
// without one (F21).
TEST_F(FuzzRegression, F26GpuAndEfficiencyWithoutAModelAreRefused) {
  inputs("26");
  expect_refused("simulate -s zb-auto --gpu --no-improve",
                 "option --gpu: applies only with model or cluster");
  expect_refused("simulate -s zb-auto --gpu foo",
                 "option --gpu: applies only with model or cluster");
  expect_refused("simulate -s 1f1b --efficiency 0.5",
                 "option --efficiency: applies only with model");
  // With a model both still apply: H100-SXM's higher peak gives shorter FLOP-based times.
  const Result a100 = run("simulate -s 1f1b --model \"" BUBBLESIM_SOURCE_DIR
                          "/models/examples/gpt-1.5b.yaml\" --json");
  const Result h100 =
      run("simulate -s 1f1b --gpu H100-SXM --efficiency 0.5 --model \"" BUBBLESIM_SOURCE_DIR
          "/models/examples/gpt-1.5b.yaml\" --json");
  ASSERT_EQ(a100.status, 0) << a100.err;
  ASSERT_EQ(h100.status, 0) << h100.err;
  const auto iteration_ms = [](const std::string& json) {
    const std::string key = "\"iteration_time_ms\": ";
    const std::size_t at = json.find(key);
    return at == std::string::npos ? 0.0 : std::stod(json.substr(at + key.size()));
  };
  EXPECT_GT(iteration_ms(h100.out), 0);
  EXPECT_LT(iteration_ms(h100.out), iteration_ms(a100.out));
}

}  // namespace
}  // namespace bubblesim
