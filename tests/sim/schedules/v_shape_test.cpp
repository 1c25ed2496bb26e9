// ZB-V: zero bubble at unit costs within p M_B (../shared/reference/zero-bubble.md §5).
#include "sim/schedules/v_shape.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <limits>
#include <string>
#include <vector>

#include "sim/op_graph.h"
#include "sim/placement.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/stage_costs.h"
#include "sim/schedules/v_blocks.h"
#include "sim/schedules/v_greedy.h"
#include "sim/simulation.h"

namespace bubblesim::sim {
namespace {

Schedule v_shape(const char* name, int p, int m, const CostModel* costs = nullptr,
                 double mem_limit = 0) {
  ScheduleRegistry registry;
  add_v_shape_schedules(registry);
  return registry.get(name).generate(ScheduleParams{p, m, 2, costs, mem_limit});
}

Schedule zb_v(int p, int m, const CostModel* costs = nullptr, double mem_limit = 0) {
  return v_shape("zb-v", p, m, costs, mem_limit);
}

// Uneven costs with transfers, two chunks a device: F rising and B falling with the device,
// W from `w_ms` up; M_B = 1 and M_W = `m_w` per whole stage.
PerDeviceCostModel uneven_costs(int p, double w_ms, double m_w) {
  std::vector<DeviceCosts> devices;
  for (int d = 0; d < p; ++d) {
    devices.push_back(DeviceCosts{ms_to_ns(1.0 + 0.1 * d), ms_to_ns(1.2 - 0.05 * d),
                                  ms_to_ns(w_ms + 0.03 * d), ms_to_ns(0.05), 1.0, m_w});
  }
  return PerDeviceCostModel(devices, 2);
}

// What `make` returns, run in a oneTBB arena of `threads` threads.
template <class Make>
auto on_threads(int threads, const Make& make) {
  tbb::task_arena arena(threads);
  return arena.execute(make);
}

PerDeviceCostModel unit(int p) {
  return PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(1), ms_to_ns(1), ms_to_ns(1), 0, 1.0, 0.5}, p, 2);
}

TEST(ZbV, ZeroBubbleAtPeakPMbWithUnitCosts) {
  for (const int p : {1, 2, 3, 4, 6, 8, 16}) {
    for (const int m : {2 * p, 3 * p, 4 * p + 1}) {
      const auto costs = unit(p);
      const Schedule s = zb_v(p, m, &costs);
      EXPECT_EQ(s.stage_device, v_placement(p));
      const Metrics metrics = simulate(s, costs).metrics;
      EXPECT_EQ(metrics.bubble_rate, 0.0) << "p=" << p << " m=" << m;
      EXPECT_LE(metrics.peak_activation_memory, p + 1e-9) << "p=" << p << " m=" << m;
      // The reference's unit-cost table: 0 bubble at 2p chunk units = p whole-stage M_B.
      if (p == 4 || p == 8) {
        EXPECT_DOUBLE_EQ(metrics.peak_activation_memory, p) << p;
      }
    }
  }
}

// Large pipelines get one greedy run only; with free transfers it is the uncapped one, which
// still reaches zero bubble (the 7/8 cap alone gave 0.0045 here).
TEST(ZbV, ZeroBubbleWithUnitCostsOnALargePipeline) {
  const int p = 32;
  for (const int m : {2 * p, 8 * p}) {
    const auto costs = unit(p);
    const Metrics metrics = simulate(zb_v(p, m, &costs), costs).metrics;
    EXPECT_EQ(metrics.bubble_rate, 0.0) << "m=" << m;
    EXPECT_DOUBLE_EQ(metrics.peak_activation_memory, p) << "m=" << m;
  }
}

TEST(ZbV, RespectsTheMemoryLimitWithRealCosts) {
  const int p = 8, m = 24;
  const auto costs = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 1.0, 0.5},
      p, 2);
  double previous_span = 1e300;
  for (const double limit : {2.0, 4.0, 8.0, 16.0}) {
    const Schedule s = zb_v(p, m, &costs, limit);
    const Metrics metrics = simulate(s, costs).metrics;
    EXPECT_LE(metrics.peak_activation_memory, limit + 1e-9) << limit;
    // More memory never makes it slower here.
    EXPECT_LE(static_cast<double>(metrics.max_device_span_ns), previous_span) << limit;
    previous_span = static_cast<double>(metrics.max_device_span_ns);
    EXPECT_EQ(Engine(s, costs).run().device_ops.size(), static_cast<std::size_t>(p));
    EXPECT_NO_THROW(OpGraph(s, costs).check_acyclic());
  }
}

// The benchmark's case (issue 4): the 1.5B model's times at p = 32, m = 256, where the search
// has room for one greedy run. ZB-V holds ZB-H1's memory (p M_B) and exists to have less
// bubble than it (reference §5): ZB-H1 with the same whole-device times, built by its own
// handcrafted generator, is the bar.
TEST(ZbV, LargePipelineWithRealCostsBeatsZbH1AtItsMemory) {
  const int p = 32, m = 256;
  const DeviceCosts device{
      ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 1.0, 0.5};
  const auto costs = PerDeviceCostModel::uniform(device, p, 2);
  const Metrics metrics = simulate(zb_v(p, m, &costs), costs).metrics;
  ScheduleRegistry handcrafted;
  add_handcrafted_schedules(handcrafted);
  const auto line_costs = PerDeviceCostModel::uniform(device, p, 1);
  const Metrics zb_h1 =
      simulate(handcrafted.get("zb-h1").generate(ScheduleParams{p, m, 1}), line_costs).metrics;
  EXPECT_LT(metrics.max_device_span_ns, zb_h1.max_device_span_ns);
  EXPECT_LE(metrics.peak_activation_memory, p + 1e-9);
}

// Rows of zbv_visible.csv (../shared/data/reference/) at 1F1B's memory where memory binds and
// the generator reaches the authors' cost through a choice that turns round by phase (Choices
// in v_greedy.cpp), or a decision its search forces (the first two without the improver):
//  - line 37: p = 12, m = 44, per chunk F 851, B 873, W 380, comm 62, M_W / M_B = 16/37. The
//    warm-up fills device 0 with chunk-0 forwards that stay in flight to the end; the choice of
//    which chunk's F goes first may turn round after a device's first B. Before it: 202,545.
//  - line 8: p = 16, m = 52, F 1082, B 1175, W 1021, comm 86, M_W / M_B = 0.43. The choice of
//    which chunk's B goes first may turn round once a device has started all its chunk-0
//    forwards (its tail). Before it: 353,777.
//  - line 78: p = 16, m = 41, F 1198, B 1186, W 578, comm 134, M_W / M_B = 0.43, with the
//    improver: phase 3 of the search may force the F of the chunk the rules do not prefer.
//    Before it: 273,054.
//  - line 72: p = 32, m = 92, F 1114, B 1095, W 906, comm 89, M_W / M_B = 0.43, without the
//    improver: the best run's choices again with every device's cap on chunk-0 microbatches
//    in flight one higher (phase 1's budget reaches a few combinations at p = 32, under fixed
//    caps). Before it: 603,377.
TEST(ZbV, ReachesTheAuthorsCostWhereMemoryBinds) {
  struct Row {
    int line, p, m, f, b, w, comm;
    double m_b, m_w;
    double authors_ms;
    bool improve;
  };
  for (const Row& row : {Row{37, 12, 44, 851, 873, 380, 62, 303104, 131072, 199586, false},
                         Row{8, 16, 52, 1082, 1175, 1021, 86, 303104, 131072, 353377, false},
                         Row{78, 16, 41, 1198, 1186, 578, 134, 454656, 196608, 272786, true},
                         Row{72, 32, 92, 1114, 1095, 906, 89, 151552, 65536, 601654, false}}) {
    // Whole-stage times and memory: twice the per-chunk values of the file.
    const auto costs = PerDeviceCostModel::uniform(
        DeviceCosts{ms_to_ns(2 * row.f), ms_to_ns(2 * row.b), ms_to_ns(2 * row.w),
                    ms_to_ns(row.comm), 2 * row.m_b, 2 * row.m_w},
        row.p, 2);
    ScheduleRegistry registry;
    add_v_shape_schedules(registry);
    ScheduleParams params{row.p, row.m, 2, &costs};
    params.improve = row.improve;
    const Metrics metrics = simulate(registry.get("zb-v").generate(params), costs).metrics;
    EXPECT_LE(metrics.max_device_span_ns, ms_to_ns(row.authors_ms)) << "line " << row.line;
    EXPECT_LE(metrics.peak_activation_memory, row.p * 2 * row.m_b) << "line " << row.line;
  }
}

TEST(ZbV, LimitBelowOneMicrobatchIsAnError) {
  const auto costs = unit(4);
  try {
    zb_v(4, 8, &costs, 0.5);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("below what one microbatch needs"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ScheduleRegistry{}.find("zb-v"), nullptr);  // registries start empty
}

// No limit (inf) is a limit that fits every microbatch: the same schedule as a finite one that
// does. (The search divided the limit by M_B and cast inf to int: undefined behaviour, which
// clang's UBSan build of cmake/test.sh stops at.)
TEST(ZbV, AnUnlimitedLimitIsOneThatFitsEveryMicrobatch) {
  const int p = 4, m = 12;
  const auto costs = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 1.0, 0.5},
      p, 2);
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    const Schedule unlimited = v_shape(name, p, m, &costs, std::numeric_limits<double>::infinity());
    EXPECT_EQ(unlimited.device_ops, v_shape(name, p, m, &costs, 1e5).device_ops) << name;
  }
}

// The reference's unit-cost table (§5): bubble rate, p, m.
struct Published {
  const char* schedule;
  int p, m;
  double bubble_rate;
};

TEST(ControllableMemory, VHalfAndVMinMatchThePublishedUnitCostTable) {
  const Published rows[] = {{"v-half", 4, 8, 0.0943},
                            {"v-half", 8, 24, 0.1056},
                            {"v-min", 4, 8, 0.1864},
                            {"v-min", 8, 24, 0.1579}};
  for (const Published& row : rows) {
    const auto costs = unit(row.p);
    const Metrics metrics = simulate(v_shape(row.schedule, row.p, row.m, &costs), costs).metrics;
    EXPECT_LE(metrics.bubble_rate, row.bubble_rate + 0.0005) << row.schedule << " p=" << row.p;
    // ... at the published peaks: (p+2)/2 and floor((p+4)/3) whole-stage microbatches.
    const double peak = std::string(row.schedule) == "v-half" ? (row.p + 2) / 2.0 : (row.p + 4) / 3;
    EXPECT_LE(metrics.peak_activation_memory, peak + 1e-9) << row.schedule << " p=" << row.p;
  }
}

// The zero-bubble authors' V-Min at unit cost (../shared/data/reference/v_half_min_visible.csv,
// in chunk units: 185 at p = 12, m = 24, 257 at p = 12, m = 36, 377 at p = 24, m = 48, 521 at
// p = 24, m = 72, 507 at p = 32, m = 64; their memory convention: a B frees nothing, M_W =
// M_B). Where p is a multiple of 3 the blocks squeezed by justification end a step or two
// above; backfilled (v_blocks.h) with a wait at the V's top they reach the authors' spans, as
// do the per-device choices of the search's second phase at p = 12; at p = 32 caps that fall
// by a fraction of a microbatch per device beat them.
TEST(ControllableMemory, VMinMeetsTheAuthorsUnitCostSpans) {
  struct Row {
    int p, m, chunk_units;
    bool beats;
  };
  for (const Row& row : {Row{12, 24, 185, false}, Row{12, 36, 257, false}, Row{24, 48, 377, false},
                         Row{24, 72, 521, false}, Row{32, 64, 507, true}}) {
    // A chunk's F, B, W: 0.5 ms each.
    const auto costs = PerDeviceCostModel::uniform(
        DeviceCosts{ms_to_ns(1), ms_to_ns(1), ms_to_ns(1), 0, 1.0, 1.0}, row.p, 2);
    const Metrics metrics = simulate(v_shape("v-min", row.p, row.m, &costs), costs).metrics;
    const TimeNs authors = ms_to_ns(0.5 * row.chunk_units);
    if (row.beats) {
      EXPECT_LT(metrics.max_device_span_ns, authors) << "p=" << row.p << " m=" << row.m;
    } else {
      EXPECT_LE(metrics.max_device_span_ns, authors) << "p=" << row.p << " m=" << row.m;
    }
    EXPECT_LE(metrics.peak_activation_memory, (row.p + 4) / 3 + 1e-9) << "p=" << row.p;
  }
}

// backfilled_blocks (v_blocks.h) on uneven costs with transfers, at V-Min's, V-Half's and
// zb-v's limits, with B's that free nothing or half of an F's memory: every order holds every
// op once, runs without deadlock, keeps each device within its limit at every point of its
// order, and comes with the span the engine gives it.
TEST(VBlocks, BackfilledOrdersAreValidAndWithinTheLimit) {
  for (const int p : {2, 3, 4, 6}) {
    for (const double m_w : {0.5, 1.0}) {
      const PerDeviceCostModel costs = uneven_costs(p, 0.7, m_w);
      const std::vector<StageCosts> stage = stage_costs(v_placement(p), costs);
      for (const double whole_stages : {double((p + 4) / 3), (p + 2) / 2.0, double(p)}) {
        const std::vector<double> limit(static_cast<std::size_t>(p), whole_stages);
        for (const int m : {p, 2 * p + 1}) {
          SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) +
                       " limit=" + std::to_string(whole_stages) + " M_W=" + std::to_string(m_w));
          const std::vector<SpanRanked> orders = backfilled_blocks(p, m, stage, limit, costs);
          EXPECT_FALSE(orders.empty());
          for (const auto& [schedule, span_ns] : orders) {
            EXPECT_NO_THROW(schedule.validate());
            EXPECT_EQ(simulate(schedule, costs).metrics.max_device_span_ns, span_ns);
            for (std::size_t d = 0; d < schedule.device_ops.size(); ++d) {
              double held = 0;
              for (const Op& op : schedule.device_ops[d]) {
                held += costs.activation_delta(op, static_cast<int>(d));
                EXPECT_LE(held, limit[d] + 1e-9);
              }
            }
          }
        }
      }
    }
  }
}

TEST(ControllableMemory, PeaksAreHalfAndAThirdOfOneFOneBs) {
  for (const int p : {2, 3, 4, 5, 8, 12}) {
    const auto costs = unit(p);
    const Metrics half = simulate(v_shape("v-half", p, 3 * p, &costs), costs).metrics;
    const Metrics third = simulate(v_shape("v-min", p, 3 * p, &costs), costs).metrics;
    EXPECT_LE(half.peak_activation_memory, (p + 2) / 2.0 + 1e-9) << p;
    EXPECT_LE(third.peak_activation_memory, (p + 4) / 3 + 1e-9) << p;
    // Less memory costs bubble, never the other way round.
    const Metrics full = simulate(zb_v(p, 3 * p, &costs), costs).metrics;
    EXPECT_LE(full.bubble_rate, half.bubble_rate) << p;
    EXPECT_LE(half.bubble_rate, third.bubble_rate + 1e-12) << p;
  }
}

// On pipelines whose search pays for a single run of the greedy, V-Half keeps its memory and its
// building block: at unit costs the block's steady state has no bubble, so a device's idle (its
// span minus its work, 3m ms here) does not grow with m. At p = 32, m = 240 (46,080 ops) the
// uncapped first candidate alone fell back to V-Min's peak (11.5) with 1.38 times the idle of
// m = 128; both anchors of the search's first phase now run whatever the budget.
TEST(ControllableMemory, VHalfKeepsItsPeakAndIdleOnLargePipelines) {
  const int p = 32;
  const auto costs = unit(p);
  auto run = [&](int m) { return simulate(v_shape("v-half", p, m, &costs), costs).metrics; };
  const Metrics mid = run(128), large = run(240);
  EXPECT_DOUBLE_EQ(large.peak_activation_memory, (p + 2) / 2.0);
  const double mid_idle_ms = ns_to_ms(mid.max_device_span_ns) - 3.0 * 128;
  const double large_idle_ms = ns_to_ms(large.max_device_span_ns) - 3.0 * 240;
  EXPECT_GT(mid_idle_ms, 0);
  EXPECT_LE(large_idle_ms, 1.05 * mid_idle_ms);
}

// Past 30,000 ops a pipeline gets no unit-cost blocks timed at its size: V-Half and V-Min each
// add microbatches at the pace of the smaller pipelines' own schedules, not slower (their
// building blocks, chosen by their steady period under the real costs and a short run). With
// uneven passes and transfers, p = 16, m = 400 added 7.2 ms a microbatch to m = 96's V-Half
// (where every device's work is 5.6) and 9.7 to its V-Min, against 7.8 from m = 64 to 96.
TEST(ControllableMemory, LargePipelinesAddMicrobatchesAtTheSmallerOnesPace) {
  const int p = 16;
  const auto costs = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(2), ms_to_ns(2.4), ms_to_ns(1.2), ms_to_ns(0.1), 1.0, 0.5}, p, 2);
  auto span_ms = [&](const char* name, int m) {
    const Schedule schedule = v_shape(name, p, m, &costs);
    EXPECT_EQ(schedule.num_ops(), 6u * p * m);
    return ns_to_ms(simulate(schedule, costs).metrics.max_device_span_ns);
  };
  const double work_ms = 2 + 2.4 + 1.2;  // each device's, per microbatch
  const double half_96 = span_ms("v-half", 96);
  EXPECT_LE(span_ms("v-half", 400) - half_96, 1.01 * 304 * work_ms);
  const double min_64 = span_ms("v-min", 64), min_96 = span_ms("v-min", 96);
  const double min_pace_ms = (min_96 - min_64) / 32;
  EXPECT_GT(min_pace_ms, work_ms);  // V-Min's memory holds back its steady state
  EXPECT_LE(span_ms("v-min", 400) - min_96, 1.01 * 304 * min_pace_ms);
}

// A pipeline whose search pays for a few greedy runs takes the choices of a search on fewer
// microbatches (v_greedy.cpp, transfer_from_proxy): more microbatches then lower V-Min's bubble
// rate, as they should, where the anchors' choices alone raised it (p = 8, m = 700: 0.2625
// against m = 48's 0.191 before, 0.125 now).
TEST(ControllableMemory, ALargePipelineTakesTheChoicesOfASmallerOne) {
  const int p = 8;
  const auto costs = PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(2), ms_to_ns(2.4), ms_to_ns(1.2), ms_to_ns(0.1), 1.0, 0.5}, p, 2);
  auto bubble = [&](int m) {
    return simulate(v_shape("v-min", p, m, &costs), costs).metrics.bubble_rate;
  };
  const double small = bubble(48), large = bubble(700);
  EXPECT_GT(small, 0.1);
  EXPECT_LE(large, small);
}

// The per-device refinement runs its trials a batch at a time on the cores and keeps what one
// trial after another would (v_greedy.cpp): the greedy's result, its runners-up included, is
// the same on 1, 2 or 3 threads. Uneven costs and V-Min's memory, where the refinement
// improves many times and its budget ends it.
TEST(ControllableMemory, TheGreedyGivesTheSameOnAnyNumberOfThreads) {
  const int p = 4;
  const PerDeviceCostModel costs = uneven_costs(p, 0.7, 0.5);
  const std::vector<StageCosts> stages = stage_costs(v_placement(p), costs);
  const std::vector<double> limit(p, (p + 4) / 3);  // V-Min's, in whole-stage M_B
  auto on = [&](int threads) {
    return on_threads(threads, [&] { return v_greedy_search(p, 3 * p, stages, limit); });
  };
  const std::optional<VGreedyResult> one = on(1);
  ASSERT_TRUE(one.has_value());
  for (const int threads : {2, 3}) {
    const std::optional<VGreedyResult> many = on(threads);
    ASSERT_TRUE(many.has_value());
    EXPECT_EQ(many->schedule, one->schedule) << threads;
    EXPECT_EQ(many->max_span_ns, one->max_span_ns) << threads;
    EXPECT_EQ(many->runners_up, one->runners_up) << threads;
    EXPECT_EQ(many->ops_placed, one->ops_placed) << threads;
  }
}

// The whole generation (the greedy search beside the other candidates, then the justification,
// the splices and the multi-start improver) gives the same schedule on 1 or 2 threads: uneven
// costs with transfers, each of the three memory limits (V-Half's alone in the sanitizer build).
TEST(ControllableMemory, TheGenerationGivesTheSameOnAnyNumberOfThreads) {
  const int p = 3;
  const PerDeviceCostModel costs = uneven_costs(p, 0.6, 0.43);
#ifdef BUBBLESIM_SANITIZED
  const std::vector<const char*> names = {"v-half"};  // ten times slower there
#else
  const std::vector<const char*> names = {"zb-v", "v-half", "v-min"};
#endif
  for (const char* name : names) {
    auto on = [&](int threads) {
      return on_threads(threads, [&] { return v_shape(name, p, p + 1, &costs); });
    };
    EXPECT_EQ(on(2), on(1)) << name;
  }
}

// Phase 3 of the V search forces single decisions against the greedy's rules (v_greedy.cpp):
// never worse than the search without it, shorter on memory-bound inputs with transfers (the
// reference rows it turned: docs/validation.md), and each trial resumed from a copy of a run's
// state is the run from the start with the same forced decisions (check_resumes throws
// otherwise). Uneven costs with transfers at zb-v's memory (p M_B) and V-Half's; the
// sanitizer build (ten times slower) takes p = 4 only.
TEST(ControllableMemory, ForcedDecisionsShortenTheGreedyAndResumeExactly) {
#ifdef BUBBLESIM_SANITIZED
  const std::vector<int> sizes = {4};
#else
  const std::vector<int> sizes = {4, 6};
#endif
  int shorter = 0, inputs = 0;
  for (const int p : sizes) {
    std::vector<DeviceCosts> devices;
    for (int d = 0; d < p; ++d) {
      devices.push_back(DeviceCosts{ms_to_ns(0.9 + 0.07 * (d % 3)), ms_to_ns(1.0 + 0.05 * (d % 2)),
                                    ms_to_ns(0.5 + 0.04 * d), ms_to_ns(0.07), 1.0, 0.5});
    }
    const PerDeviceCostModel costs(devices, 2);
    const std::vector<StageCosts> stages = stage_costs(v_placement(p), costs);
    for (const double memory : {static_cast<double>(p), (p + 2) / 2.0}) {
      const std::vector<double> limit(static_cast<std::size_t>(p), memory);
      for (const int m : {2 * p + 1}) {
        SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m) + " memory " +
                     std::to_string(memory));
        const auto without = v_greedy_search(p, m, stages, limit, {false, false});
        const auto with = v_greedy_search(p, m, stages, limit, {true, true});
        ASSERT_TRUE(without.has_value() && with.has_value());
        EXPECT_NO_THROW(with->schedule.validate());
        EXPECT_LE(with->max_span_ns, without->max_span_ns);
        shorter += with->max_span_ns < without->max_span_ns;
        ++inputs;
        // The search's best before phase 3 stays among the runners-up, a start for the improver
        // (the last, or the one before it where the second scan's result replaced the
        // first's, which is then the last).
        if (with->max_span_ns < without->max_span_ns) {
          const auto& starts = with->runners_up;
          ASSERT_FALSE(starts.empty());
          EXPECT_TRUE(starts.back().first == without->schedule ||
                      (starts.size() >= 2 && starts[starts.size() - 2].first == without->schedule &&
                       starts.back().second > with->max_span_ns &&
                       starts.back().second < without->max_span_ns));
        }
      }
    }
  }
  EXPECT_GE(shorter, inputs / 2) << shorter << " of " << inputs;
}

// A forward that takes no time (a profile's F of 0 ms) starts with the op before it: the
// building blocks' memory then depends on the order of ops that start together, which the
// closed form of the blocks' steady state did not see (a random `simulate` found v-half over
// its limit: "internal error: ... the V greedy exceeded its memory limit"; zb-v and v-min
// alike, from m = 8 at p = 4). Every peak within the limit, default or given. (The
// generators check their candidates against the limit before the improver, left out here
// for time.)
TEST(ControllableMemory, ForwardsThatTakeNoTimeKeepTheLimit) {
  const int p = 4, m = 8;
  ScheduleRegistry registry;
  add_v_shape_schedules(registry);
  const auto costs = PerDeviceCostModel::uniform(
      DeviceCosts{0, ms_to_ns(4), ms_to_ns(1.6), ms_to_ns(0.6), 1.0, 0.5}, p, 2);
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    for (const double limit : {0.0, 3.36}) {
      const Schedule s = registry.get(name).generate(ScheduleParams{p, m, 2, &costs, limit, false});
      EXPECT_NO_THROW(s.validate()) << name;
      const double bound = limit > 0                       ? limit
                           : std::string(name) == "zb-v"   ? p
                           : std::string(name) == "v-half" ? (p + 2) / 2.0
                                                           : (p + 4) / 3;
      EXPECT_LE(simulate(s, costs).metrics.peak_activation_memory, bound + 1e-9)
          << name << " limit " << limit;
    }
  }
}

// Backwards that allocate (M_W above M_B: the B keeps more for its W than the F held, as with
// recomputation): the building blocks squeezed as a list schedule (v_blocks.h, backfilled)
// placed a B sooner than in the repetition without checking that the steps it gained had room
// for what it allocates (a random `simulate -s v-half -p 4 -m 4 --f 1 --b 3 --w 1 --comm 2
// --m-w 2` found "internal error: ... the V greedy exceeded its memory limit"). Every peak
// within the default limit.
TEST(ControllableMemory, BackwardsThatAllocateKeepTheLimit) {
  const int p = 4, m = 4;
  ScheduleRegistry registry;
  add_v_shape_schedules(registry);
  for (const double m_w : {1.5, 2.0}) {
    const auto costs = PerDeviceCostModel::uniform(
        DeviceCosts{ms_to_ns(1), ms_to_ns(3), ms_to_ns(1), ms_to_ns(2), 1.0, m_w}, p, 2);
    for (const char* name : {"zb-v", "v-half", "v-min"}) {
      const Schedule s = registry.get(name).generate(ScheduleParams{p, m, 2, &costs, 0.0, false});
      EXPECT_NO_THROW(s.validate()) << name;
      const double bound = std::string(name) == "zb-v"     ? p
                           : std::string(name) == "v-half" ? (p + 2) / 2.0
                                                           : (p + 4) / 3;
      EXPECT_LE(simulate(s, costs).metrics.peak_activation_memory, bound + 1e-9)
          << name << " M_W " << m_w;
    }
  }
}

// Passes that all take no time, with transfers that do: the building blocks have no cycle to
// lay out on (their period was 0, and the layout divided by it: SIGFPE in `simulate -s zb-v
// --f 0 --b 0 --w 0 --comm 0.1`). The greedy's schedules stand.
TEST(ControllableMemory, PassesThatAllTakeNoTimeLeaveTheTransfers) {
  const int p = 3;
  const auto costs =
      PerDeviceCostModel::uniform(DeviceCosts{0, 0, 0, ms_to_ns(0.1), 1.0, 0.5}, p, 2);
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    for (const int m : {1, 4}) {
      const Schedule s = v_shape(name, p, m, &costs);
      EXPECT_NO_THROW(s.validate()) << name;
      // One microbatch crosses between devices 2p - 2 times down the V and as many back (the
      // turn at its top stays on device p - 1), in transfers nothing delays when no pass
      // takes time; more microbatches take at least as long.
      const TimeNs one = 2 * (2 * p - 2) * ms_to_ns(0.1);
      const TimeNs span = simulate(s, costs).metrics.max_device_span_ns;
      if (m == 1) {
        EXPECT_EQ(span, one) << name;
      } else {
        EXPECT_GE(span, one) << name;
      }
    }
  }
}

TEST(ZbV, TakesTwoChunksOnly) {
  ScheduleRegistry registry;
  add_v_shape_schedules(registry);
  EXPECT_THROW(registry.get("zb-v").generate(ScheduleParams{4, 8, 3}), InvalidArgument);
  EXPECT_NO_THROW(registry.get("zb-v").generate(ScheduleParams{4, 8, 2}).validate());
}

}  // namespace
}  // namespace bubblesim::sim
