// Hand-built CUPTI activity buffers of the current record layouts, walked by the real
// cuptiActivityGetNextRecord (works without a GPU). Built only with the CUDA toolkit.
#include "profiler/cupti_decode.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bubblesim::profiler {
namespace {

class Buffer {
 public:
  template <class Record>
  void add(const Record& r) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&r);
    bytes_.insert(bytes_.end(), p, p + sizeof r);
  }
  std::uint8_t* data() {
    storage_.assign((bytes_.size() + 7) / 8 + 1, 0);
    std::memcpy(storage_.data(), bytes_.data(), bytes_.size());
    return reinterpret_cast<std::uint8_t*>(storage_.data());
  }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::uint8_t> bytes_;
  std::vector<std::uint64_t> storage_;  // 8-byte aligned
};

CUpti_ActivityKernel10 kernel(const char* name, std::uint64_t start, std::uint64_t end,
                              std::uint32_t correlation) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 13;
  k.gridX = 80;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.correlationId = correlation;
  k.name = name;
  return k;
}

TEST(ProfilerCuptiDecode, RecordSizesAreTheCurrentLayouts) {
  EXPECT_EQ(sizeof(CUpti_ActivityKernel10), 216u);
  EXPECT_EQ(sizeof(CUpti_ActivityMemcpy6), 96u);
  EXPECT_EQ(sizeof(CUpti_ActivityMemcpyPtoP4), 96u);
  EXPECT_EQ(sizeof(CUpti_ActivityMemset4), 88u);
}

TEST(ProfilerCuptiDecode, KernelsMemopsZeroTimestampsAndOtherKinds) {
  static const char kGemm[] = "_Z4gemmv";
  static const char kNccl[] = "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE";
  Buffer b;
  b.add(kernel(kGemm, 1000, 2000, 11));
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.start = 2100;
  m.end = 2300;
  m.bytes = 65536;
  m.deviceId = 1;
  m.streamId = 14;
  m.correlationId = 12;
  b.add(m);
  b.add(kernel(kGemm, 0, 0, 13));  // no timing: counted, skipped
  CUpti_ActivityAPI api;
  std::memset(&api, 0, sizeof api);
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.correlationId = 11;
  b.add(api);
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.start = 2400;
  s.end = 2450;
  s.bytes = 128;
  s.deviceId = 1;
  s.streamId = 13;
  s.correlationId = 14;
  b.add(s);
  CUpti_ActivityMemcpyPtoP4 p;
  std::memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  p.start = 2500;
  p.end = 2600;
  p.bytes = 4096;
  p.deviceId = 1;
  p.streamId = 15;
  p.correlationId = 15;
  b.add(p);
  b.add(kernel(kNccl, 3000, 5000, 16));
  b.add(kernel(kGemm, 6000, 6500, 17));

  const DecodedRecords r = decode_activity_buffer(b.data(), b.size());
  EXPECT_EQ(r.names, (std::vector<std::string>{kGemm, kNccl}));
  ASSERT_EQ(r.kernels.size(), 3u);
  KernelRecord first;
  first.start_ns = 1000;
  first.end_ns = 2000;
  first.device = 1;
  first.context = 2;
  first.stream = 13;
  first.correlation = 11;
  first.grid[0] = 80;
  first.grid[1] = 2;
  first.grid[2] = 1;
  first.block[0] = 256;
  first.block[1] = 1;
  first.block[2] = 1;
  first.name = 0;
  EXPECT_EQ(r.kernels[0], first);
  EXPECT_EQ(r.kernels[1].name, 1u);
  EXPECT_EQ(r.kernels[1].correlation, 16u);
  EXPECT_EQ(r.kernels[2].name, 0u);
  EXPECT_EQ(r.kernels[2].start_ns, 6000);
  const std::vector<MemRecord> mems = {{MemKind::Memcpy, 2100, 2300, 65536, 1, 14, 12},
                                       {MemKind::Memset, 2400, 2450, 128, 1, 13, 14},
                                       {MemKind::Memcpy, 2500, 2600, 4096, 1, 15, 15}};
  EXPECT_EQ(r.mems, mems);
  EXPECT_EQ(r.counters.zero_timestamp_records, 1u);
  EXPECT_EQ(r.counters.other_records, 1u);
  EXPECT_EQ(r.counters.incomplete_buffers, 0u);
  EXPECT_EQ(r.counters.buffers_completed, 1u);
}

TEST(ProfilerCuptiDecode, TruncatedAndEmptyBuffers) {
  static const char kName[] = "k";
  Buffer b;
  b.add(kernel(kName, 10, 20, 1));
  b.add(kernel(kName, 30, 40, 2));
  // The second record cut short: the first decodes, and CUPTI ends the walk there as at a
  // buffer's normal end (MAX_LIMIT_REACHED, observed with CUPTI 13.0 U1).
  const DecodedRecords cut = decode_activity_buffer(b.data(), b.size() - 100);
  ASSERT_EQ(cut.kernels.size(), 1u);
  EXPECT_EQ(cut.kernels[0].correlation, 1u);
  EXPECT_EQ(cut.counters.incomplete_buffers, 0u);
  // A zeroed buffer (a kind of 0 is invalid).
  std::vector<std::uint64_t> zeros(64, 0);
  const DecodedRecords z =
      decode_activity_buffer(reinterpret_cast<std::uint8_t*>(zeros.data()), 256);
  EXPECT_TRUE(z.kernels.empty());
  EXPECT_EQ(z.counters.incomplete_buffers, 1u);
  const DecodedRecords empty = decode_activity_buffer(b.data(), 0);
  EXPECT_TRUE(empty.kernels.empty());
  EXPECT_EQ(empty.counters.incomplete_buffers, 0u);
}

}  // namespace
}  // namespace bubblesim::profiler

namespace bubblesim::profiler {
namespace {

// The injection enables callbacks by name (cuptiGetCallbackName works without a GPU): the
// launch functions of CUDA 13's runtime and driver tables must be among them, and no others.
TEST(ProfilerCuptiCallbacks, LaunchFunctionsFoundByName) {
  std::vector<std::string> kernel, graph;
  std::size_t memops = 0;
  for (const auto& [domain, count] :
       {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
        std::pair{CUPTI_CB_DOMAIN_DRIVER_API, std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}}) {
    for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      const std::optional<LaunchApi> api = launch_api_of(name);
      if (api == LaunchApi::Kernel) kernel.emplace_back(name);
      if (api == LaunchApi::Graph) graph.emplace_back(name);
      if (api == LaunchApi::Memcpy || api == LaunchApi::Memset) ++memops;
    }
  }
  const auto has = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  for (const char* name :
       {"cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "__cudaLaunchKernel_v13000",
        "cudaLaunchKernelExC_v11060", "cudaLaunchCooperativeKernel_v9000", "cuLaunchKernel",
        "cuLaunchKernelEx", "cuLaunchCooperativeKernel"}) {
    EXPECT_TRUE(has(kernel, name)) << name;
  }
  EXPECT_TRUE(has(graph, "cudaGraphLaunch_v10000"));
  EXPECT_TRUE(has(graph, "cuGraphLaunch"));
  for (const std::string& name : kernel)  // nothing but launches
    EXPECT_NE(name.find("Launch"), std::string::npos) << name;
  EXPECT_GT(memops, 20u);
}

}  // namespace
}  // namespace bubblesim::profiler
