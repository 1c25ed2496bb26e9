// The exact mode: the zero-bubble ILP solved with CBC, warm-started from the heuristic.
#include "sim/exact/zb_ilp.h"

#include <gtest/gtest.h>

#include <limits>

#include "sim/engine.h"
#include "sim/op_graph.h"
#include "sim/schedules/v_shape.h"
#include "sim/schedules/zb_auto.h"
#include "tests/sim/test_util.h"

namespace bubblesim::sim::exact {
namespace {

using testing::uniform_costs;

std::vector<double> limits(int p, double whole_stages) {
  return std::vector<double>(static_cast<std::size_t>(p), whole_stages * p);
}

// Solves from the heuristic's schedule and checks what every result must satisfy: no worse
// than the heuristic, within memory, and, when proven optimal, the solver's optimum is the
// engine's value of the returned schedule.
ExactResult solve_and_check(int p, int m, const CostModel& costs, double whole_stages) {
  const std::vector<double> limit = limits(p, whole_stages);
  const Schedule heuristic = auto_zero_bubble(p, m, costs, limit);
  const ExactResult r = solve_zero_bubble_ilp(heuristic, costs, limit, {30});
  const Metrics engine = simulate(r.schedule, costs).metrics;
  EXPECT_EQ(r.span_ns, engine.max_device_span_ns);
  EXPECT_EQ(r.warm_start_span_ns, simulate(heuristic, costs).metrics.max_device_span_ns);
  EXPECT_LE(r.span_ns, r.warm_start_span_ns);
  EXPECT_LE(r.bound_ns, static_cast<double>(r.span_ns));
  for (const double peak : activation_peaks(r.schedule, costs))
    EXPECT_LE(peak, whole_stages * p + 1e-9);
  if (r.proven_optimal) {
    // The solver works in doubles to a tolerance far below a microsecond.
    EXPECT_NEAR(r.objective_ns, static_cast<double>(engine.max_device_span_ns), 1000);
    EXPECT_EQ(r.gap(), 0.0);
  }
  return r;
}

TEST(ZbIlp, ProvesTheHeuristicOptimalOnSmallUniformInstances) {
  if (!available()) GTEST_SKIP() << "built without CBC";
  struct Case {
    int p, m;
    double whole_stages;
  };
  for (const Case c : {Case{2, 4, 1}, Case{3, 4, 1}, Case{3, 4, 2}, Case{4, 4, 1}}) {
    const auto costs = uniform_costs(c.p, 18.522, 18.086, 9.337, 0.601);
    const ExactResult r = solve_and_check(c.p, c.m, costs, c.whole_stages);
    EXPECT_TRUE(r.proven_optimal) << c.p << " " << c.m;
    EXPECT_EQ(r.span_ns, r.warm_start_span_ns) << c.p << " " << c.m;
  }
}

TEST(ZbIlp, BeatsTheHeuristicOnUnequalStages) {
  if (!available()) GTEST_SKIP() << "built without CBC";
  // Two stages whose F, B and W differ by up to 40%: the greedy is not optimal there.
  const PerDeviceCostModel two(
      {{ms_to_ns(5.572), ms_to_ns(11.019), ms_to_ns(4.759), ms_to_ns(1.264), 1.0, 0.5},
       {ms_to_ns(13.487), ms_to_ns(7.693), ms_to_ns(7.304), ms_to_ns(1.309), 1.0, 0.5}});
  const ExactResult r = solve_and_check(2, 4, two, 1);
  EXPECT_TRUE(r.proven_optimal);
  EXPECT_LT(r.span_ns, r.warm_start_span_ns);

  const PerDeviceCostModel three(
      {{ms_to_ns(13.414), ms_to_ns(9.967), ms_to_ns(6.019), ms_to_ns(1.179), 1.0, 0.5},
       {ms_to_ns(11.234), ms_to_ns(14.978), ms_to_ns(3.298), ms_to_ns(1.320), 1.0, 0.5},
       {ms_to_ns(8.025), ms_to_ns(6.059), ms_to_ns(3.932), ms_to_ns(1.214), 1.0, 0.5}});
  const ExactResult r3 = solve_and_check(3, 4, three, 1);
  EXPECT_TRUE(r3.proven_optimal);
  EXPECT_LT(r3.span_ns, r3.warm_start_span_ns);
}

TEST(ZbIlp, ReportsABoundAndGapWhenStoppedByTheTimeLimit) {
  if (!available()) GTEST_SKIP() << "built without CBC";
  const int p = 4, m = 8;
  const auto costs = uniform_costs(p, 18.522, 18.086, 9.337, 0.601);
  const std::vector<double> limit = limits(p, 2);
  const Schedule heuristic = auto_zero_bubble(p, m, costs, limit);
  const ExactResult r = solve_zero_bubble_ilp(heuristic, costs, limit, {0.5});
  EXPECT_FALSE(r.proven_optimal);
  EXPECT_LE(r.span_ns, r.warm_start_span_ns);
  // Every stage's span holds at least its own work.
  EXPECT_GE(r.bound_ns, static_cast<double>(m * ms_to_ns(18.522 + 18.086 + 9.337)) - 1000);
  EXPECT_GT(r.gap(), 0.0);
  EXPECT_NEAR(r.gap(), (static_cast<double>(r.span_ns) - r.bound_ns) / r.span_ns, 1e-12);
}

TEST(ZbIlp, RefusesLargeInstancesAndSaysWhy) {
  const int p = 8, m = 32;
  const auto costs = uniform_costs(p, 1, 1, 1, 0);
  const std::vector<double> limit = limits(p, 1);
  const Schedule heuristic = auto_zero_bubble(p, m, costs, limit);
  try {
    solve_zero_bubble_ilp(heuristic, costs, limit, {1});
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    const std::string expected =
        available() ? "setting 'exact': p*m = 256 is above the 200 the exact mode takes; leave it "
                      "out for the heuristic alone"
                    : "setting 'exact': this build has no ILP solver (install coinor-libcbc-dev "
                      "and rebuild)";
    EXPECT_EQ(e.what(), expected);
  }
}

}  // namespace
}  // namespace bubblesim::sim::exact

// The V placement (2 stages per device): the program's proven optimum against every order
// each device could run, each timed by the engine (an independent exhaustive search).
namespace bubblesim::sim::exact {
namespace {

// Every order of a device's ops that keeps each stage's kinds in microbatch order and a
// microbatch's F before its B before its W on a stage, within the memory limit; orders that
// deadlock across devices are left to the engine to reject.
void orders(const std::vector<Op>& ops, const CostModel& costs, int device, double limit,
            std::vector<Op>& prefix, std::vector<bool>& used, double held,
            std::vector<std::vector<Op>>& out) {
  if (prefix.size() == ops.size()) {
    out.push_back(prefix);
    return;
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (used[i]) continue;
    const Op& op = ops[i];
    bool ready = true;
    for (std::size_t k = 0; k < ops.size() && ready; ++k) {
      if (used[k] || k == i) continue;
      const Op& other = ops[k];
      // Not yet run: `other` must not be required before `op`.
      const bool same_stage_kind_earlier =
          other.stage == op.stage && other.kind == op.kind && other.microbatch < op.microbatch;
      const bool same_mb_earlier_kind = other.stage == op.stage &&
                                        other.microbatch == op.microbatch &&
                                        static_cast<int>(other.kind) < static_cast<int>(op.kind);
      // The V's own chain on one device, for one microbatch: F up the stages, every F before
      // any B, B down the stages. (Orders against it deadlock; leaving them out saves time.)
      const bool same_mb = other.microbatch == op.microbatch;
      const bool chain =
          same_mb && ((other.kind == OpKind::F && op.kind == OpKind::F && other.stage < op.stage) ||
                      (other.kind == OpKind::F && op.kind != OpKind::F) ||
                      (other.kind == OpKind::B && op.kind == OpKind::B && other.stage > op.stage));
      ready = !same_stage_kind_earlier && !same_mb_earlier_kind && !chain;
    }
    const double after = held + costs.activation_delta(op, device);
    if (!ready || after > limit + 1e-9) continue;
    used[i] = true;
    prefix.push_back(op);
    orders(ops, costs, device, limit, prefix, used, after, out);
    prefix.pop_back();
    used[i] = false;
  }
}

TimeNs exhaustive_optimum(const Schedule& shape, const CostModel& costs, double limit) {
  std::vector<std::vector<std::vector<Op>>> per_device;
  for (int d = 0; d < shape.num_devices(); ++d) {
    std::vector<Op> ops = shape.device_ops[static_cast<std::size_t>(d)];
    std::vector<Op> prefix;
    std::vector<bool> used(ops.size(), false);
    per_device.emplace_back();
    orders(ops, costs, d, limit, prefix, used, 0, per_device.back());
  }
  TimeNs best = std::numeric_limits<TimeNs>::max();
  Schedule trial = shape;
  for (const auto& first : per_device[0]) {
    for (const auto& second : per_device[1]) {
      trial.device_ops = {first, second};
      try {
        best = std::min(best, Engine(trial, costs).run_validated().max_span_ns());
      } catch (const DeadlockError&) {
      }
    }
  }
  return best;
}

TEST(ZbIlp, VPlacementOptimumEqualsAnExhaustiveSearch) {
  if (!available()) GTEST_SKIP() << "built without CBC";
  // p = 2, m = 2, uneven chunk times, a transfer, and a limit of 2.5 chunk activations (of the
  // 4 that both microbatches' two chunks would hold; a W frees half of one).
  const int p = 2, m = 2;
  const PerDeviceCostModel costs(
      {{ms_to_ns(2.0), ms_to_ns(2.6), ms_to_ns(1.2), ms_to_ns(0.3), 2.0, 1.0},
       {ms_to_ns(2.8), ms_to_ns(2.2), ms_to_ns(1.6), ms_to_ns(0.3), 2.0, 1.0}},
      2);
  ScheduleRegistry registry;
  add_v_shape_schedules(registry);
  ScheduleParams params{p, m, 2, &costs, 2.5};
  params.improve = false;
  const Schedule heuristic = registry.get("v-half").generate(params);
  const std::vector<double> limit(2, 2.5);
  const ExactResult r = solve_zero_bubble_ilp(heuristic, costs, limit, {30});
  ASSERT_TRUE(r.proven_optimal);
  EXPECT_EQ(r.span_ns, simulate(r.schedule, costs).metrics.max_device_span_ns);
  for (const double peak : activation_peaks(r.schedule, costs))
    EXPECT_LE(peak, 2.5 + 1e-9);
  EXPECT_EQ(r.span_ns, exhaustive_optimum(heuristic, costs, 2.5));
}

}  // namespace
}  // namespace bubblesim::sim::exact
