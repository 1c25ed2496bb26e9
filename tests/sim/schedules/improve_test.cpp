// The schedule improver (sim/schedules/improve.h): never worse than its input, always a valid
// schedule within the memory limit, and able to find the zero-bubble idea on its own; and the
// splice of two schedules (sim/schedules/splice.h) that the V generators search.
#include "sim/schedules/improve.h"

#include "sim/schedules/justify.h"
#include "sim/schedules/splice.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "sim/engine.h"
#include "sim/metrics.h"
#include "tests/sim/test_util.h"

namespace bubblesim::sim {
namespace {

using testing::uniform_costs;

// 1F1B with the backward split into B and W, each W right after its B: the zero-bubble
// paper's starting point (reference §3), where W only lengthens the critical path.
Schedule one_f_one_b_split(int p, int m) {
  Schedule s;
  s.num_microbatches = m;
  for (int d = 0; d < p; ++d)
    s.stage_device.push_back(d);
  s.device_ops.resize(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) {
    auto& ops = s.device_ops[static_cast<std::size_t>(d)];
    const int warm_up = std::min(p - 1 - d, m);
    int forwards = 0;
    for (; forwards < warm_up; ++forwards)
      ops.push_back({OpKind::F, d, 0, forwards});
    for (int i = 0; i < m; ++i) {
      if (forwards < m) ops.push_back({OpKind::F, d, 0, forwards++});
      ops.push_back({OpKind::B, d, 0, i});
      ops.push_back({OpKind::W, d, 0, i});
    }
  }
  return s;
}

// Random per-device costs: F, B, W in [0.5, 2) ms, comm in [0, 0.3) ms.
PerDeviceCostModel random_costs(int p, std::mt19937& rng) {
  std::uniform_real_distribution<double> pass(0.5, 2.0), comm(0.0, 0.3);
  std::vector<DeviceCosts> devices;
  for (int d = 0; d < p; ++d) {
    devices.push_back({ms_to_ns(pass(rng)), ms_to_ns(pass(rng)), ms_to_ns(pass(rng)),
                       ms_to_ns(comm(rng)), 1.0, 0.5});
  }
  return PerDeviceCostModel(devices);
}

TEST(Improve, NeverWorseAlwaysValidAndWithinTheMemoryLimit) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 24; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 6);
    const int m = 1 + static_cast<int>(rng() % (3 * p));
    const PerDeviceCostModel costs = random_costs(p, rng);
    const Schedule input = one_f_one_b_split(p, m);
    // 1F1B's own peak as the limit on half of the trials, a looser one on the others.
    const std::vector<double> input_peaks = activation_peaks(input, costs);
    std::vector<double> limit(input_peaks);
    if (trial % 2 == 1) {
      for (double& l : limit)
        l += 1.5;
    }
    const ImproveResult out = improve_schedule(input, costs, {limit, 2'000'000});
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " p=" << p << " m=" << m);

    ASSERT_NO_THROW(out.schedule.validate());
    const Metrics before = simulate(input, costs).metrics;
    const Metrics after = simulate(out.schedule, costs).metrics;
    EXPECT_EQ(out.before_ns, before.max_device_span_ns);
    EXPECT_EQ(out.after_ns, after.max_device_span_ns);
    EXPECT_LE(after.max_device_span_ns, before.max_device_span_ns);
    const std::vector<double> peaks = activation_peaks(out.schedule, costs);
    for (int d = 0; d < p; ++d) {
      EXPECT_LE(peaks[static_cast<std::size_t>(d)], limit[static_cast<std::size_t>(d)] + 1e-9)
          << "device " << d;
    }
  }
}

TEST(Improve, ShortensOneFOneBTowardsZbH1AtUnitCosts) {
  // At T_F = T_B = T_W = 1 and no communication, 1F1B with split B and W has the largest
  // device span 3m + 2(p-1) (device 0: p-1 of warm-up wait, p-1 of cool-down). Deferring W's
  // under 1F1B's peak (p M_B on every device) leads to ZB-H1 (reference §3), whose span is
  // m (F+B+W) + (p-1)(F+B-W) = 3m + p - 1, and nothing under that peak is known to do better.
  // The local search closes part of the cool-down (it has no compound moves to reach ZB-H1's
  // exact shape): at least one unit better than 1F1B, never below ZB-H1.
  for (const auto& [p, m] : {std::pair{4, 8}, std::pair{4, 12}, std::pair{6, 12}}) {
    const auto costs = uniform_costs(p, 1, 1, 1, 0);
    const Schedule input = one_f_one_b_split(p, m);
    const ImproveResult out = improve_schedule(
        input, costs, {std::vector<double>(static_cast<std::size_t>(p), p), 3'000'000});
    EXPECT_EQ(out.before_ns, ms_to_ns(3 * m + 2 * (p - 1))) << "p=" << p << " m=" << m;
    EXPECT_LE(out.after_ns, out.before_ns - ms_to_ns(1)) << "p=" << p << " m=" << m;
    EXPECT_GE(out.after_ns, ms_to_ns(3 * m + p - 1)) << "p=" << p << " m=" << m;
  }
}

TEST(Justify, TakesOneFOneBToZbH1AtUnitCosts) {
  // The forward-backward justification alone (no local moves), from 1F1B with split B and W
  // under 1F1B's peak: the backward pass packs every W to the right, the forward pass puts
  // each B as early as its input allows and the W's into the gaps left, which is ZB-H1's
  // shape, span 3m + p - 1 (reference §3; see the test above).
  for (const auto& [p, m] :
       {std::pair{4, 8}, std::pair{4, 12}, std::pair{6, 12}, std::pair{8, 16}}) {
    const auto costs = uniform_costs(p, 1, 1, 1, 0);
    const ImproveResult out =
        improve_schedule(one_f_one_b_split(p, m), costs,
                         {std::vector<double>(static_cast<std::size_t>(p), p), 3'000'000, false});
    EXPECT_EQ(out.after_ns, ms_to_ns(3 * m + p - 1)) << "p=" << p << " m=" << m;
  }
}

TEST(Justify, ValidPermutationWithinTheMemoryLimit) {
  // On random costs, from 1F1B at its own peak: a round either gives up or returns each
  // device's own ops in a new order that runs without deadlock and holds the limit.
  std::mt19937 rng(77);
  int returned = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 6);
    const int m = 1 + static_cast<int>(rng() % (3 * p));
    const PerDeviceCostModel costs = random_costs(p, rng);
    const Schedule input = one_f_one_b_split(p, m);
    const std::vector<double> limit = activation_peaks(input, costs);
    const std::optional<Schedule> out = justify(input, Engine(input, costs).run(), costs, limit);
    if (!out) continue;
    ++returned;
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " p=" << p << " m=" << m);
    for (int d = 0; d < p; ++d) {
      auto before = input.device_ops[static_cast<std::size_t>(d)];
      auto after = out->device_ops[static_cast<std::size_t>(d)];
      auto by_key = [](const Op& a, const Op& b) {
        return std::tuple(a.kind, a.stage, a.microbatch) <
               std::tuple(b.kind, b.stage, b.microbatch);
      };
      std::sort(before.begin(), before.end(), by_key);
      std::sort(after.begin(), after.end(), by_key);
      EXPECT_EQ(before, after) << "device " << d;
    }
    ASSERT_NO_THROW(Engine(*out, costs).run());
    const std::vector<double> peaks = activation_peaks(*out, costs);
    for (int d = 0; d < p; ++d) {
      EXPECT_LE(peaks[static_cast<std::size_t>(d)], limit[static_cast<std::size_t>(d)] + 1e-9);
    }
  }
  EXPECT_GT(returned, 12);
}

// The same order with each W run after the next B (the last W at the end): ZB-H1's idea
// without its warm-up shape, holding one more M_W.
Schedule one_f_one_b_deferred_w(int p, int m) {
  Schedule s = one_f_one_b_split(p, m);
  for (auto& ops : s.device_ops) {
    std::vector<Op> deferred, pending;
    for (const Op& op : ops) {
      if (op.kind == OpKind::W) {
        pending.push_back(op);
        continue;
      }
      deferred.push_back(op);
      if (op.kind == OpKind::B && pending.size() > 0 &&
          pending.front().microbatch < op.microbatch) {
        deferred.push_back(pending.front());
        pending.erase(pending.begin());
      }
    }
    deferred.insert(deferred.end(), pending.begin(), pending.end());
    ops = std::move(deferred);
  }
  return s;
}

TEST(Improve, BestOfStartsNeverWorseThanTheFirstStartsImprovement) {
  std::mt19937 rng(7);
  int shorter = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 5);
    const int m = p + static_cast<int>(rng() % (2 * p));
    const PerDeviceCostModel costs = random_costs(p, rng);
    const std::vector<Schedule> starts{one_f_one_b_split(p, m), one_f_one_b_deferred_w(p, m)};
    std::vector<double> limit = activation_peaks(starts[1], costs);
    for (double& l : limit)
      l += 1.0;
    constexpr std::size_t kBudget = 800'000;
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " p=" << p << " m=" << m);
    const ImproveResult single = improve_schedule(starts[0], costs, {limit, kBudget});
    const ImproveResult best = improve_best_of(starts, costs, {limit, kBudget});

    ASSERT_NO_THROW(best.schedule.validate());
    const Metrics after = simulate(best.schedule, costs).metrics;
    EXPECT_EQ(best.after_ns, after.max_device_span_ns);
    EXPECT_LE(best.after_ns, single.after_ns);
    shorter += best.after_ns < single.after_ns ? 1 : 0;
    const TimeNs shortest_start = std::min(simulate(starts[0], costs).metrics.max_device_span_ns,
                                           simulate(starts[1], costs).metrics.max_device_span_ns);
    EXPECT_EQ(best.before_ns, shortest_start);
    const std::vector<double> peaks = activation_peaks(best.schedule, costs);
    for (int d = 0; d < p; ++d)
      EXPECT_LE(peaks[static_cast<std::size_t>(d)], limit[static_cast<std::size_t>(d)] + 1e-9);
  }
  RecordProperty("trials_shorter_than_one_start", shorter);
}

// The first start's search and the screening searches run side by side on the arena's cores,
// each seeded: the result is the same on 1, 2 or 3 threads. Three starts (one a duplicate,
// which is screened once), random costs with transfers, a limit the moves must respect.
TEST(Improve, BestOfStartsGivesTheSameOnAnyNumberOfThreads) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 3; ++trial) {
    const int p = 3 + trial;
    const int m = 2 * p;
    const PerDeviceCostModel costs = random_costs(p, rng);
    const std::vector<Schedule> starts{one_f_one_b_split(p, m), one_f_one_b_deferred_w(p, m),
                                       one_f_one_b_split(p, m)};
    std::vector<double> limit = activation_peaks(starts[1], costs);
    for (double& l : limit)
      l += 1.0;
    auto on = [&](int threads) {
      tbb::task_arena arena(threads);
      return arena.execute([&] { return improve_best_of(starts, costs, {limit, 400'000}); });
    };
    const ImproveResult one = on(1);
    for (const int threads : {2, 3}) {
      const ImproveResult many = on(threads);
      EXPECT_EQ(many.schedule, one.schedule) << "trial " << trial << ", " << threads;
      EXPECT_EQ(many.after_ns, one.after_ns) << "trial " << trial << ", " << threads;
      EXPECT_EQ(many.before_ns, one.before_ns) << "trial " << trial << ", " << threads;
      EXPECT_EQ(many.runs, one.runs) << "trial " << trial << ", " << threads;
    }
    // Called from a task group that is being cancelled (an exception elsewhere in a sweep),
    // its searches still all run: the same result, not one read from a skipped search.
    tbb::task_group group;
    std::optional<ImproveResult> cancelled;
    group.run([&] {
      group.cancel();
      cancelled = improve_best_of(starts, costs, {limit, 400'000});
    });
    group.wait();
    ASSERT_TRUE(cancelled.has_value()) << "trial " << trial;
    EXPECT_EQ(cancelled->schedule, one.schedule) << "trial " << trial;
  }
}

TEST(Improve, ZeroBudgetReturnsTheInput) {
  const auto costs = uniform_costs(4, 1, 1, 1, 0);
  const Schedule input = one_f_one_b_split(4, 8);
  const ImproveResult out = improve_schedule(input, costs, {{}, 0});
  EXPECT_EQ(out.schedule.device_ops, input.device_ops);
  EXPECT_EQ(out.before_ns, out.after_ns);
}

// The ops of each device of `schedule`, sorted: equal for two orders of the same ops.
std::vector<std::vector<Op>> sorted_ops(const Schedule& schedule) {
  std::vector<std::vector<Op>> out = schedule.device_ops;
  for (auto& ops : out) {
    std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
      return std::tie(a.kind, a.stage, a.microbatch) < std::tie(b.kind, b.stage, b.microbatch);
    });
  }
  return out;
}

TEST(Splice, TakesTheFirstsOpsBeforeTheCutThenTheSecondsOrder) {
  const int p = 4, m = 8;
  const auto costs = uniform_costs(p, 1, 1, 1, 0);
  const Schedule first = one_f_one_b_split(p, m);
  const Schedule second = testing::generate("zb-h1", p, m);
  const Timeline run = Engine(first, costs).run();
  EXPECT_EQ(splice(first, run, second, 0).device_ops, second.device_ops);
  EXPECT_EQ(splice(first, run, second, run.max_span_ns() + 1).device_ops, first.device_ops);
  for (const TimeNs cut_ms : {3, 7, 12, 20}) {
    const Schedule joined = splice(first, run, second, ms_to_ns(cut_ms));
    EXPECT_EQ(sorted_ops(joined), sorted_ops(first)) << "cut " << cut_ms;
    for (std::size_t d = 0; d < joined.device_ops.size(); ++d) {
      std::size_t before = 0;  // the first's ops that started before the cut, in its order
      while (before < run.device_ops[d].size() &&
             run.device_ops[d][before].start_ns < ms_to_ns(cut_ms))
        ++before;
      ASSERT_GE(joined.device_ops[d].size(), before);
      EXPECT_TRUE(std::equal(first.device_ops[d].begin(),
                             first.device_ops[d].begin() + static_cast<std::ptrdiff_t>(before),
                             joined.device_ops[d].begin()))
          << "cut " << cut_ms << " device " << d;
      std::vector<Op> rest;  // the second's order of the others
      for (const Op& op : second.device_ops[d]) {
        if (std::find(first.device_ops[d].begin(),
                      first.device_ops[d].begin() + static_cast<std::ptrdiff_t>(before),
                      op) == first.device_ops[d].begin() + static_cast<std::ptrdiff_t>(before))
          rest.push_back(op);
      }
      EXPECT_TRUE(std::equal(rest.begin(), rest.end(),
                             joined.device_ops[d].begin() + static_cast<std::ptrdiff_t>(before)))
          << "cut " << cut_ms << " device " << d;
    }
  }
}

// ZB-H1 spoilt early (device 0 runs microbatch 1's forward before microbatch 0's: the pipeline
// starts a pass late) and spoilt late (the last device runs a W before the last forward, which
// then reaches device 0's last backward a pass late): each is longer than ZB-H1, and the late
// one's beginning joined to the early one's end is ZB-H1 again.
TEST(Splice, JoinsOneSchedulesGoodBeginningToAnothersGoodEnd) {
  const int p = 4, m = 8;
  const auto costs = uniform_costs(p, 1, 1, 1, 0);
  const Schedule zb_h1 = testing::generate("zb-h1", p, m);
  const TimeNs best = simulate(zb_h1, costs).metrics.max_device_span_ns;
  Schedule early = zb_h1;
  std::swap(early.device_ops[0][0], early.device_ops[0][1]);
  Schedule late = zb_h1;
  auto& last = late.device_ops[static_cast<std::size_t>(p - 1)];
  const auto f7 = std::find(last.begin(), last.end(), Op{OpKind::F, p - 1, 0, m - 1});
  const auto w4 = std::find(last.begin(), last.end(), Op{OpKind::W, p - 1, 0, m - 4});
  ASSERT_TRUE(f7 < w4);
  std::rotate(f7, w4, w4 + 1);  // W(m - 4) just before F(m - 1)
  const TimeNs early_ns = simulate(early, costs).metrics.max_device_span_ns;
  const TimeNs late_ns = simulate(late, costs).metrics.max_device_span_ns;
  ASSERT_GT(early_ns, best);
  ASSERT_GT(late_ns, best);
  std::vector<SpanRanked> ranked{{late, late_ns}, {early, early_ns}};
  if (early_ns < late_ns) std::swap(ranked[0], ranked[1]);
  const std::vector<double> limit = activation_peaks(zb_h1, costs);
  splice_best(ranked, costs, limit, 1'000'000);
  ASSERT_EQ(ranked.size(), 3u);  // one splice found, at the front
  EXPECT_EQ(ranked.front().second, best);
  EXPECT_EQ(simulate(ranked.front().first, costs).metrics.max_device_span_ns, best);
  const std::vector<double> peaks = activation_peaks(ranked.front().first, costs);
  for (int d = 0; d < p; ++d)
    EXPECT_LE(peaks[static_cast<std::size_t>(d)], limit[static_cast<std::size_t>(d)] + 1e-9);
  // Nothing is spliced without a budget.
  std::vector<SpanRanked> unspent{{late, late_ns}, {early, early_ns}};
  splice_best(unspent, costs, limit, 0);
  EXPECT_EQ(unspent.size(), 2u);
}

TEST(Splice, BestSpliceIsValidWithinTheLimitAndNeverLonger) {
  std::mt19937 rng(20241127);
  for (int trial = 0; trial < 12; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 5);
    const int m = p + static_cast<int>(rng() % (2 * p));
    const PerDeviceCostModel costs = random_costs(p, rng);
    std::vector<SpanRanked> ranked;
    for (const Schedule& s : {one_f_one_b_split(p, m), testing::generate("zb-h1", p, m),
                              testing::generate("zb-h2", p, m)}) {
      ranked.emplace_back(s, simulate(s, costs).metrics.max_device_span_ns);
    }
    std::sort(ranked.begin(), ranked.end(),
              [](const SpanRanked& a, const SpanRanked& b) { return a.second < b.second; });
    const TimeNs shortest = ranked.front().second;
    std::vector<double> limit = activation_peaks(ranked.back().first, costs);
    splice_best(ranked, costs, limit, 2'000'000);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " p=" << p << " m=" << m);
    ASSERT_NO_THROW(ranked.front().first.validate());
    EXPECT_LE(ranked.front().second, shortest);
    EXPECT_EQ(simulate(ranked.front().first, costs).metrics.max_device_span_ns,
              ranked.front().second);
  }
}

}  // namespace
}  // namespace bubblesim::sim
