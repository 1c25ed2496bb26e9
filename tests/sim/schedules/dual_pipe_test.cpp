// DualPipe and DualPipeV: placement and routes, the unit-cost bubble per device, the PP + 1
// activation peak, validity, and parameter errors (../shared/reference/zero-bubble.md §6).
#include "sim/schedules/dual_pipe.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sim/op_graph.h"
#include "sim/placement.h"
#include "sim/simulation.h"

namespace bubblesim::sim {
namespace {

Schedule dual(const char* name, int p, int m, int v) {
  ScheduleRegistry registry;
  add_dual_pipe_schedules(registry);
  return registry.get(name).generate(ScheduleParams{p, m, v});
}
Schedule dualpipe(int p, int m) {
  return dual("dualpipe", p, m, 1);
}
Schedule dualpipe_v(int p, int m) {
  return dual("dualpipe-v", p, m, 2);
}

// Unit costs: every pass (F, B, W of one stage) takes 1 ms and allocates M_B = 1 per stage, so
// BW takes 2 ms and an overlapped F&BW 3 - e ms. v = 2 halves the device's share.
PerDeviceCostModel unit(int p, int v, double e) {
  return PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(v), ms_to_ns(v), ms_to_ns(v), 0, 1.0 * v, 0.5 * v, e}, p, v);
}

// Each device's span (first op's start to last op's end) from the longest paths of the
// schedule's dependency graph (Boost.Graph, OpGraph): an oracle independent of the engine.
std::vector<TimeNs> graph_spans(const Schedule& s, const CostModel& costs) {
  const Timeline t = OpGraph(s, costs).earliest_times();
  std::vector<TimeNs> spans;
  for (const auto& ops : t.device_ops) {
    TimeNs first = ops.front().start_ns, last = 0;
    for (const OpTiming& o : ops) {
      first = std::min(first, o.start_ns);
      last = std::max(last, o.end_ns);
    }
    spans.push_back(last - first);
  }
  return spans;
}

// The first rank's idle at unit costs, counted step by step in dual_pipe.h: it waits
// (1 - e)(PP/2 - 1) + e before its first F1&B0 pair and 1 - e before each of the PP/2 - 1
// pairs of step 5 (PP >= 4), in ms.
double first_rank_idle_ms(int pp, double e) {
  return (1 - e) * (pp / 2 - 1) + e + (1 - e) * (pp / 2 - 1);
}

TEST(DualPipe, MirroredPlacementWithTwoRoutes) {
  const int p = 4, m = 8;
  const Schedule s = dualpipe(p, m);
  // Rank r holds stage r of the first direction and stage 2p-1-r of the mirrored one.
  EXPECT_EQ(s.stage_device, v_placement(p));
  ASSERT_EQ(s.routes.size(), 8u);
  for (int mb = 0; mb < m; ++mb) {
    EXPECT_EQ(s.route(mb), mb < m / 2 ? (StageRange{0, 3}) : (StageRange{4, 7})) << mb;
  }
  EXPECT_EQ(s.route_stages(), p);
  // Microbatches of both directions enter at once: rank 0 and rank p-1 start at time 0.
  EXPECT_EQ(s.device_ops[0].front(), (Op{OpKind::F, 0, 0, 0}));
  EXPECT_EQ(s.device_ops[3].front(), (Op{OpKind::F, 4, 1, 4}));
  const auto costs = unit(p, 1, 0);
  const Timeline t = simulate(s, costs).timeline;
  EXPECT_EQ(t.device_ops[0].front().start_ns, 0);
  EXPECT_EQ(t.device_ops[3].front().start_ns, 0);
}

TEST(DualPipe, UnitCostSpanOfEveryRankFollowsTheGraphAndTheFirstRankItsCountedWaits) {
  for (const int p : {2, 4, 6, 8, 16}) {
    for (const int m : {2 * p, 2 * p + 2, 4 * p, 6 * p + 4}) {
      const Schedule s = dualpipe(p, m);
      for (const double e : {0.0, 0.25, 0.5, 1.0}) {
        const auto costs = unit(p, 1, e);
        const Metrics metrics = simulate(s, costs).metrics;
        const std::vector<TimeNs> spans = graph_spans(s, costs);
        for (const DeviceMetrics& d : metrics.devices) {
          EXPECT_EQ(d.span_ns, spans[static_cast<std::size_t>(d.device)])
              << "p=" << p << " m=" << m << " e=" << e << " rank " << d.device;
        }
        if (p >= 4) {
          EXPECT_EQ(metrics.devices.front().span_ns - metrics.devices.front().busy_ns,
                    ms_to_ns(first_rank_idle_ms(p, e)))
              << "p=" << p << " m=" << m << " e=" << e;
        }
      }
    }
  }
}

TEST(DualPipe, WithoutOverlapGainTheBubbleIsDeepSeeksFormula) {
  // (PP/2 - 1)(F&B + B - 3W) with B the full backward: the busiest rank's idle, e = 0.
  for (const int p : {2, 4, 8, 16, 32}) {
    const auto costs = unit(p, 1, 0);
    const Schedule s = dualpipe(p, 2 * p + 6);
    const TimeNs f = ms_to_ns(1), full_b = ms_to_ns(2), w = ms_to_ns(1);
    const TimeNs f_and_b = costs.overlapped_ns(Op{OpKind::F, 0, 0, 0}, Op{OpKind::BW, 0, 0, 0}, 0);
    EXPECT_EQ(f_and_b, f + full_b);
    const Metrics metrics = simulate(s, costs).metrics;
    TimeNs largest = 0;
    for (const DeviceMetrics& d : metrics.devices)
      largest = std::max(largest, d.span_ns - d.busy_ns);
    EXPECT_EQ(largest, (p / 2 - 1) * (f_and_b + full_b - 3 * w)) << p;
  }
}

TEST(DualPipe, PeakIsPpPlusOneStageActivationsOnEveryRank) {
  for (const int p : {2, 4, 6, 8, 16}) {
    for (const int m : {2 * p, 4 * p}) {
      const Metrics metrics = simulate(dualpipe(p, m), unit(p, 1, 0.5)).metrics;
      for (const DeviceMetrics& d : metrics.devices) {
        EXPECT_DOUBLE_EQ(d.peak_activation_memory, p + 1) << "p=" << p << " rank " << d.device;
      }
    }
  }
}

TEST(DualPipeV, UnitCostSpansFollowTheGraphAndThePeakIsPpPlusOne) {
  // PP = 2p stages in a V on p devices; in units of one chunk pass.
  for (const int p : {1, 2, 3, 4, 8, 16}) {
    for (const int m : {2 * p, 2 * p + 1, 4 * p}) {
      const Schedule s = dualpipe_v(p, m);
      EXPECT_EQ(s.stage_device, v_placement(p));
      EXPECT_TRUE(s.routes.empty());
      for (const double e : {0.0, 0.25, 1.0}) {
        const auto costs = unit(p, 2, e);
        const Metrics metrics = simulate(s, costs).metrics;
        const std::vector<TimeNs> spans = graph_spans(s, costs);
        if (p >= 2) {
          EXPECT_EQ(metrics.devices.front().span_ns - metrics.devices.front().busy_ns,
                    ms_to_ns(first_rank_idle_ms(2 * p, e)))
              << "p=" << p << " m=" << m << " e=" << e;
        }
        for (const DeviceMetrics& d : metrics.devices) {
          EXPECT_EQ(d.span_ns, spans[static_cast<std::size_t>(d.device)])
              << "p=" << p << " m=" << m << " e=" << e << " device " << d.device;
          // PP + 1 = 2p + 1 chunk activations, M_B = 2 chunk units here.
          EXPECT_DOUBLE_EQ(d.peak_activation_memory, 2 * p + 1) << "p=" << p;
        }
      }
    }
  }
}

TEST(DualPipeV, IsDualPipeCutInHalf) {
  // DualPipeV's device r runs what DualPipe's rank r runs on twice as many ranks with twice
  // the microbatches (DualPipe's m/2 per direction = DualPipeV's m): same kinds, same pairs.
  for (const int p : {1, 2, 4, 5}) {
    const Schedule v = dualpipe_v(p, 3 * p);
    const Schedule full = dualpipe(2 * p, 6 * p);
    for (int r = 0; r < p; ++r) {
      const auto d = static_cast<std::size_t>(r);
      EXPECT_EQ(v.overlapped_pairs[d], full.overlapped_pairs[d]) << "p=" << p << " r=" << r;
      ASSERT_EQ(v.device_ops[d].size(), full.device_ops[d].size());
      for (std::size_t i = 0; i < v.device_ops[d].size(); ++i) {
        EXPECT_EQ(v.device_ops[d][i].kind, full.device_ops[d][i].kind);
        EXPECT_EQ(v.device_ops[d][i].chunk, full.device_ops[d][i].chunk);
      }
    }
  }
}

TEST(DualPipe, SchedulesAreValidAndMatchTheirGraph) {
  // Unequal costs with communication: the engine must agree with the longest path.
  for (const int p : {2, 4, 6, 8}) {
    std::vector<DeviceCosts> list;
    for (int d = 0; d < p; ++d) {
      list.push_back(
          {1000 + 37 * d, 1500 - 11 * d, 700 + 5 * d, 60 + 13 * d, 1.0, 0.5, 0.1 * (d % 5)});
    }
    for (const Schedule& s : {dualpipe(p, 2 * p), dualpipe(p, 4 * p + 2), dualpipe_v(p, 2 * p),
                              dualpipe_v(p, 3 * p + 1)}) {
      ASSERT_NO_THROW(s.validate()) << p;
      const PerDeviceCostModel costs(list, s.routes.empty() ? 2 : 1);
      const OpGraph graph(s, costs);
      EXPECT_NO_THROW(graph.check_acyclic());
      const Timeline t = Engine(s, costs).run();
      const Timeline oracle = graph.earliest_times();
      for (std::size_t d = 0; d < t.device_ops.size(); ++d) {
        for (std::size_t i = 0; i < t.device_ops[d].size(); ++i) {
          ASSERT_EQ(t.device_ops[d][i].start_ns, oracle.device_ops[d][i].start_ns) << p;
        }
      }
    }
  }
}

TEST(DualPipe, MiddleRanksRunTheirFirstStepFourPassesApart) {
  // p = 4: ranks 1 and 2 are the middle ranks; their first F0 and B1 of step 4 are not a pair.
  const Schedule s = dualpipe(4, 8);
  for (const std::size_t r : {0u, 1u, 2u, 3u}) {
    const std::size_t pairs = s.overlapped_pairs[r].size();
    // 2 per step-4 iteration (N - 2R + h + 1 = h + 1 of them), 1 per step 5 (R - h - 1).
    const std::size_t h = std::min<std::size_t>(r, 3 - r);
    const std::size_t expected = 2 * (h + 1) + (1 - h) - (h == 1 ? 1 : 0);
    EXPECT_EQ(pairs, expected) << r;
  }
}

void expect_error(const char* name, int p, int m, int v, const std::string& needle) {
  try {
    dual(name, p, m, v);
    FAIL() << name << " p=" << p << " m=" << m;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DualPipe, BadParametersAreNamed) {
  expect_error("dualpipe", 3, 12, 1,
               "setting 'pp': schedule 'dualpipe' needs an even number, got 3");
  expect_error("dualpipe", 4, 9, 1,
               "setting 'microbatches': schedule 'dualpipe' needs an even number >= 2p = 8, got 9");
  expect_error("dualpipe", 4, 6, 1,
               "setting 'microbatches': schedule 'dualpipe' needs an even number >= 2p = 8, got 6");
  expect_error("dualpipe", 4, 8, 2,
               "setting 'chunks': schedule 'dualpipe' places 1 chunk per device, got 2");
  expect_error("dualpipe-v", 4, 7, 2,
               "setting 'microbatches': schedule 'dualpipe-v' needs at least 2p = 8, got 7");
  expect_error("dualpipe-v", 4, 8, 1,
               "setting 'chunks': schedule 'dualpipe-v' places 2 chunks per device, got 1");
  expect_error("dualpipe", 0, 8, 1, "setting 'pp'");
}

}  // namespace
}  // namespace bubblesim::sim
