// Temporary files for tests, unique to the test process: ctest runs tests in parallel, and the
// release and sanitizer suites may run at the same time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/removed_at_exit.h"

namespace bubblesim::testing {

// TempDir()/bubblesim_<pid>_<name>, removed at exit.
inline std::string temp_path(const std::string& name) {
  static RemovedAtExit given;
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
