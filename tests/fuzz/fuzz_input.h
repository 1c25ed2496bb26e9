// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp, built with -DBUBBLESIM_FUZZ=ON): the
// fuzzer's bytes as a file, for readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/removed_at_exit.h"

namespace bubblesim::fuzz {

// A path of this process in the temporary folder ($TMPDIR, else /tmp), ending in `suffix`: the
// same path for the same suffix on every call. The file is removed at exit.
inline std::string temporary_path(const char* suffix) {
  static testing::RemovedAtExit written;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/bubblesim-fuzz-" +
                           std::to_string(::getpid()) + suffix;
  written.add(path);
  return path;
}

// Writes `data` to temporary_path(suffix) and returns the path.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  const std::string path = temporary_path(suffix);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  return path;
}

}  // namespace bubblesim::fuzz
