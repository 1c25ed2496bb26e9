// `bubblesim profile [options] -- COMMAND...`: runs COMMAND with libbubblesim_cupti.so injected
// (CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH), every process it starts writing its own
// profile file into the output folder.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/error.h"
#include "traces/labels.h"

namespace bubblesim::cli {

namespace {

constexpr const char* kProfileUsage =
    R"(usage: bubblesim profile [--out DIR] [--library PATH] [--label-regex REGEX]
                         [--flush-steps N] -- COMMAND [ARGS...]

Runs COMMAND (e.g. python train.py, torchrun ..., bubblesim-workload) with the CUPTI profiler
libbubblesim_cupti.so injected through CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH. Every
CUDA process it starts (every torchrun rank) writes DIR/bubblesim-profile.rank<R>.pid<P>.json
at exit; read them with 'bubblesim import DIR/*.json'. Exits with COMMAND's status.

options:
  --out DIR            output folder, created if missing (default: bubblesim-profile)
  --library PATH       the injection library (default: $BUBBLESIM_CUPTI_LIBRARY, else
                       libbubblesim_cupti.so next to the bubblesim executable, where the build
                       puts it)
  --label-regex REGEX  which NVTX ranges are passes (as 'bubblesim import --label-regex');
                       default PyTorch's PP:<stage><F|I|W|B><microbatch>
  --flush-steps N      also rewrite the files every N steps (NVTX ranges named step*)
)";

std::string default_library() {
  if (const char* env = std::getenv("BUBBLESIM_CUPTI_LIBRARY"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto next_to = exe.parent_path() / "libbubblesim_cupti.so";
    if (std::filesystem::exists(next_to)) return next_to.string();
  }
  return {};
}

}  // namespace

int cmd_profile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string dir = "bubblesim-profile", library, label_regex, flush_steps;
  std::vector<std::string> command;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      out << kProfileUsage;
      return 0;
    }
    std::string* value = a == "--out"           ? &dir
                         : a == "--library"     ? &library
                         : a == "--label-regex" ? &label_regex
                         : a == "--flush-steps" ? &flush_steps
                                                : nullptr;
    if (value == nullptr) {
      throw InvalidArgument("unknown option '" + a + "' (the command goes after '--')");
    }
    if (i + 1 >= args.size()) throw InvalidArgument("option " + a + ": expected a value");
    *value = args[++i];
  }
  if (command.empty()) {
    throw InvalidArgument("give the command to profile after '--' (see --help)");
  }
  if (dir.empty()) throw InvalidArgument("option --out: expected a folder");
  if (!label_regex.empty()) traces::RegexLabeller check(label_regex);  // throws when invalid
  if (!flush_steps.empty() && (flush_steps.find_first_not_of("0123456789") != std::string::npos ||
                               flush_steps.size() > 9)) {
    throw InvalidArgument("option --flush-steps: expected a count, got '" + flush_steps + "'");
  }
  if (library.empty()) library = default_library();
  if (library.empty()) {
    throw InvalidArgument(
        "libbubblesim_cupti.so not found: this bubblesim was built without the CUDA toolkit "
        "and CUPTI (give --library PATH or set BUBBLESIM_CUPTI_LIBRARY)");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(library, ec)) {
    throw InvalidArgument("option --library: '" + library + "' is not a file");
  }
  library = std::filesystem::absolute(library).string();
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InvalidArgument("option --out: cannot create folder '" + dir + "': " + ec.message());
  }
  dir = std::filesystem::absolute(dir).string();

  out << std::flush;
  err << std::flush;
  const pid_t child = fork();
  if (child < 0) throw Error(std::string("cannot start the command: ") + std::strerror(errno));
  if (child == 0) {
    setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
    setenv("BUBBLESIM_PROFILE_DIR", dir.c_str(), 1);
    if (!label_regex.empty()) setenv("BUBBLESIM_PROFILE_LABEL_REGEX", label_regex.c_str(), 1);
    if (!flush_steps.empty()) setenv("BUBBLESIM_PROFILE_FLUSH_STEPS", flush_steps.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& word : command)
      argv.push_back(word.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const std::string message =
        "bubblesim profile: error: cannot run '" + command[0] + "': " + std::strerror(errno) + "\n";
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("waitpid: ") + std::strerror(errno));
  }
  err << "bubblesim profile: profiles in " << dir << " (read them with 'bubblesim import " << dir
      << "/*.json')\n";
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace bubblesim::cli
