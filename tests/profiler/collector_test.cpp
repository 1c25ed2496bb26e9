#include "profiler/collector.h"

#include <gtest/gtest.h>

#include <thread>

#include "profiler_fixture.h"

namespace bubblesim::profiler {
namespace {

using testing::feed_fixture;
using testing::kAutograd;
using testing::kMain;

std::unique_ptr<Collector> pipelining_collector(CollectorOptions options = {}) {
  return std::make_unique<Collector>(std::make_unique<traces::PipeliningLabeller>(), options);
}

TEST(ProfilerCollector, FixtureGivesTheExpectedLabelledRecords) {
  auto c = pipelining_collector();
  feed_fixture(*c);
  const Capture capture = c->snapshot(99999);

  ASSERT_EQ(capture.ranges.size(), 3u);
  const traces::RangeLabel f{sim::OpKind::F, 0, 0, traces::kNoNumber};
  const traces::RangeLabel b{sim::OpKind::B, 0, 0, traces::kNoNumber};
  const traces::RangeLabel w{sim::OpKind::W, 0, 0, traces::kNoNumber};
  EXPECT_EQ(capture.ranges[0], (RangeRecord{1, "PP:0F0", 1000, 1500, kMain, f, false}));
  EXPECT_EQ(capture.ranges[1], (RangeRecord{2, "PP:0I0", 2000, 2500, kMain, b, false}));
  EXPECT_EQ(capture.ranges[2], (RangeRecord{3, "PP:0W0", 3000, 3500, kMain, w, false}));

  const std::vector<LaunchRecord> expected = {
      {1, 1100, kMain, 1, kNoNcclGroup, LaunchApi::Kernel},
      {2, 2100, kAutograd, 2, kNoNcclGroup, LaunchApi::Kernel},  // B from the autograd thread
      {3, 2200, kAutograd, 2, kNoNcclGroup, LaunchApi::Memcpy},
      {4, 3100, kMain, 3, kNoNcclGroup, LaunchApi::Kernel},
      {5, 4000, kMain, kNoRange, 0, LaunchApi::Kernel},
      {6, 5000, kMain, kNoRange, 1, LaunchApi::Kernel},
      {7, 6000, kMain, kNoRange, kNoNcclGroup, LaunchApi::Kernel}};
  EXPECT_EQ(capture.launches, expected);

  using traces::Collective;
  ASSERT_EQ(capture.nccl_groups.size(), 2u);
  EXPECT_EQ(capture.nccl_groups[0],
            (NcclGroup{{testing::nccl_call(Collective::SendRecv, "ncclSend", 4096, 1),
                        testing::nccl_call(Collective::SendRecv, "ncclRecv", 4096, 1)}}));
  EXPECT_EQ(capture.nccl_groups[1],
            (NcclGroup{{testing::nccl_call(Collective::AllReduce, "ncclAllReduce", 1024, -1)}}));

  EXPECT_EQ(capture.names.size(), 5u);
  EXPECT_EQ(capture.kernels.size(), 6u);
  EXPECT_EQ(capture.mems.size(), 1u);
  EXPECT_EQ(capture.counters.buffers_completed, 1u);
  EXPECT_EQ(capture.counters.overlapping_ranges, 0u);
  EXPECT_EQ(capture.counters.unbalanced_pops, 0u);
}

TEST(ProfilerCollector, KernelNamesAreInternedAcrossBuffers) {
  auto c = pipelining_collector();
  for (int i = 0; i < 2; ++i) {
    DecodedRecords r;
    r.names = {i == 0 ? "a" : "b", "shared"};
    KernelRecord k;
    k.name = 1;
    k.correlation = static_cast<std::uint32_t>(i);
    r.kernels = {k};
    c->add_records(std::move(r));
  }
  const Capture capture = c->snapshot(0);
  EXPECT_EQ(capture.names, (std::vector<std::string>{"a", "shared", "b"}));
  ASSERT_EQ(capture.kernels.size(), 2u);
  EXPECT_EQ(capture.kernels[0].name, 1u);
  EXPECT_EQ(capture.kernels[1].name, 1u);
}

TEST(ProfilerCollector, RangesAreProcessWideAcrossRealThreads) {
  auto c = pipelining_collector();
  c->range_push(kMain, "PP:2F5", 10);
  // Launches from 4 threads while the main thread's range is open all take its label.
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&c, t] {
      for (std::uint32_t i = 0; i < 250; ++i)
        c->launch(1000 + t, t * 1000 + i, LaunchApi::Kernel, 20);
    });
  }
  for (std::thread& t : threads)
    t.join();
  c->range_pop(kMain, 30);
  c->launch(1000, 99999, LaunchApi::Kernel, 40);
  const Capture capture = c->snapshot(50);
  ASSERT_EQ(capture.launches.size(), 1001u);
  std::size_t labelled = 0;
  for (const LaunchRecord& l : capture.launches)
    labelled += l.range == 1 ? 1 : 0;
  EXPECT_EQ(labelled, 1000u);
  EXPECT_EQ(capture.launches.back().range, kNoRange);
}

TEST(ProfilerCollector, InnermostLatestRangeWinsAndOverlapsAreCounted) {
  auto c = pipelining_collector();
  const std::uint64_t outer = c->range_start(kMain, "PP:0I1", 100);  // B of microbatch 1
  c->range_push(kMain, "PP:0W0", 200);                               // W of microbatch 0 opens
  c->launch(kAutograd, 1, LaunchApi::Kernel, 250);
  c->range_pop(kMain, 300);
  c->launch(kAutograd, 2, LaunchApi::Kernel, 350);
  c->range_end(outer, 400);
  c->range_end(outer, 410);  // unbalanced
  c->range_pop(kMain, 420);  // unbalanced
  const Capture capture = c->snapshot(500);
  ASSERT_EQ(capture.launches.size(), 2u);
  EXPECT_EQ(capture.launches[0].range, 2u);
  EXPECT_EQ(capture.launches[1].range, 1u);
  EXPECT_EQ(capture.counters.overlapping_ranges, 1u);
  EXPECT_EQ(capture.counters.unbalanced_pops, 2u);
}

TEST(ProfilerCollector, OpenRangesEndAtTheSnapshot) {
  auto c = pipelining_collector();
  c->range_push(kMain, "PP:0F0", 100);
  const Capture capture = c->snapshot(700);
  ASSERT_EQ(capture.ranges.size(), 1u);
  EXPECT_TRUE(capture.ranges[0].open);
  EXPECT_EQ(capture.ranges[0].end_ns, 700);
}

// cudaLaunchKernel and the cuLaunchKernel it calls reach the callback with one correlation id.
TEST(ProfilerCollector, ARuntimeLaunchAndItsDriverCallAreOneLaunch) {
  auto c = pipelining_collector();
  c->range_push(kMain, "PP:0F0", 100);
  c->launch(kMain, 7, LaunchApi::Kernel, 110);
  c->launch(kMain, 7, LaunchApi::Kernel, 111);  // the driver's callback
  c->launch(kAutograd, 8, LaunchApi::Kernel, 112);
  c->launch(kMain, 8, LaunchApi::Kernel, 113);  // another thread's id: not a repeat here
  c->launch(kMain, 9, LaunchApi::Kernel, 120);
  const Capture capture = c->snapshot(700);
  ASSERT_EQ(capture.launches.size(), 4u);
  EXPECT_EQ(capture.launches[0].correlation, 7u);
  EXPECT_EQ(capture.launches[0].ts_ns, 110);  // the first callback's time
  EXPECT_EQ(capture.launches[1].correlation, 8u);
  EXPECT_EQ(capture.launches[2].correlation, 8u);
  EXPECT_EQ(capture.launches[3].correlation, 9u);
}

TEST(ProfilerCollector, RegexLabelsAndStepFlushes) {
  Collector c(std::make_unique<traces::RegexLabeller>("(?<pass>F|B|W) mb=(?<microbatch>\\d+)"),
              CollectorOptions{"iteration", 2});
  c.range_push(kMain, "F mb=3", 1);
  c.launch(kMain, 1, LaunchApi::Kernel, 2);
  c.range_pop(kMain, 3);
  c.range_push(kMain, "PP:0F0", 4);  // not a pass under this regex
  c.launch(kMain, 2, LaunchApi::Kernel, 5);
  c.range_pop(kMain, 6);
  bool flushes[4];
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t h = c.range_start(kMain, "iteration" + std::to_string(i), 10 + i);
    flushes[i] = c.range_end(h, 20 + i);
  }
  EXPECT_FALSE(flushes[0]);
  EXPECT_TRUE(flushes[1]);
  EXPECT_FALSE(flushes[2]);
  EXPECT_TRUE(flushes[3]);
  const Capture capture = c.snapshot(100);
  ASSERT_EQ(capture.ranges.size(), 1u);
  EXPECT_EQ(capture.ranges[0].label.microbatch, 3);
  EXPECT_EQ(capture.launches[0].range, 1u);
  EXPECT_EQ(capture.launches[1].range, kNoRange);
}

TEST(ProfilerCollector, NcclCallsGoToTheLaunchesOfTheirThreadOnly) {
  auto c = pipelining_collector();
  c->nccl_push(kMain, "ncclSend",
               testing::nccl_call(traces::Collective::SendRecv, "ncclSend", 64, 3));
  c->launch(kAutograd, 1, LaunchApi::Kernel, 10);  // another thread: no NCCL call
  c->launch(kMain, 2, LaunchApi::Kernel, 11);
  c->launch(kMain, 3, LaunchApi::Kernel, 12);  // a second kernel of the same call
  c->nccl_pop(kMain);
  c->launch(kMain, 4, LaunchApi::Kernel, 13);  // after the call closed
  const Capture capture = c->snapshot(20);
  ASSERT_EQ(capture.launches.size(), 4u);
  EXPECT_EQ(capture.launches[0].nccl_group, kNoNcclGroup);
  EXPECT_EQ(capture.launches[1].nccl_group, 0);
  EXPECT_EQ(capture.launches[2].nccl_group, 0);
  EXPECT_EQ(capture.launches[3].nccl_group, kNoNcclGroup);
  EXPECT_EQ(capture.nccl_groups.size(), 1u);
}

TEST(ProfilerCollector, LaunchApiOfCallbackNames) {
  EXPECT_EQ(launch_api_of("cudaLaunchKernel_v7000"), LaunchApi::Kernel);
  EXPECT_EQ(launch_api_of("__cudaLaunchKernel_v13000"), LaunchApi::Kernel);
  EXPECT_EQ(launch_api_of("cuLaunchKernelEx"), LaunchApi::Kernel);
  EXPECT_EQ(launch_api_of("cuLaunchCooperativeKernel_ptsz"), LaunchApi::Kernel);
  EXPECT_EQ(launch_api_of("cudaGraphLaunch_v10000"), LaunchApi::Graph);
  EXPECT_EQ(launch_api_of("cuMemcpyHtoDAsync_v2"), LaunchApi::Memcpy);
  EXPECT_EQ(launch_api_of("cudaMemsetAsync_v3020"), LaunchApi::Memset);
  EXPECT_EQ(launch_api_of("cudaGraphAddMemcpyNode_v10000"), std::nullopt);
  EXPECT_EQ(launch_api_of("cudaLaunchHostFunc_v10000"), std::nullopt);
  EXPECT_EQ(launch_api_of("cudaGetDevice_v3020"), std::nullopt);
}

}  // namespace
}  // namespace bubblesim::profiler
