#include <iostream>

#include "sim/cli/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return bubblesim::cli::run(args, std::cout, std::cerr);
}
