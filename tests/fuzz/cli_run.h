// Shared by the libFuzzer targets that run whole commands (options, profile_values,
// results_values): the rule every command keeps on any input.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

namespace bubblesim::fuzz {

// Runs the command line `args` (without "bubblesim") as the program would, and aborts (a finding)
// unless it succeeds or refuses its input with one line on standard error and exit status 2.
inline void run_cli_cleanly(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = cli::run(args, out, err);
  const std::string e = err.str();
  const auto lines = std::count(e.begin(), e.end(), '\n');
  if (status == 2 && lines != 1) std::abort();   // bad input: one line
  if (status != 0 && status != 2) std::abort();  // no internal errors
}

}  // namespace bubblesim::fuzz
