// The command-line option parser: the bytes are split at NUL or newline into arguments of
// `bubblesim simulate` or `compare` (the first byte picks the command).
// Arguments that would write files or run long (outputs, --exact, --samples) are dropped, and
// sizes are capped by --max-memory, so each input runs in milliseconds. Bad input must be an
// exit status of 2 with one line.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::string> args = {data[0] % 2 == 0 ? "simulate" : "compare"};
  std::string word;
  const auto flush = [&] {
    static const char* kDropped[] = {
        "--out",           "--trace-json", "--write-schedule",  "--html",       "--svg",
        "--exact",         "--samples",    "--mem-limit-sweep", "--max-memory", "--profile",
        "--schedule-file", "--model",      "--cluster"};
    for (const char* d : kDropped) {
      if (word.rfind(d, 0) == 0) word.clear();
    }
    if (!word.empty()) args.push_back(word);
    word.clear();
  };
  for (std::size_t i = 1; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  if (args.size() > 40) return 0;
  args.push_back("--max-memory");
  args.push_back("0.05");
  std::ostringstream out, err;
  const int status = bubblesim::cli::run(args, out, err);
  const std::string e = err.str();
  const auto lines = static_cast<int>(std::count(e.begin(), e.end(), '\n'));
  if (status == 2 && lines != 1) std::abort();   // bad input: one line
  if (status != 0 && status != 2) std::abort();  // no internal errors
  return 0;
}
