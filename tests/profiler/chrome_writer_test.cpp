#include "profiler/chrome_writer.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "profiler_fixture.h"
#include "traces/kineto_trace.h"

namespace bubblesim::profiler {
namespace {

Capture fixture_capture() {
  Collector c(std::make_unique<traces::PipeliningLabeller>(), {});
  testing::feed_fixture(c);
  Capture capture = c.snapshot(99999);
  capture.header.pid = 4242;
  capture.header.rank = 3;
  capture.header.status = "ok";
  capture.header.cupti_api_version = 130001;
  capture.header.devices = {DeviceName{0, "NVIDIA Test GPU"}};
  capture.counters.dropped_records = 2;
  capture.counters.zero_timestamp_records = 5;
  return capture;
}

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("bubblesim_writer_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ProfilerWriter, FixtureImportsToExactlyTheExpectedProfile) {
  const std::string path = temp_dir() + "/" + profile_file_name(fixture_capture().header);
  EXPECT_EQ(std::filesystem::path(path).filename(), "bubblesim-profile.rank3.pid4242.json");
  write_chrome_trace_file(fixture_capture(), path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const traces::Profile p = traces::import_kineto_traces({path}, traces::PipeliningLabeller());
  ASSERT_EQ(p.passes.size(), 3u);
  const traces::PassSample& f = p.passes[0];
  EXPECT_EQ(f.label, (traces::RangeLabel{sim::OpKind::F, 0, 0, traces::kNoNumber}));
  EXPECT_EQ(f.process, 4242);
  EXPECT_EQ(f.gpu_start_ns, 10000);
  EXPECT_EQ(f.gpu_end_ns, 12000);
  EXPECT_EQ(f.kernel_ns, 2000);
  EXPECT_EQ(f.gpu_ops, 1u);
  const traces::PassSample& b = p.passes[1];  // its kernel and memcpy came from another thread
  EXPECT_EQ(b.label, (traces::RangeLabel{sim::OpKind::B, 0, 0, traces::kNoNumber}));
  EXPECT_EQ(b.gpu_start_ns, 13000);
  EXPECT_EQ(b.gpu_end_ns, 16500);
  EXPECT_EQ(b.kernel_ns, 3500);
  EXPECT_EQ(b.gpu_ops, 2u);
  const traces::PassSample& w = p.passes[2];
  EXPECT_EQ(w.label, (traces::RangeLabel{sim::OpKind::W, 0, 0, traces::kNoNumber}));
  EXPECT_EQ(w.gpu_start_ns, 17000);
  EXPECT_EQ(w.gpu_end_ns, 18000);
  EXPECT_EQ(w.kernel_ns, 1000);
  EXPECT_EQ(w.gpu_ops, 1u);

  ASSERT_EQ(p.comms.size(), 2u);
  EXPECT_EQ(p.comms[0].collective, traces::Collective::SendRecv);
  EXPECT_EQ(p.comms[0].device, 0);
  EXPECT_EQ(p.comms[0].start_ns, 20000);
  EXPECT_EQ(p.comms[0].duration_ns, 5000);
  EXPECT_EQ(p.comms[0].in_bytes, 8192);  // the grouped send and receive
  EXPECT_EQ(p.comms[0].out_bytes, 8192);
  EXPECT_EQ(p.comms[1].collective, traces::Collective::AllReduce);
  EXPECT_EQ(p.comms[1].duration_ns, 1000);
  EXPECT_EQ(p.comms[1].in_bytes, 1024);

  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA Test GPU");
  EXPECT_EQ(p.devices[0].kernels, 6u);
  EXPECT_EQ(p.kernels, 6u);
  EXPECT_EQ(p.memcpys, 1u);
  EXPECT_EQ(p.memsets, 0u);
  EXPECT_EQ(p.total_kernel_ns, 13000);
  EXPECT_EQ(p.unattributed_gpu_ops, 1u);
  std::filesystem::remove_all(temp_dir());
}

TEST(ProfilerWriter, HeaderCountersAndDemangledNames) {
  std::ostringstream out;
  write_chrome_trace(fixture_capture(), out);
  rapidjson::Document d;
  d.Parse(out.str().c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& h = d["bubblesim_profiler"];
  EXPECT_STREQ(h["format"].GetString(), "bubblesim-profiler");
  EXPECT_EQ(h["cupti_api_version"].GetUint(), 130001u);
  EXPECT_EQ(h["rank"].GetInt(), 3);
  EXPECT_EQ(h["counters"]["dropped_records"].GetUint64(), 2u);
  EXPECT_EQ(h["counters"]["zero_timestamp_records"].GetUint64(), 5u);
  EXPECT_EQ(h["counters"]["kernels_without_launch"].GetUint64(), 0u);
  EXPECT_EQ(h["counters"]["launches"].GetUint64(), 7u);
  std::vector<std::string> kernels;
  std::string sendrecv_peers;
  for (const auto& e : d["traceEvents"].GetArray()) {
    if (std::string(e["cat"].GetString()) != "kernel") continue;
    kernels.push_back(e["name"].GetString());
    if (e["args"].HasMember("peers") && e["args"]["peers"].Size() == 2) {
      sendrecv_peers = std::to_string(e["args"]["peers"][0].GetInt()) +
                       std::to_string(e["args"]["peers"][1].GetInt());
    }
  }
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"gemmF", "gemmB()", "gemmB()",
                                      "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                                      "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "other"}));
  EXPECT_EQ(sendrecv_peers, "11");
}

TEST(ProfilerWriter, TimesAreExactNanoseconds) {
  Capture c;
  c.names = {"k"};
  KernelRecord k;
  k.start_ns = 1'763'791'234'567'890'123;  // an epoch time in ns
  k.end_ns = k.start_ns + 1001;
  c.kernels = {k};
  c.launches = {LaunchRecord{0, k.start_ns - 7, 1, kNoRange, kNoNcclGroup, LaunchApi::Kernel}};
  std::ostringstream out;
  write_chrome_trace(c, out);
  EXPECT_NE(out.str().find("\"ts\":1763791234567890.123,\"dur\":1.001"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\"ts\":1763791234567890.116,\"dur\":0.000"), std::string::npos);
}

TEST(ProfilerWriter, UnwritablePathThrowsNamingIt) {
  try {
    write_chrome_trace_file(Capture{}, "/nonexistent-dir-bubblesim/x.json");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-bubblesim/x.json.tmp"),
              std::string::npos);
  }
}

TEST(ProfilerWriter, Demangle) {
  EXPECT_EQ(demangle("_Z14VectorSubtractPKiS0_Pii"),
            "VectorSubtract(int const*, int const*, int*, int)");
  EXPECT_EQ(demangle("plain_kernel"), "plain_kernel");
  EXPECT_EQ(demangle("_Znot-mangled"), "_Znot-mangled");
}

}  // namespace
}  // namespace bubblesim::profiler
