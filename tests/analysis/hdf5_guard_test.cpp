// The HDF5 guard (analysis/hdf5_guard.h) on a file that crashes libhdf5.
#include "analysis/hdf5_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

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

}  // namespace
}  // namespace bubblesim::analysis::hdf5
