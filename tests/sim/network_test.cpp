// The engine with a network: transfers over links with bandwidth and latency, sharing links
// max-min fairly, and data-parallel replicas combined into one schedule (sim/network.h,
// sim/replicas.h).
#include "sim/network.h"

#include <gtest/gtest.h>

#include "sim/replicas.h"
#include "sim/schedules/dual_pipe.h"
#include "sim/schedules/interleaved.h"
#include "sim/schedules/v_shape.h"
#include "sim/schedules/zb_auto.h"
#include "tests/sim/test_util.h"

namespace bubblesim::sim {
namespace {

// Costs with instant forwards, so that every first-stage forward's output leaves at t = 0.
PerDeviceCostModel instant_forwards(int devices, double bytes) {
  DeviceCosts c{0, ms_to_ns(1), ms_to_ns(1), 0, 1.0, 0.5};
  c.comm_bytes = bytes;
  return PerDeviceCostModel::uniform(c, devices);
}

// When the first forward of stage 1 (of replica r) starts: its input's arrival.
TimeNs first_arrival(const Schedule& s, const Timeline& t, int replica) {
  const std::size_t device = static_cast<std::size_t>(2 * replica + 1);
  EXPECT_EQ(s.device_ops[device].front().kind, OpKind::F);
  return t.device_ops[device].front().start_ns;
}

TEST(Network, TwoTransfersSharingALinkTakeTwiceAsLongAsOne) {
  const double bytes = 1e6;  // 1 MB at 1 GB/s: 1 ms
  const Schedule one = testing::generate("1f1b", 2, 1);
  const Schedule two = combine_replicas({one, one});
  for (const bool shared : {true, false}) {
    Network net(4);
    const int a = net.add_link({1e9, 0});
    const int b = shared ? a : net.add_link({1e9, 0});
    net.set_route(0, 1, {a});
    net.set_route(1, 0, {a});
    net.set_route(2, 3, {b});
    net.set_route(3, 2, {b});
    const auto costs = instant_forwards(4, bytes);
    const SimulationResult alone = simulate(one, instant_forwards(2, bytes), {}, &net);
    EXPECT_EQ(first_arrival(one, alone.timeline, 0), 1'000'000);
    const SimulationResult both = simulate(two, costs, {}, &net);
    const TimeNs expected = shared ? 2'000'000 : 1'000'000;
    EXPECT_EQ(first_arrival(two, both.timeline, 0), expected) << shared;
    EXPECT_EQ(first_arrival(two, both.timeline, 1), expected) << shared;
  }
}

TEST(Network, SharesAreMaxMinFairAndLatencyFollowsTheData) {
  // Flows 0->1 and 2->3 share link s (2 GB/s); 2->3 also crosses link n (0.5 GB/s), so it gets
  // 0.5 and 0->1 the remaining 1.5 GB/s until... 0->1's 1.5 MB end at 1 ms.
  Network net(4);
  const int s = net.add_link({2e9, 0});
  const int n = net.add_link({0.5e9, 7000});
  net.set_route(0, 1, {s});
  net.set_route(1, 0, {s});
  net.set_route(2, 3, {s, n});
  net.set_route(3, 2, {n, s});
  const Schedule one = testing::generate("1f1b", 2, 1);
  const SimulationResult r =
      simulate(combine_replicas({one, one}), instant_forwards(4, 1.5e6), {}, &net);
  const Schedule two = combine_replicas({one, one});
  EXPECT_EQ(first_arrival(two, r.timeline, 0), 1'000'000);  // 1.5 MB at 1.5 GB/s
  // 2->3: 0.5 MB by 1 ms, then alone on n at 0.5 GB/s: 1 MB more, 2 ms; then 7 us of latency.
  EXPECT_EQ(first_arrival(two, r.timeline, 1), 3'000'000 + 7000);
  EXPECT_EQ(net.uncontended_ns(2, 3, 1.5e6), 3'000'000 + 7000);
}

ScheduleRegistry all_schedules() {
  ScheduleRegistry registry = testing::handcrafted_registry();
  add_zb_auto_schedules(registry);
  add_interleaved_schedules(registry);
  add_v_shape_schedules(registry);
  add_dual_pipe_schedules(registry);
  return registry;
}

// Every pair of devices linked directly by one link of infinite bandwidth and latency `comm`.
Network latency_only(int devices, TimeNs comm_ns) {
  Network net(devices);
  const int link = net.add_link({std::numeric_limits<double>::infinity(), comm_ns});
  for (int a = 0; a < devices; ++a)
    for (int b = 0; b < devices; ++b)
      if (a != b) net.set_route(a, b, {link});
  return net;
}

TEST(Network, InfiniteLinksReproduceTheRunWithoutANetworkExactly) {
  const ScheduleRegistry registry = all_schedules();
  for (const ScheduleGenerator* g : registry.all()) {
    const int p = 4, m = 8;
    ScheduleParams params{p, m, g->default_chunks()};
    const TimeNs comm = ms_to_ns(0.601);
    PerDeviceCostModel costs(
        std::vector<DeviceCosts>(p, DeviceCosts{ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337),
                                                comm, 1.0, 0.5, 0.3, 1e8}),
        params.chunks);
    params.costs = &costs;
    const Schedule s = g->generate(params);
    const Network net = latency_only(p, comm);
    const SimulationResult plain = simulate(s, costs);
    TransferLog log;
    std::vector<EngineObserver*> observers{&log};
    const SimulationResult networked = simulate(s, costs, observers, &net);
    for (int d = 0; d < p; ++d) {
      const auto& a = plain.timeline.device_ops[static_cast<std::size_t>(d)];
      const auto& b = networked.timeline.device_ops[static_cast<std::size_t>(d)];
      ASSERT_EQ(a.size(), b.size()) << g->name();
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].start_ns, b[i].start_ns) << g->name() << " device " << d << " op " << i;
        ASSERT_EQ(a[i].end_ns, b[i].end_ns) << g->name();
      }
    }
    EXPECT_EQ(plain.metrics.iteration_time_ns, networked.metrics.iteration_time_ns);
    ASSERT_FALSE(log.transfers().empty());
    for (const TransferEvent& t : log.transfers()) {
      EXPECT_EQ(t.end_ns - t.start_ns, comm);
      EXPECT_EQ(t.bytes, 1e8);
    }
  }
}

TEST(Network, ReplicasWithoutANetworkEachRunAsAlone) {
  const Schedule one = testing::generate("zb-h1", 4, 8);
  const Schedule three = combine_replicas({one, one, one});
  three.validate();
  EXPECT_EQ(three.num_devices(), 12);
  EXPECT_EQ(three.num_stages(), 12);
  EXPECT_EQ(three.num_microbatches, 24);
  const auto costs = testing::uniform_costs(12, 2, 2, 1, 0.5);
  const SimulationResult a = simulate(one, testing::uniform_costs(4, 2, 2, 1, 0.5));
  const SimulationResult b = simulate(three, costs);
  EXPECT_EQ(a.metrics.iteration_time_ns, b.metrics.iteration_time_ns);
  EXPECT_DOUBLE_EQ(a.metrics.bubble_rate, b.metrics.bubble_rate);
  for (std::size_t d = 0; d < 12; ++d)
    EXPECT_EQ(b.timeline.device_ops[d], a.timeline.device_ops[d % 4]);
}

}  // namespace
}  // namespace bubblesim::sim
