// Paths a test or fuzz process made and removes when it exits (shared by tests/temp_path.h
// and tests/fuzz/fuzz_input.h), so that runs leave nothing behind in the temporary folder.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace bubblesim::testing {

// Each path added once; at the owner's exit (a function-local static's destructor: exit()
// runs it, a crash does not) every path is removed, file or folder. A forked child that
// exits leaves its parent's paths alone (it ends with _exit() here, and its pid differs).
class RemovedAtExit {
 public:
  void add(const std::string& path) {
    for (const std::string& known : paths_) {
      if (known == path) return;
    }
    paths_.push_back(path);
  }
  ~RemovedAtExit() {
    if (::getpid() != owner_) return;
    for (const std::string& path : paths_) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  }

 private:
  pid_t owner_ = ::getpid();
  std::vector<std::string> paths_;
};

}  // namespace bubblesim::testing
