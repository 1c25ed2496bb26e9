#include "analysis/hdf5_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "sim/error.h"

namespace bubblesim::analysis::hdf5 {

namespace {

// The child's exit status for a value that claims more bytes than the file can hold.
constexpr int kOverBudget = 3;

// Set in the guard's child while it rehearses the caller's read (a process of its own: no
// state shared with the parent).
bool in_rehearsal = false;

// The largest value read in the child: deflate expands at most about 1032:1, so a dataset
// claiming more than that of the file's size (plus slack) is damaged, and reading it would
// only exhaust memory.
struct Budget {
  std::uintmax_t max_bytes;
};

// false only for a value that claims more bytes than the file can hold. Values libhdf5 refuses
// with an error are passed over: the reader reports them in one line if it needs them (a
// filter this libhdf5 lacks is no damage).
bool read_values(hid_t object, hid_t type, hid_t space, bool dataset, const Budget& budget) {
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  const std::size_t size = H5Tget_size(type);
  if (points <= 0 || size == 0) return true;
  if (static_cast<std::uintmax_t>(points) > budget.max_bytes / size) return false;
  std::vector<unsigned char> buffer(static_cast<std::size_t>(points) * size);
  const herr_t read = dataset ? H5Dread(object, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data())
                              : H5Aread(object, type, buffer.data());
  if (read < 0) return true;
  if (H5Tdetect_class(type, H5T_VLEN) > 0 ||
      (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) ||
      H5Tdetect_class(type, H5T_STRING) > 0) {
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer.data());
  }
  return true;
}

bool read_attributes(hid_t object, const Budget& budget) {
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_NUM_ATTRS) < 0) return true;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const hid_t attribute =
        H5Aopen_by_idx(object, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t any = attribute >= 0 ? attribute
                                     : H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_INC, i,
                                                      H5P_DEFAULT, H5P_DEFAULT);
    if (any < 0) continue;
    const hid_t type = H5Aget_type(any);
    const hid_t space = H5Aget_space(any);
    const bool ok = type < 0 || space < 0 || read_values(any, type, space, false, budget);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    H5Aclose(any);
    if (!ok) return false;
  }
  return true;
}

struct Walk {
  Budget budget;
  bool ok = true;
};

herr_t visit(hid_t group, const char* name, const H5L_info_t* link, void* data) {
  Walk& walk = *static_cast<Walk*>(data);
  if (link->type != H5L_TYPE_HARD) return 0;  // soft and external links: not followed
  const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object < 0) return 0;
  bool ok = read_attributes(object, walk.budget);
  if (ok && H5Iget_type(object) == H5I_DATASET) {
    const hid_t type = H5Dget_type(object);
    const hid_t space = H5Dget_space(object);
    ok = type < 0 || space < 0 || read_values(object, type, space, true, walk.budget);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
  }
  H5Oclose(object);
  if (!ok) {
    walk.ok = false;
    return -1;
  }
  return 0;
}

// The child's work: 0 when everything read.
int read_everything(const std::string& path, std::uintmax_t file_bytes) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return 0;  // not openable at all: the reader says so itself, in one line
  Walk walk{{file_bytes * 1100 + (std::uintmax_t{64} << 20)}};
  walk.ok = read_attributes(file, walk.budget);
  if (walk.ok) H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, visit, &walk);
  H5Fclose(file);
  return walk.ok ? 0 : kOverBudget;
}

// The threads of this process (Linux: the entries of /proc/self/task); 0 when unknown.
std::size_t thread_count() {
  std::error_code ec;
  std::size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return ec ? 0 : n;
}

// How the child that reads the file ended: its wait status, or out of time (killed), or not
// run (fork or waitpid failed).
struct Child {
  enum Ran { kNotRun, kOutOfTime, kEnded } ran = kNotRun;
  int status = 0;
};

// Reads every object of the file at `path` (`bytes` long), then runs `rehearse`, in a child
// process given `limit_s` seconds.
Child run_child(const std::string& path, std::uintmax_t bytes, double limit_s,
                const std::function<void()>& rehearse) {
  const pid_t child = ::fork();
  if (child < 0) return {};
  if (child == 0) {
    // Nothing of libhdf5's reaches the terminal, and nothing of the parent's runs at exit. A
    // crash ends the child by its signal: crash handlers inherited from the parent (a
    // sanitizer's, libFuzzer's) would report it as the process's own (libFuzzer saved caught
    // libhdf5 crashes as its findings).
    for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      ::signal(signal, SIG_DFL);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    const int status = read_everything(path, bytes);
    if (status == 0 && rehearse) {
      in_rehearsal = true;
      try {
        rehearse();
      } catch (...) {
        // The caller's error: the process reports it when it reads the file itself.
      }
    }
    ::_exit(status);
  }
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(50);
  Child out;
  for (;;) {
    const pid_t done = ::waitpid(child, &out.status, WNOHANG);
    if (done == child) break;
    if (done < 0) return {};
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit_s) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &out.status, 0);
      out.ran = Child::kOutOfTime;
      return out;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  out.ran = Child::kEnded;
  return out;
}

}  // namespace

std::string damaged_file_problem(const std::string& path, const std::function<void()>& rehearse) {
  if (in_rehearsal) return "";
  // BUBBLESIM_HDF5_GUARD: "0" turns the guard off; a positive number of seconds replaces the
  // base of its time limit (5 s).
  double base_s = 5.0;
  if (const char* guard = std::getenv("BUBBLESIM_HDF5_GUARD"); guard != nullptr) {
    if (std::strcmp(guard, "0") == 0) return "";
    const double seconds = std::strtod(guard, nullptr);
    if (seconds > 0 && seconds < 1e6) base_s = seconds;
  }
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) return "";  // the reader names what is wrong with the path
  // Reading a sound file takes milliseconds per MB; the limit only has to catch endless loops.
  // 5 s + 2 MB/s is far below any build's reading rate, sanitizer builds on busy machines
  // included (1 s was not: a sanitizer build under load took it for a hang).
  const double limit_s = base_s + static_cast<double>(bytes) / 2e6;
  // A fork copies every lock as it is, and only the forking thread: where another thread held
  // one the child needs (a sanitizer build's allocator, which clang 14 does not lock around
  // fork), the child waits forever. Seen once in the sanitized tests: a sweep's workers
  // allocating while one of them checked a sound profile. With other threads about, a child
  // that runs out of time gets a second try; an endless loop in libhdf5 runs out twice.
  const bool other_threads = thread_count() != 1;
  Child child = run_child(path, bytes, limit_s, rehearse);
  if (child.ran == Child::kOutOfTime && other_threads)
    child = run_child(path, bytes, limit_s, rehearse);
  switch (child.ran) {
    case Child::kNotRun:
      return "";  // cannot check: read as before
    case Child::kOutOfTime:
      return fmt::format(
          "damaged: libhdf5 did not finish reading it within {:.1f} s (an endless loop on "
          "corrupted metadata?)",
          limit_s);
    case Child::kEnded:
      break;
  }
  const int status = child.status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kOverBudget) {
    return "damaged: one of its objects claims more data than the file can hold";
  }
  if (WIFSIGNALED(status)) {
    return "damaged: libhdf5 crashed reading it (signal " + std::to_string(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    // A sanitizer build reports a crash and exits (ASan: status 1).
    return "damaged: libhdf5 crashed reading it (exit status " +
           std::to_string(WEXITSTATUS(status)) + ")";
  }
  return "";
}

}  // namespace bubblesim::analysis::hdf5
