// A file name for a test, unique to the test process: ctest runs tests in parallel, and the
// release and sanitizer suites may run at the same time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace bubblesim::testing {

// TempDir()/bubblesim_<pid>_<name>.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bubblesim_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace bubblesim::testing
