// Studies split over processes: `sweep --shard K/N` + `bubblesim merge`, and `mpirun -n N
// bubblesim sweep` and `advise` (tests that need MPI are skipped with a message where it is not
// built). Every split run is checked against the single-process table of the same study, row for
// row.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "analysis/results_file.h"
#include "sim/cli/ranks.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::cli {
namespace {

using testing::Outcome;
using testing::run_cli;

// 5 schedules x p {2, 4, 8} x m {4, ..., 24} x f {1, ..., 2.5} x comm (10 values): 3600 cheap
// configurations (1f1b-i fails where m is not a multiple of p: error rows travel too).
constexpr const char* kCheapStudy = R"(fixed: {b: 1.25, w: 0.5}
axes:
  schedule: [gpipe, 1f1b, zb-h1, zb-h2, 1f1b-i]
  p: [2, 4, 8]
  m: [4, 6, 8, 12, 16, 24]
  f: [1, 1.5, 2, 2.5]
  comm: [0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
)";
constexpr std::size_t kCheapConfigurations = 5 * 3 * 6 * 4 * 10;

// 48 configurations of p = 64, m = 2048 (tens of ms each): a run that lasts long enough after
// its first rows to be signalled.
constexpr const char* kHeavyStudy = R"(fixed: {p: 64, m: 2048, b: 1, w: 1}
axes:
  schedule: [zb-h1, 1f1b]
  f: [1, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.1, 1.11]
  comm: [0, 0.1]
)";
constexpr std::size_t kHeavyConfigurations = 2 * 12 * 2;

class SweepSplitTest : public bubblesim::testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string file = path(name);
    std::ofstream(file) << text;
    return file;
  }
  // The table of a single-process run of `study`.
  std::vector<analysis::SweepRow> single_run(const std::string& study) {
    const std::string out = path("single.h5");
    const Outcome r = run_cli({"sweep", study, "--out", out, "--progress", "none"});
    EXPECT_EQ(r.status, 0) << r.err;
    return analysis::ResultsReader(out).read_sweep_table();
  }
};

std::vector<analysis::SweepRow> table(const std::string& file) {
  return analysis::ResultsReader(file).read_sweep_table();
}

TEST_F(SweepSplitTest, ShardsMergeToTheSingleRunTable) {
  const std::string study = write("study.yaml", kCheapStudy);
  const std::vector<analysis::SweepRow> whole = single_run(study);
  ASSERT_EQ(whole.size(), kCheapConfigurations);

  std::vector<std::string> parts;
  for (int k = 1; k <= 3; ++k) {
    const std::string part = path("part" + std::to_string(k) + ".h5");
    const Outcome r = run_cli(
        {"sweep", study, "--out", part, "--shard", std::to_string(k) + "/3", "--progress", "none"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("holds 1200 of 1200 configurations (shard " + std::to_string(k) +
                         "/3 of a study of 3600; 1200 simulated now"),
              std::string::npos)
        << r.out;
    // The K-th shard holds the configurations K-1, K-1+3, ...: the whole run's rows.
    const std::vector<analysis::SweepRow> rows = table(part);
    ASSERT_EQ(rows.size(), 1200u);
    for (std::size_t j = 0; j < rows.size(); ++j)
      ASSERT_EQ(rows[j], whole[3 * j + static_cast<std::size_t>(k - 1)]) << j;
    const std::optional<analysis::SweepInfo> info = analysis::ResultsReader(part).sweep_info();
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->shard, k);
    EXPECT_EQ(info->shards, 3);
    EXPECT_EQ(info->study_configurations, 3600);
    parts.push_back(part);
  }

  // Two shards: a table with a third missing, said so; the third joined into it later.
  const std::string all = path("all.h5");
  Outcome r = run_cli({"merge", parts[2], parts[0], "--out", all});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 2400 of 3600 configurations, joined from 2 files"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1200 configurations are missing"), std::string::npos) << r.out;
  r = run_cli({"merge", parts[1], "--out", all});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holds 3600 of 3600 configurations, joined from 2 files"), std::string::npos)
      << r.out;
  EXPECT_EQ(table(all), whole);
  const std::optional<analysis::SweepInfo> info = analysis::ResultsReader(all).sweep_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->shards, 0);

  // The merged file resumes as a complete sweep of the study.
  r = run_cli({"sweep", study, "--out", all, "--progress", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(0 simulated now, 3600 from the file"), std::string::npos) << r.out;
}

TEST_F(SweepSplitTest, MergeRefusesTablesOfAnotherStudyWithOneLine) {
  const std::string a =
      write("a.yaml", "fixed: {b: 1, w: 1}\naxes: {schedule: [1f1b], m: [8, 16]}\n");
  const std::string b =
      write("b.yaml", "fixed: {b: 1, w: 1}\naxes: {schedule: [1f1b], m: [8, 12]}\n");
  ASSERT_EQ(run_cli({"sweep", a, "--out", path("a.h5"), "--progress", "none"}).status, 0);
  ASSERT_EQ(run_cli({"sweep", b, "--out", path("b.h5"), "--progress", "none"}).status, 0);
  const Outcome r = run_cli({"merge", path("a.h5"), path("b.h5"), "--out", path("ab.h5")});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path("b.h5") + ": its sweep table is of another study than " + path("a.h5")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("ab.h5")));

  // A file without a sweep table, and a missing file, are one line too.
  EXPECT_EQ(run_cli({"merge", path("none.h5"), "--out", path("ab.h5")}).status, 2);
  EXPECT_EQ(run_cli({"merge", "--out", path("ab.h5")}).status, 2);
}

TEST_F(SweepSplitTest, ShardMustBeKOfN) {
  const std::string study = write("s.yaml", "axes: {schedule: [1f1b], m: [8, 16]}\n");
  for (const char* bad : {"0/3", "4/3", "3", "1/0", "a/b", "1/3x", "-1/3"}) {
    const Outcome r =
        run_cli({"sweep", study, "--out", path("s.h5"), "--shard", bad, "--progress", "none"});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("option --shard: expected K/N"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("s.h5")));
}

// Sets environment variables for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old != nullptr ? std::optional<std::string>(old) : std::nullopt});
      value != nullptr ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_)
      old ? ::setenv(name.c_str(), old->c_str(), 1) : ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(SweepLaunch, TasksComeFromTheLaunchersEnvironment) {
  {
    const ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", nullptr},
                        {"PMI_SIZE", nullptr},
                        {"SLURM_PROCID", nullptr},
                        {"SLURM_STEP_NUM_TASKS", nullptr}};
    EXPECT_EQ(launched_tasks(), 1);
  }
  {
    const ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", "3"}, {"PMI_SIZE", nullptr}};
    EXPECT_EQ(launched_tasks(), 3);
  }
  {
    const ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", nullptr}, {"PMI_SIZE", "5"}};
    EXPECT_EQ(launched_tasks(), 5);
  }
  {
    // A Slurm batch script (no srun step) is one task; srun's tasks are several.
    const ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", nullptr},
                        {"PMI_SIZE", nullptr},
                        {"SLURM_PROCID", nullptr},
                        {"SLURM_STEP_NUM_TASKS", "64"}};
    EXPECT_EQ(launched_tasks(), 1);
    const ScopedEnv step{{"SLURM_PROCID", "7"}};
    EXPECT_EQ(launched_tasks(), 64);
  }
}

#ifndef BUBBLESIM_MPIEXEC
TEST(SweepLaunch, SeveralTasksWithoutMpiAreRefused) {
  const ScopedEnv env{{"OMPI_COMM_WORLD_SIZE", "4"}};
  const Outcome r = run_cli({"sweep", "study.yaml", "--out", "x.h5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("started as one of 4 tasks (mpirun or srun), but this bubblesim is built "
                       "without MPI"),
            std::string::npos)
      << r.err;
}
#endif

// mpirun ---------------------------------------------------------------------------------------

struct Job {
  int status = -1;  // the exit status of mpirun, or -1 when a signal ended it
  std::string out, err;
};

// Runs `argv` (a program and its arguments) with the settings mpirun needs as root on an
// oversubscribed 2-core CI runner, and LeakSanitizer off in the children (inside MPI ranks Open
// MPI's own allocations would count). `watch` sees standard error as it grows, and the child's
// pid; the child is killed after 120 s.
Job run_child(std::vector<std::string> argv,
              const std::function<void(const std::string& err, pid_t pid)>& watch = {}) {
  int out_pipe[2], err_pipe[2];
  EXPECT_EQ(::pipe(out_pipe), 0);
  EXPECT_EQ(::pipe(err_pipe), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      ::close(fd);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    // Containers often deny the cross-memory attach Open MPI tries first.
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string asan_options =
        std::string(asan != nullptr ? asan : "") + (asan != nullptr ? ":" : "") + "detect_leaks=0";
    ::setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
    std::vector<char*> c_argv;
    for (std::string& a : argv)
      c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Job job;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  for (int open = 2; open > 0;) {
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "mpirun ran over 120 s; killed";
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(fds, 2, 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      (i == 0 ? job.out : job.err).append(buffer, static_cast<std::size_t>(n));
      if (i == 1 && watch) watch(job.err, pid);
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  job.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return job;
}

// `mpirun -n RANKS bubblesim ARGS` (run_child).
Job run_mpi(int ranks, const std::vector<std::string>& args,
            const std::function<void(const std::string& err, pid_t pid)>& watch = {}) {
#ifdef BUBBLESIM_MPIEXEC
  std::vector<std::string> argv = {BUBBLESIM_MPIEXEC,     "--allow-run-as-root",
                                   "--oversubscribe",     "-n",
                                   std::to_string(ranks), BUBBLESIM_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_child(argv, watch);
#else
  (void)ranks, (void)args, (void)watch;
  return {};
#endif
}

#ifdef BUBBLESIM_MPIEXEC
#define REQUIRE_MPI() (void)0
#else
#define REQUIRE_MPI() \
  GTEST_SKIP()        \
      << "built without MPI (BUBBLESIM_WITH_MPI; apt-get install libopenmpi-dev openmpi-bin)"
#endif

// The largest "D/T configurations" count in a progress bar or line so far.
std::size_t progress_done(const std::string& err) {
  static const std::regex done(R"((\d+)/(\d+) configurations)");
  std::size_t most = 0;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), done); it != std::sregex_iterator();
       ++it) {
    most = std::max<std::size_t>(most, std::stoul((*it)[1].str()));
  }
  return most;
}

TEST_F(SweepSplitTest, TwoAndThreeRanksGiveTheSingleProcessTable) {
  REQUIRE_MPI();
  const std::string study = write("study.yaml", kCheapStudy);
  const std::vector<analysis::SweepRow> whole = single_run(study);
  ASSERT_EQ(whole.size(), kCheapConfigurations);
  for (const int ranks : {2, 3}) {
    const std::string out = path("ranks" + std::to_string(ranks) + ".h5");
    const Job job = run_mpi(ranks, {"sweep", study, "--out", out, "-j", "1", "--progress", "none"});
    ASSERT_EQ(job.status, 0) << job.err;
    EXPECT_NE(job.out.find("holds 3600 of 3600 configurations (3600 simulated now by " +
                           std::to_string(ranks) + " ranks"),
              std::string::npos)
        << job.out;
    EXPECT_EQ(std::count(job.out.begin(), job.out.end(), '\n'), 1) << "only rank 0 reports\n"
                                                                   << job.out;
    EXPECT_EQ(table(out), whole) << ranks << " ranks";
  }
}

// The pid of the process below `launcher` (its child under Open MPI 4's mpirun, a grandchild
// under launchers with a daemon) whose environment says it is MPI rank `rank`; -1 if none.
pid_t rank_pid(pid_t launcher, int rank) {
  std::map<pid_t, pid_t> parent;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 > line.size()) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    parent[static_cast<pid_t>(std::stol(name))] = ppid;
  }
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& [pid, ppid] : parent) {
    bool below = false;
    for (pid_t up = ppid; up > 1 && !below; up = parent.count(up) != 0 ? parent[up] : 0)
      below = up == launcher;
    if (!below) continue;
    std::ifstream environ("/proc/" + std::to_string(pid) + "/environ");
    for (std::string var; std::getline(environ, var, '\0');) {
      if (var == want) return pid;
    }
  }
  return -1;
}

TEST_F(SweepSplitTest, InterruptedMpiSweepResumesToTheSameTable) {
  REQUIRE_MPI();
  const std::string study = write("heavy.yaml", kHeavyStudy);
  const std::string out = path("heavy.h5");
  // SIGTERM to every rank, as Slurm sends at a job's time limit, once rank 0 counts finished
  // batches. (mpirun itself passes a SIGTERM on to the ranks only after 1 s: docs/sweeps.md.)
  bool signalled = false;
  const Job stopped = run_mpi(2, {"sweep", study, "--out", out, "-j", "1", "--progress", "bar"},
                              [&](const std::string& err, pid_t pid) {
                                if (!signalled && progress_done(err) > 0) {
                                  for (const int rank : {0, 1}) {
                                    const pid_t rank_process = rank_pid(pid, rank);
                                    if (rank_process > 0) ::kill(rank_process, SIGTERM);
                                  }
                                  signalled = true;
                                }
                              });
  ASSERT_TRUE(signalled) << "the sweep ended before its first rows: make the study bigger\n"
                         << stopped.err;
  EXPECT_NE(stopped.status, 0);
  EXPECT_NE(stopped.err.find("stopped by SIGTERM: rerun the same command"), std::string::npos)
      << stopped.err;
  const std::size_t kept = table(out).size();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, kHeavyConfigurations) << stopped.err;

  const Job resumed = run_mpi(2, {"sweep", study, "--out", out, "-j", "1", "--progress", "none"});
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("from the file"), std::string::npos) << resumed.out;
  EXPECT_EQ(table(out), single_run(study));
}

TEST_F(SweepSplitTest, SilentRankEndsTheJobKeepingTheFinishedRows) {
  REQUIRE_MPI();
  const std::string study = write("heavy.yaml", kHeavyStudy);
  const std::string out = path("heavy.h5");
  pid_t stopped_rank = -1;
  const Job job = run_mpi(
      3, {"sweep", study, "--out", out, "-j", "1", "--progress", "bar", "--rank-timeout", "3"},
      [&](const std::string& err, pid_t pid) {
        if (stopped_rank < 0 && progress_done(err) > 0) {
          stopped_rank = rank_pid(pid, 1);
          if (stopped_rank > 0) ::kill(stopped_rank, SIGSTOP);
        }
      });
  if (stopped_rank > 0) ::kill(stopped_rank, SIGKILL);  // if MPI_Abort left it behind
  ASSERT_GT(stopped_rank, 0) << "no rank 1 found, or the sweep ended first\n" << job.err;
  EXPECT_NE(job.status, 0);
  EXPECT_NE(job.err.find("bubblesim sweep: error: rank 1 on "), std::string::npos) << job.err;
  EXPECT_NE(job.err.find("sent nothing for"), std::string::npos) << job.err;
  const std::size_t kept = table(out).size();
  EXPECT_NE(job.err.find("keeps the " + std::to_string(kept) + " finished rows"), std::string::npos)
      << job.err;
  EXPECT_LT(kept, kHeavyConfigurations);
}

TEST_F(SweepSplitTest, RankDeathEndsTheJobKeepingTheFinishedRows) {
  REQUIRE_MPI();
  const std::string study = write("heavy.yaml", kHeavyStudy);
  const std::string out = path("heavy.h5");
  pid_t killed = -1;
  const Job job = run_mpi(3, {"sweep", study, "--out", out, "-j", "1", "--progress", "bar"},
                          [&](const std::string& err, pid_t pid) {
                            if (killed < 0 && progress_done(err) > 0) {
                              killed = rank_pid(pid, 2);
                              if (killed > 0) ::kill(killed, SIGKILL);
                            }
                          });
  ASSERT_GT(killed, 0) << "no rank 2 found, or the sweep ended first\n" << job.err;
  EXPECT_NE(job.status, 0);
  // mpirun names the rank that died; rank 0 saved its rows when mpirun ended the job.
  EXPECT_NE(job.err.find("rank 2"), std::string::npos) << job.err;
  const std::size_t kept = table(out).size();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, kHeavyConfigurations) << "the dead rank's batch cannot be in the table";
}

TEST_F(SweepSplitTest, BadStudyUnderMpiIsOneLineFromRankZero) {
  REQUIRE_MPI();
  const std::string study = write("bad.yaml", "axes: {schedule: [1f1b], colour: [red]}\n");
  const Job job = run_mpi(3, {"sweep", study, "--out", path("bad.h5")});
  EXPECT_EQ(job.status, 2) << job.err;
  const std::string line = "bubblesim sweep: error: " + study + ":1: key 'colour'";
  const std::size_t at = job.err.find(line);
  ASSERT_NE(at, std::string::npos) << job.err;
  EXPECT_EQ(job.err.find(line, at + 1), std::string::npos) << "one line, not one per rank\n"
                                                           << job.err;
  EXPECT_EQ(job.err.find("bubblesim sweep: error:", at + 1), std::string::npos) << job.err;
  EXPECT_FALSE(std::filesystem::exists(path("bad.h5")));
}

TEST_F(SweepSplitTest, AdviseUnderMpiPrintsTheSingleProcessRanking) {
  REQUIRE_MPI();
  const std::vector<std::string> args = {"advise",
                                         "--model",
                                         BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml",
                                         "--gpus",
                                         "8",
                                         "--microbatch-sizes",
                                         "1,2,4",
                                         "--chunks",
                                         "1,2",
                                         "--schedules",
                                         "1f1b,zb-h1,zb-v,1f1b-i,gpipe",
                                         "--progress",
                                         "none"};
  const Outcome single = run_cli(args);
  ASSERT_EQ(single.status, 0) << single.err;
  ASSERT_NE(single.out.find("66 configurations: 41 fit"), std::string::npos) << single.out;
  std::vector<std::string> per_rank = args;
  per_rank.insert(per_rank.end(), {"-j", "1"});
  const Job job = run_mpi(3, per_rank);
  ASSERT_EQ(job.status, 0) << job.err;
  EXPECT_EQ(job.out, single.out);
}

// SIGTERM (what Slurm sends at a time limit) stops a single-process sweep as Ctrl-C does.
TEST_F(SweepSplitTest, SigtermStopsASingleProcessSweepLeavingAResumableFile) {
  const std::string study = write("heavy.yaml", kHeavyStudy);
  const std::string out = path("heavy.h5");
  bool signalled = false;
  const Job stopped =
      run_child({BUBBLESIM_EXE, "sweep", study, "--out", out, "-j", "1", "--progress", "bar"},
                [&](const std::string& err, pid_t pid) {
                  if (!signalled && progress_done(err) > 0) {
                    ::kill(pid, SIGTERM);
                    signalled = true;
                  }
                });
  ASSERT_TRUE(signalled) << "the sweep ended before its first rows: make the study bigger\n"
                         << stopped.err;
  EXPECT_EQ(stopped.status, 128 + SIGTERM) << stopped.out << stopped.err;
  EXPECT_NE(stopped.out.find("stopped by SIGTERM: rerun the same command"), std::string::npos)
      << stopped.out;
  const std::size_t kept = table(out).size();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, kHeavyConfigurations);
  const Outcome resumed = run_cli({"sweep", study, "--out", out, "--progress", "none"});
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(std::to_string(kept) + " from the file"), std::string::npos)
      << resumed.out;
  EXPECT_EQ(table(out), single_run(study));
}

}  // namespace
}  // namespace bubblesim::cli
