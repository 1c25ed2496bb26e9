// The command-line option parser: the bytes are split at NUL or newline into arguments of
// `bubblesim simulate` or `compare` (the first byte picks the command). Arguments that would write
// files or run long (outputs, --exact, --samples) are dropped, also where abbreviated, and sizes
// are capped by --max-memory. The schedule searches are left out too: they spend seconds at the
// default sizes in a release build (v-half at p = 8, m = 24: 2 s), minutes under the fuzzer's
// instrumentation. Words naming a V schedule or `all` are dropped, compare gets a list of three
// when no schedule is given, and zb-1p/2p/auto run with --no-improve. So each input runs in
// milliseconds to a second. Bad input must be an exit status of 2 with one line.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/fuzz/cli_run.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::string> args = {data[0] % 2 == 0 ? "simulate" : "compare"};
  std::string word;
  const auto flush = [&] {
    static const char* kDropped[] = {
        "--out",           "--trace-json", "--write-schedule",  "--html",       "--svg",
        "--exact",         "--samples",    "--mem-limit-sweep", "--max-memory", "--profile",
        "--schedule-file", "--model",      "--cluster",         "--no-i"};
    // The option itself, or an abbreviation of it (Boost takes unique prefixes: `--ou FILE`
    // wrote results files into the fuzzer's working folder), with or without `=value`.
    const std::string name = word.substr(0, word.find('='));
    for (const char* d : kDropped) {
      if (word.rfind(d, 0) == 0 ||
          (name.size() > 2 && name.rfind("--", 0) == 0 && std::string(d).rfind(name, 0) == 0))
        word.clear();
    }
    for (const char* slow : {"zb-v", "v-half", "v-min", "all"}) {
      if (word.find(slow) != std::string::npos) word.clear();
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
  // Whether an argument starts with one of `prefixes`: -s, --schedule or an abbreviation of it
  // (Boost takes unique prefixes).
  const auto given = [&](std::initializer_list<const char*> prefixes) {
    return std::any_of(args.begin() + 1, args.end(), [&](const std::string& w) {
      return std::any_of(prefixes.begin(), prefixes.end(),
                         [&](const char* prefix) { return w.rfind(prefix, 0) == 0; });
    });
  };
  // Right after the command, where no option of the input can take them as its value (an
  // input ending in --gpu once made --no-improve the GPU's name, and the improver ran for
  // minutes under the sanitizers).
  std::vector<std::string> fixed = {"--max-memory", "0.05", "--no-improve"};
  if (args[0] == "compare" && !given({"-s", "--sc"})) {
    fixed.push_back("-s");
    fixed.push_back("1f1b,zb-h1,zb-2p");
  }
  args.insert(args.begin() + 1, fixed.begin(), fixed.end());
  bubblesim::fuzz::run_cli_cleanly(args);
  return 0;
}
