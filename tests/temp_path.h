// Temporary files for tests, unique to the test process: ctest runs tests in parallel, and the
// release and sanitizer suites may run at the same time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace bubblesim::testing {

// The paths temp_path gave out, removed (files or folders) when the process that asked for
// them exits, so that test runs leave nothing behind in TempDir(). A forked child that exits
// leaves its parent's paths alone.
class TempPaths {
 public:
  void add(const std::string& path) {
    for (const std::string& known : paths_) {
      if (known == path) return;
    }
    paths_.push_back(path);
  }
  ~TempPaths() {
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

// TempDir()/bubblesim_<pid>_<name>, removed at exit.
inline std::string temp_path(const std::string& name) {
  static TempPaths given;
  std::string path = ::testing::TempDir() + "bubblesim_" + std::to_string(::getpid()) + "_" + name;
  given.add(path);
  return path;
}

// A fixture with a fresh, empty folder per test and process, removed after the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // NAME inside the test's folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace bubblesim::testing
