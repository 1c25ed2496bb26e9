// Interleaved 1F1B against its closed forms (../shared/reference/zero-bubble.md §2).
#include "sim/schedules/interleaved.h"

#include <gtest/gtest.h>

#include "sim/op_graph.h"
#include "sim/placement.h"
#include "sim/simulation.h"

namespace bubblesim::sim {
namespace {

Schedule interleaved(int p, int m, int v) {
  ScheduleRegistry registry;
  add_interleaved_schedules(registry);
  return registry.get("1f1b-i").generate(ScheduleParams{p, m, v});
}

// T_F 6, T_B 9, T_W 3 ms: divisible by every v tested, so chunk times are exact.
PerDeviceCostModel costs(int p, int v, double comm_ms = 0) {
  return PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(6), ms_to_ns(9), ms_to_ns(3), ms_to_ns(comm_ms), 1.0, 0.5}, p, v);
}

TEST(Interleaved, BubbleIsOneFOneBsOverV) {
  for (const int p : {1, 2, 4, 8}) {
    for (const int v : {2, 3, 4}) {
      for (const int k : {1, 2, 3}) {
        const int m = k * p;
        const Metrics metrics = simulate(interleaved(p, m, v), costs(p, v)).metrics;
        const TimeNs bubble = metrics.max_device_span_ns - m * ms_to_ns(18);
        EXPECT_EQ(bubble, (p - 1) * ms_to_ns(18) / v) << "p=" << p << " v=" << v << " m=" << m;
        // Peak p M_B (1 + (p-1)/(p v)) once the warm-up is not cut short by m.
        if (m >= 2 * p) {
          EXPECT_NEAR(metrics.peak_activation_memory, p * (1.0 + (p - 1.0) / (p * v)), 1e-12)
              << "p=" << p << " v=" << v << " m=" << m;
        }
      }
    }
  }
}

TEST(Interleaved, UnitCostsBubble) {
  // T_F = T_B = T_W = 1 per whole stage: bubble (p-1) 3 / v.
  const int p = 4, v = 2, m = 8;
  const auto unit = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(1), ms_to_ns(1), ms_to_ns(1), 0, 1.0, 0.5}, p, v);
  const Metrics metrics = simulate(interleaved(p, m, v), unit).metrics;
  EXPECT_EQ(metrics.max_device_span_ns - m * ms_to_ns(3), (p - 1) * ms_to_ns(3) / v);
}

TEST(Interleaved, LoopedPlacementAndChunks) {
  const Schedule s = interleaved(4, 8, 3);
  EXPECT_EQ(s.stage_device, looped_placement(4, 3));
  EXPECT_EQ(s.stage_device, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_NO_THROW(s.validate());
  // Device 1 starts with chunk 0 and ends with chunk 0's last backward.
  EXPECT_EQ(s.device_ops[1].front(), (Op{OpKind::F, 1, 0, 0}));
  EXPECT_EQ(s.device_ops[1].back(), (Op{OpKind::BW, 1, 0, 7}));
  // Warm-up: (v-1) p + 2 (p-1-r) forwards before the first backward.
  for (int r = 0; r < 4; ++r) {
    const auto& ops = s.device_ops[static_cast<std::size_t>(r)];
    const auto first_bw =
        std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::BW; });
    EXPECT_EQ(first_bw - ops.begin(), std::min(2 * 4 + 2 * (3 - r) + 1, 24)) << r;
  }
}

TEST(Interleaved, EngineMatchesLongestPathWithCommunication) {
  for (const int p : {2, 3, 8}) {
    const Schedule s = interleaved(p, 2 * p, 3);
    const auto model = costs(p, 3, 0.4);
    const Timeline timeline = Engine(s, model).run();
    TimeNs end = 0;
    for (const auto& ops : timeline.device_ops)
      end = std::max(end, ops.back().end_ns);
    EXPECT_EQ(end, OpGraph(s, model).critical_path().length_ns) << p;
  }
}

TEST(Interleaved, RejectsBadParameters) {
  EXPECT_THROW(interleaved(4, 8, 1), InvalidArgument);  // needs v >= 2
  EXPECT_THROW(interleaved(4, 6, 2), InvalidArgument);  // m not a multiple of p
  try {
    interleaved(4, 6, 2);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of -p/--pp"), std::string::npos) << e.what();
  }
}

TEST(PerDeviceCostModel, ChunkPassesCostAVthOfTheDevicesShare) {
  const auto model = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 3.0, 1.5},
      2, 3);
  EXPECT_EQ(model.duration_ns(Op{OpKind::F, 2, 1, 0}, 0), 6'174'000);
  EXPECT_EQ(model.duration_ns(Op{OpKind::BW, 2, 1, 0}, 0), 6'028'667 + 3'112'333);
  EXPECT_EQ(model.transfer_ns(0, 1), 601'000);  // a hop is a hop, whatever the chunk
  EXPECT_DOUBLE_EQ(model.activation_delta(Op{OpKind::F, 2, 1, 0}, 1), 1.0);
  EXPECT_DOUBLE_EQ(model.activation_delta(Op{OpKind::W, 2, 1, 0}, 1), -0.5);
}

TEST(Placement, VShapeHoldsStageIAnd2PMinus1MinusI) {
  EXPECT_EQ(v_placement(4), (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
}

}  // namespace
}  // namespace bubblesim::sim
