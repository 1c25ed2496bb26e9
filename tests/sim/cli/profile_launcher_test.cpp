// `bubblesim profile`: the launcher's environment, exit status and errors. Runs without CUDA: the
// "library" is any file (the command here never loads it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/sim/cli/cli_test_util.h"

namespace bubblesim::cli {
namespace {

using testing::run_cli;

std::filesystem::path temp_dir() {
  return std::filesystem::temp_directory_path() /
         ("bubblesim_profile_cli_test_" + std::to_string(getpid()));
}

std::string fake_library() {
  const auto path = temp_dir().string() + "-lib.so";
  std::ofstream(path) << "not a library";
  return path;
}

TEST(ProfileCommand, SetsTheInjectionEnvironmentAndReturnsTheStatus) {
  const auto dir = temp_dir() / "out";
  std::filesystem::remove_all(temp_dir());
  const std::string lib = fake_library();
  const auto env_file = temp_dir().string() + "-env.txt";
  const auto r =
      run_cli({"profile", "--out", dir.string(), "--library", lib, "--label-regex",
               "(?<pass>F|B|W)(?<microbatch>\\d+)", "--flush-steps", "4", "--", "sh", "-c",
               "echo \"$CUDA_INJECTION64_PATH|$NVTX_INJECTION64_PATH|"
               "$BUBBLESIM_PROFILE_DIR|$BUBBLESIM_PROFILE_LABEL_REGEX|"
               "$BUBBLESIM_PROFILE_FLUSH_STEPS\" > " +
                   env_file + "; exit 3"});
  EXPECT_EQ(r.status, 3) << r.err;
  std::ifstream in(env_file);
  std::string line;
  std::getline(in, line);
  const std::string abs_lib = std::filesystem::absolute(lib).string();
  EXPECT_EQ(line, abs_lib + "|" + abs_lib + "|" + std::filesystem::absolute(dir).string() +
                      "|(?<pass>F|B|W)(?<microbatch>\\d+)|4");
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_NE(r.err.find("bubblesim import " + std::filesystem::absolute(dir).string() + "/*.json"),
            std::string::npos);
  std::filesystem::remove_all(temp_dir());
  std::filesystem::remove(lib);
  std::filesystem::remove(env_file);
}

TEST(ProfileCommand, BadUsageIsOneLineAndStatus2) {
  const std::string lib = fake_library();
  const auto no_command = run_cli({"profile", "--library", lib});
  EXPECT_EQ(no_command.status, 2);
  EXPECT_EQ(no_command.err,
            "bubblesim profile: error: give the command to profile after '--' (see --help)\n");
  const auto missing = run_cli({"profile", "--library", "/nonexistent/lib.so", "--", "true"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err,
            "bubblesim profile: error: option --library: '/nonexistent/lib.so' is not a file\n");
  const auto regex = run_cli({"profile", "--library", lib, "--label-regex", "F(", "--", "true"});
  EXPECT_EQ(regex.status, 2);
  EXPECT_NE(regex.err.find("bubblesim profile: error: "), std::string::npos);
  const auto steps = run_cli({"profile", "--library", lib, "--flush-steps", "x", "--", "true"});
  EXPECT_EQ(steps.status, 2);
  EXPECT_EQ(steps.err,
            "bubblesim profile: error: option --flush-steps: expected a count, got 'x'\n");
  const auto unknown = run_cli({"profile", "--bogus"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err,
            "bubblesim profile: error: unknown option '--bogus' (the command goes after '--')\n");
  std::filesystem::remove(lib);
}

TEST(ProfileCommand, UnrunnableCommandExits127) {
  const std::string lib = fake_library();
  const auto dir = temp_dir() / "out127";
  const auto r =
      run_cli({"profile", "--out", dir.string(), "--library", lib, "--", "/nonexistent/program"});
  EXPECT_EQ(r.status, 127);
  std::filesystem::remove_all(temp_dir());
  std::filesystem::remove(lib);
}

}  // namespace
}  // namespace bubblesim::cli
