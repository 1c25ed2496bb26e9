// The `bubblesim` command line as a function, so tests can run it in-process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace bubblesim::cli {

// Runs one command: `args` is what follows the program name ({"compare", "-p", "4"}).
// Results go to `out`; errors go to `err` as one line. Returns the exit status: 0 on success,
// 2 for bad input (options, schedules), 1 for an internal error.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace bubblesim::cli
