// Per-stage costs from a profile, and the cost model that draws durations from samples.
#include "traces/profile_costs.h"

#include <gtest/gtest.h>

#include <random>

#include "sim/schedules/handcrafted.h"
#include "traces/sampled_cost_model.h"

namespace bubblesim::traces {
namespace {

PassSample sample(sim::OpKind pass, int stage, int microbatch, sim::TimeNs kernel_ns) {
  return {{pass, stage, microbatch, kNoNumber}, 0, 0, 0, kernel_ns, kernel_ns, 1};
}

TEST(ProfileCosts, SplitsFusedBackwardAndKeepsSeparatePasses) {
  Profile p;
  p.passes = {sample(sim::OpKind::F, 0, 0, 10), sample(sim::OpKind::B, 0, 0, 6),
              sample(sim::OpKind::W, 0, 0, 4),  sample(sim::OpKind::BW, 0, 0, 100),
              sample(sim::OpKind::F, 1, 0, 20), sample(sim::OpKind::BW, 1, 0, 31)};
  p.comms = {{Collective::SendRecv, 0, 0, 0, 7, -1, -1},
             {Collective::AllReduce, 0, 0, 0, 99, -1, -1}};
  const ProfileCosts c = profile_costs(p, 0, 0.5);
  ASSERT_EQ(c.stages.size(), 2u);
  EXPECT_EQ(c.stages[0].b_ns, (std::vector<sim::TimeNs>{6}));  // B and W given: BW not used
  EXPECT_FALSE(c.stages[0].split_from_bw);
  EXPECT_EQ(c.stages[1].b_ns, (std::vector<sim::TimeNs>{16}));  // 15.5 rounded away from 0
  EXPECT_EQ(c.stages[1].w_ns, (std::vector<sim::TimeNs>{15}));
  EXPECT_TRUE(c.stages[1].split_from_bw);
  EXPECT_TRUE(c.any_split());
  EXPECT_EQ(c.comm_ns, (std::vector<sim::TimeNs>{7}));  // send/recv only
}

TEST(ProfileCosts, NoStageNumbersIsAnError) {
  Profile p;
  p.passes = {sample(sim::OpKind::F, kNoNumber, 0, 10)};
  EXPECT_THROW(profile_costs(p, 0, 0.5), InvalidArgument);
}

TEST(SampledCostModel, DrawsReproduciblyAndFusesBackwardAsBPlusW) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  const sim::Schedule schedule = registry.get("1f1b").generate({2, 4, 1});
  const std::vector<sim::DeviceCosts> costs(2, sim::DeviceCosts{10, 20, 30, 1});
  const std::vector<DurationSamples> samples(2, DurationSamples{{100, 200}, {1000, 2000}, {5}});
  SampledCostModel a(schedule, costs, samples), b(schedule, costs, samples);
  const sim::Op f{sim::OpKind::F, 1, 0, 3}, bw{sim::OpKind::BW, 1, 0, 3};
  EXPECT_EQ(a.duration_ns(f, 1), 10);  // before any draw: the given costs
  EXPECT_EQ(a.duration_ns(bw, 1), 50);
  std::mt19937_64 r1(3), r2(3);
  bool varied = false;
  for (int i = 0; i < 20; ++i) {
    a.draw(r1);
    b.draw(r2);
    EXPECT_EQ(a.duration_ns(f, 1), b.duration_ns(f, 1));
    const sim::TimeNs backward = a.duration_ns(bw, 1);
    EXPECT_TRUE(backward == 1005 || backward == 2005) << backward;
    varied = varied || a.duration_ns(f, 1) != a.duration_ns({sim::OpKind::F, 1, 0, 2}, 1);
  }
  EXPECT_TRUE(varied);
  EXPECT_EQ(a.transfer_ns(0, 1), 1);
}

}  // namespace
}  // namespace bubblesim::traces
