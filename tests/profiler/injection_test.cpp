// The injection library in a child process (bubblesim_cupti_probe) on this machine: with no GPU
// it must initialise, disable itself with one log line, and return control. Built only with
// the CUDA toolkit.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct ChildRun {
  int status = -1;
  std::string output;
};

ChildRun run(const std::string& command) {
  ChildRun r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::filesystem::path temp_dir(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / (std::string(name) + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The child's environment: no injection inherited from outside, the output folder, a rank. (In
// the sanitizer build the child inherits ASAN_OPTIONS, leak checking included.)
std::string env(const std::filesystem::path& dir) {
  return "BUBBLESIM_PROFILE_DIR=" + dir.string() +
         " RANK=5 CUDA_INJECTION64_PATH= NVTX_INJECTION64_PATH= ";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfilerInjection, DlopenWithoutGpuDisablesItselfAndReturns) {
  if (run(BUBBLESIM_PROBE " devices").status == 0) GTEST_SKIP() << "a GPU is present";
  const auto dir = temp_dir("bubblesim_injection_test");
  const ChildRun r = run(env(dir) + BUBBLESIM_PROBE " dlopen " BUBBLESIM_CUPTI_LIBRARY);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("InitializeInjection returned 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("second call returned 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("status: disabled: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("host continues\n"), std::string::npos) << r.output;
  // One log line says why, once.
  const std::string marker = "; profiling disabled, the process continues";
  const std::size_t first = r.output.find(marker);
  EXPECT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(marker, first + 1), std::string::npos) << r.output;
  // The file says so too, with rank and pid in its name.
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    file = e.path();
  ASSERT_FALSE(file.empty()) << r.output;
  EXPECT_EQ(file.filename().string().rfind("bubblesim-profile.rank5.pid", 0), 0u);
  rapidjson::Document d;
  d.Parse(read(file).c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& h = d["bubblesim_profiler"];
  EXPECT_EQ(std::string(h["status"].GetString()).rfind("disabled: ", 0), 0u);
  EXPECT_EQ(h["cupti_api_version"].GetUint() / 10000, 13u);
  EXPECT_EQ(h["rank"].GetInt(), 5);
  EXPECT_EQ(h["counters"]["cupti_errors"].GetUint64(), 1u);
  EXPECT_EQ(d["traceEvents"].Size(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(ProfilerInjection, NvtxInjectionTracksRangesAcrossThreads) {
  const auto dir = temp_dir("bubblesim_injection_nvtx_test");
  const ChildRun r = run(env(dir) + "NVTX_INJECTION64_PATH=" BUBBLESIM_CUPTI_LIBRARY
                                    " " BUBBLESIM_PROBE " nvtx " BUBBLESIM_CUPTI_LIBRARY);
  ASSERT_EQ(r.status, 0) << r.output;
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    file = e.path();
  ASSERT_FALSE(file.empty()) << r.output;
  rapidjson::Document d;
  d.Parse(read(file).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["bubblesim_profiler"]["status"].GetString(), "not initialised");
  const auto& events = d["traceEvents"];
  ASSERT_EQ(events.Size(), 3u);
  EXPECT_STREQ(events[0]["name"].GetString(), "PP:1F2");
  EXPECT_STREQ(events[1]["name"].GetString(), "PP:1W0");
  EXPECT_STREQ(events[2]["name"].GetString(), "PP:1F3");
  EXPECT_NE(events[0]["tid"].GetInt64(), events[1]["tid"].GetInt64());  // two threads
  EXPECT_EQ(events[0]["tid"].GetInt64(), events[2]["tid"].GetInt64());
  EXPECT_FALSE(events[0]["args"].HasMember("open"));
  EXPECT_TRUE(events[2]["args"]["open"].GetBool());
  for (const auto& e : events.GetArray()) {
    EXPECT_STREQ(e["cat"].GetString(), "user_annotation");
    EXPECT_EQ(e["pid"].GetInt64(), d["bubblesim_profiler"]["pid"].GetInt64());
  }
  EXPECT_EQ(d["bubblesim_profiler"]["counters"]["unbalanced_pops"].GetUint64(), 0u);
  std::filesystem::remove_all(dir);
}

// The file of a process that _exits after the flush: what the step count or the signal wrote.
void expect_flushed_one_range(const ChildRun& r, const std::filesystem::path& dir,
                              const char* said) {
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(said), std::string::npos) << r.output;
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    file = e.path();
  ASSERT_EQ(file.extension(), ".json") << r.output;
  rapidjson::Document d;
  d.Parse(read(file).c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_EQ(d["traceEvents"].Size(), 1u);
  EXPECT_STREQ(d["traceEvents"][0]["name"].GetString(), "PP:0F0");
}

TEST(ProfilerInjection, FlushEveryNSteps) {
  const auto dir = temp_dir("bubblesim_injection_steps_test");
  const ChildRun r = run(env(dir) + "BUBBLESIM_PROFILE_FLUSH_STEPS=1 NVTX_INJECTION64_PATH=" +
                         BUBBLESIM_CUPTI_LIBRARY + " " + BUBBLESIM_PROBE + " steps");
  expect_flushed_one_range(r, dir, "written after a step");
  std::filesystem::remove_all(dir);
}

TEST(ProfilerInjection, FlushOnTheSignal) {
  const auto dir = temp_dir("bubblesim_injection_signal_test");
  const ChildRun r =
      run(env(dir) + "BUBBLESIM_PROFILE_FLUSH_SIGNAL=" + std::to_string(SIGUSR1) +
          " NVTX_INJECTION64_PATH=" + BUBBLESIM_CUPTI_LIBRARY + " " + BUBBLESIM_PROBE + " signal");
  expect_flushed_one_range(r, dir, "written on the signal");
  std::filesystem::remove_all(dir);
}

}  // namespace
