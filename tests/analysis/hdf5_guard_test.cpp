// The HDF5 guard (analysis/hdf5_guard.h) on a file that crashes libhdf5, a rehearsal of the
// caller's read, and a child that hangs.
#include "analysis/hdf5_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/temp_path.h"

namespace bubblesim::analysis::hdf5 {
namespace {

int marker_fd = -1;

void parent_handler(int /*signal*/) {
  const char mark = 'x';
  [[maybe_unused]] const ssize_t written = ::write(marker_fd, &mark, 1);
  ::_exit(3);
}

// The child reading the file dies by libhdf5's SIGSEGV itself: a crash handler the process had
// (a sanitizer's, libFuzzer's, here one that leaves a mark in a pipe) does not run in it, so it
// cannot report the caught crash as the process's own (libFuzzer saved such files as findings).
TEST(Hdf5Guard, ACrashEndsTheChildByItsSignalNotByTheParentsHandler) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  marker_fd = fds[1];
  struct sigaction ours = {}, old = {};
  ours.sa_handler = parent_handler;
  ASSERT_EQ(::sigaction(SIGSEGV, &ours, &old), 0);
  const std::string problem = damaged_file_problem(
      std::string(BUBBLESIM_SOURCE_DIR) + "/tests/fuzz/corpus/results_h5/libhdf5-crash-1.h5");
  ::sigaction(SIGSEGV, &old, nullptr);
  char mark = 0;
  EXPECT_EQ(::read(fds[0], &mark, 1), -1) << "the parent's handler ran in the child";
  EXPECT_EQ(problem, "damaged: libhdf5 crashed reading it (signal 11)");
  ::close(fds[0]);
  ::close(fds[1]);
}

// The child rehearses the caller's read after its own: a crash there (libhdf5 converting into
// the reader's types, which the child's reads in the file's own types do not do) refuses the
// file; what the rehearsal throws is the caller's to report (the file passes); and within a
// rehearsal the guard does not fork again.
TEST(Hdf5Guard, TheChildRehearsesTheCallersRead) {
  const std::string sound =
      std::string(BUBBLESIM_SOURCE_DIR) + "/tests/fuzz/corpus/profile_h5/p1.h5";
  EXPECT_EQ(damaged_file_problem(sound, [] { ::raise(SIGSEGV); }),
            "damaged: libhdf5 crashed reading it (signal 11)");
  EXPECT_EQ(damaged_file_problem(sound, [] { throw std::runtime_error("the reader's error"); }),
            "");
  EXPECT_EQ(
      damaged_file_problem(sound,
                           [&] {
                             // Nested: "" at once, else this would be a crash.
                             if (!damaged_file_problem(sound, [] { ::raise(SIGSEGV); }).empty()) {
                               ::raise(SIGSEGV);
                             }
                           }),
      "");
  EXPECT_EQ(damaged_file_problem(sound), "");
}

// A fork copies every lock as it stands and only the forking thread: where another thread held
// a lock the child needs, the child waits forever (clang 14's AddressSanitizer does not lock
// its allocator around fork: a sound file's check, beside two allocating threads, hung once in
// 300). With other threads in the process, a child that runs out of time gets a second try.
// Here the first child hangs on purpose, the second passes.
TEST(Hdf5Guard, AChildOutOfTimeIsTriedAgainWhereOtherThreadsRun) {
  const std::string sound =
      std::string(BUBBLESIM_SOURCE_DIR) + "/tests/fuzz/corpus/profile_h5/p1.h5";
  const std::string mark = bubblesim::testing::temp_path("guard_first_child");
  std::filesystem::remove(mark);
  const char* old = std::getenv("BUBBLESIM_HDF5_GUARD");
  const std::string old_value = old != nullptr ? old : "";
  ::setenv("BUBBLESIM_HDF5_GUARD", "1", 1);  // a limit of 1 s
  std::atomic<bool> done{false};
  std::thread other([&] {
    while (!done)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string problem = damaged_file_problem(sound, [&] {
    if (std::filesystem::exists(mark)) return;
    std::ofstream(mark) << "the first child was here";
    for (;;)
      ::pause();  // until the parent kills it
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  other.join();
  if (old != nullptr) {
    ::setenv("BUBBLESIM_HDF5_GUARD", old_value.c_str(), 1);
  } else {
    ::unsetenv("BUBBLESIM_HDF5_GUARD");
  }
  EXPECT_EQ(problem, "");
  EXPECT_TRUE(std::filesystem::exists(mark));  // the first child ran, and ran out of time
  EXPECT_GE(seconds, 1.0);
  std::filesystem::remove(mark);
}

}  // namespace
}  // namespace bubblesim::analysis::hdf5
