// The engine against its oracle, the longest path through the OpGraph, and its events.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "sim/op_graph.h"
#include "tests/sim/test_util.h"

namespace bubblesim::sim {
namespace {

using testing::generate;
using testing::uniform_costs;

bool same_timeline(const Timeline& a, const Timeline& b) {
  if (a.device_ops.size() != b.device_ops.size()) return false;
  for (std::size_t d = 0; d < a.device_ops.size(); ++d) {
    if (a.device_ops[d].size() != b.device_ops[d].size()) return false;
    for (std::size_t i = 0; i < a.device_ops[d].size(); ++i) {
      if (a.device_ops[d][i].start_ns != b.device_ops[d][i].start_ns ||
          a.device_ops[d][i].end_ns != b.device_ops[d][i].end_ns) {
        return false;
      }
    }
  }
  return true;
}

TimeNs makespan(const Timeline& t) {
  TimeNs end = 0;
  for (const auto& ops : t.device_ops) {
    for (const OpTiming& op : ops)
      end = std::max(end, op.end_ns);
  }
  return end;
}

// A random schedule that cannot deadlock: ops are appended in an order where every op comes
// after its data input, to random devices' lists given a random placement. With `routed`, each
// microbatch runs a random range of the stages.
Schedule random_schedule(std::mt19937& rng, int devices, int stages, int microbatches,
                         bool routed = false) {
  Schedule s;
  s.num_microbatches = microbatches;
  s.device_ops.resize(static_cast<std::size_t>(devices));
  std::uniform_int_distribution<int> any_device(0, devices - 1);
  for (int st = 0; st < stages; ++st)
    s.stage_device.push_back(any_device(rng));
  if (routed) {
    std::uniform_int_distribution<int> any_stage(0, stages - 1);
    for (int mb = 0; mb < microbatches; ++mb) {
      const int a = any_stage(rng), b = any_stage(rng);
      s.routes.push_back(StageRange{std::min(a, b), std::max(a, b)});
    }
  }
  const std::vector<int> chunks = s.stage_chunks();
  std::bernoulli_distribution coin(0.5);
  std::vector<bool> split(static_cast<std::size_t>(stages * microbatches));
  for (auto&& x : split)
    x = coin(rng);

  auto make = [&](Slot slot, int stage, int mb) {
    const bool is_split = split[static_cast<std::size_t>(stage * microbatches + mb)];
    const OpKind kind = slot == Slot::Forward  ? OpKind::F
                        : slot == Slot::Weight ? OpKind::W
                        : is_split             ? OpKind::B
                                               : OpKind::BW;
    return Op{kind, stage, chunks[static_cast<std::size_t>(stage)], mb};
  };
  std::vector<Op> ready;
  for (int mb = 0; mb < microbatches; ++mb)
    ready.push_back(make(Slot::Forward, s.route(mb).first, mb));
  while (!ready.empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, ready.size() - 1);
    const std::size_t i = pick(rng);
    const Op op = ready[i];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(i));
    s.device_ops[static_cast<std::size_t>(s.stage_device[static_cast<std::size_t>(op.stage)])]
        .push_back(op);
    SlotRef out[2];
    const int n = data_outputs(op.kind, op.stage, s.route(op.microbatch), out);
    for (int k = 0; k < n; ++k)
      ready.push_back(make(out[k].slot, out[k].stage, op.microbatch));
  }
  return s;
}

// Marks about a third of the adjacent (F, backward) ops of each device as overlapped pairs.
// Pairs can make a valid order deadlock (the pair waits for an input that depends on itself).
void add_random_pairs(std::mt19937& rng, Schedule& s) {
  std::bernoulli_distribution coin(0.35);
  s.overlapped_pairs.resize(s.device_ops.size());
  for (std::size_t d = 0; d < s.device_ops.size(); ++d) {
    const auto& ops = s.device_ops[d];
    for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
      if (ops[i].kind == OpKind::F && slot_of(ops[i + 1].kind) == Slot::Backward && coin(rng)) {
        s.overlapped_pairs[d].push_back(i++);
      }
    }
  }
}

PerDeviceCostModel random_costs(std::mt19937& rng, int devices) {
  std::uniform_int_distribution<TimeNs> t(0, 5000);
  std::uniform_real_distribution<double> e(0, 1);
  std::vector<DeviceCosts> costs;
  for (int d = 0; d < devices; ++d)
    costs.push_back({t(rng), t(rng), t(rng), t(rng) / 4, 1.0, 0.5, e(rng)});
  return PerDeviceCostModel(costs);
}

// The engine's timeline is the graph's earliest times and its makespan the critical path;
// with an observer the engine wakes devices up for their starts instead of committing them
// early, and the timeline must not change.
// `graph` must have been built with the same `p2p`.
void expect_engine_is_longest_path(const Schedule& s, const CostModel& costs, const OpGraph& graph,
                                   int trial, P2pMode p2p = P2pMode::Async) {
  Engine plain(s, costs);
  plain.set_p2p(p2p);
  const Timeline engine = plain.run();
  ASSERT_TRUE(same_timeline(engine, graph.earliest_times())) << "trial " << trial;
  ASSERT_EQ(makespan(engine), graph.critical_path().length_ns) << "trial " << trial;
  EngineObserver watcher;
  Engine watched(s, costs);
  watched.set_p2p(p2p);
  watched.add_observer(watcher);
  ASSERT_TRUE(same_timeline(watched.run(), engine)) << "trial " << trial;
}

TEST(Engine, MatchesLongestPathOnGeneratedSchedules) {
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) {
    // Up to 8 devices the event tree is one node; 9, 64 and 65 need two and three levels.
    for (const int p : {1, 2, 5, 8, 9, 64, 65}) {
      for (const int m : {1, p, 3 * p + 2}) {
        const Schedule s = generate(name, p, m);
        // Per-device costs, so that stages differ, with communication.
        std::vector<DeviceCosts> list;
        for (int d = 0; d < p; ++d) {
          list.push_back({1000 + 37 * d, 1500 - 11 * d, 700 + 5 * d, 60 + 13 * d, 1.0, 0.5});
        }
        const PerDeviceCostModel costs(list);
        const Timeline engine = Engine(s, costs).run();
        const OpGraph graph(s, costs);
        EXPECT_TRUE(same_timeline(engine, graph.earliest_times()))
            << name << " p=" << p << " m=" << m;
        EXPECT_EQ(makespan(engine), graph.critical_path().length_ns) << name;
        // Blocking transfers against the graph with their delays, watched and not.
        const OpGraph blocking(s, costs, P2pMode::Blocking);
        ASSERT_NO_FATAL_FAILURE(
            expect_engine_is_longest_path(s, costs, blocking, p * 100 + m, P2pMode::Blocking))
            << name << " p=" << p << " m=" << m;
        // Blocking never shortens a run (every delay is at least the async one).
        EXPECT_GE(makespan(blocking.earliest_times()), makespan(engine)) << name;
      }
    }
  }
}

TEST(Engine, MatchesLongestPathOnRandomValidSchedules) {
  std::mt19937 rng(20240122);
  for (int trial = 0; trial < 300; ++trial) {
    const int devices = 1 + static_cast<int>(rng() % (trial % 10 == 0 ? 20 : 5));
    const int stages = 1 + static_cast<int>(rng() % (trial % 10 == 0 ? 30 : 7));
    const int m = 1 + static_cast<int>(rng() % 6);
    const Schedule s = random_schedule(rng, devices, stages, m);
    ASSERT_NO_THROW(s.validate()) << "trial " << trial;
    const PerDeviceCostModel costs = random_costs(rng, devices);
    ASSERT_NO_FATAL_FAILURE(expect_engine_is_longest_path(s, costs, OpGraph(s, costs), trial));
    ASSERT_NO_FATAL_FAILURE(expect_engine_is_longest_path(
        s, costs, OpGraph(s, costs, P2pMode::Blocking), trial, P2pMode::Blocking));
  }
}

TEST(Engine, MatchesLongestPathWithRoutesAndOverlappedPairs) {
  std::mt19937 rng(20250301);
  int acyclic = 0, deadlocked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int devices = 1 + static_cast<int>(rng() % 5);
    const int stages = 1 + static_cast<int>(rng() % 8);
    const int m = 1 + static_cast<int>(rng() % 6);
    Schedule s = random_schedule(rng, devices, stages, m, /*routed=*/trial % 2 == 0);
    add_random_pairs(rng, s);
    ASSERT_NO_THROW(s.validate()) << "trial " << trial;
    const PerDeviceCostModel costs = random_costs(rng, devices);
    const OpGraph graph(s, costs);
    if (!graph.find_cycle().empty()) {
      ++deadlocked;
      EXPECT_THROW(Engine(s, costs).run(), DeadlockError) << "trial " << trial;
      // The searches' variant says so without naming the cycle.
      EXPECT_FALSE(Engine(s, costs).try_run_validated().has_value()) << "trial " << trial;
      continue;
    }
    ++acyclic;
    const std::optional<Timeline> tried = Engine(s, costs).try_run_validated();
    ASSERT_TRUE(tried.has_value()) << "trial " << trial;
    EXPECT_EQ(tried->max_span_ns(), Engine(s, costs).run().max_span_ns()) << "trial " << trial;
    ASSERT_NO_FATAL_FAILURE(expect_engine_is_longest_path(s, costs, graph, trial));
    ASSERT_NO_FATAL_FAILURE(expect_engine_is_longest_path(
        s, costs, OpGraph(s, costs, P2pMode::Blocking), trial, P2pMode::Blocking));
  }
  // Both kinds of case were exercised.
  EXPECT_GT(acyclic, 100);
  EXPECT_GT(deadlocked, 10);
}

TEST(Engine, OverlappedPairIsOneComputeSlot) {
  // p = 2, m = 2, 1F1B with device 1 running F(mb 1) overlapped with BW(mb 0):
  // F 1 ms, BW 2 ms, e = 0.5: the pair takes max(1, 2) + 0.5 * 1 = 2.5 ms.
  Schedule s = generate("1f1b", 2, 2);
  ASSERT_EQ(s.device_ops[1], (std::vector<Op>{{OpKind::F, 1, 0, 0},
                                              {OpKind::BW, 1, 0, 0},
                                              {OpKind::F, 1, 0, 1},
                                              {OpKind::BW, 1, 0, 1}}));
  std::swap(s.device_ops[1][1], s.device_ops[1][2]);  // F0 F1 BW0 BW1
  s.overlapped_pairs = {{}, {1}};
  DeviceCosts c{ms_to_ns(1), ms_to_ns(1), ms_to_ns(1), 0, 1.0, 0.5, 0.5};
  const auto costs = PerDeviceCostModel::uniform(c, 2);
  EXPECT_EQ(costs.overlapped_ns(s.device_ops[1][1], s.device_ops[1][2], 1), ms_to_ns(2.5));
  const Timeline t = Engine(s, costs).run();
  const auto at = [](double start, double end) {
    return std::pair{ms_to_ns(start), ms_to_ns(end)};
  };
  const auto times = [&](int d, int i) {
    const OpTiming& x = t.device_ops[static_cast<std::size_t>(d)][static_cast<std::size_t>(i)];
    return std::pair{x.start_ns, x.end_ns};
  };
  EXPECT_EQ(times(1, 0), at(1, 2));
  EXPECT_EQ(times(1, 1), at(2, 4.5));  // both ops of the pair share start and end
  EXPECT_EQ(times(1, 2), at(2, 4.5));
  EXPECT_EQ(times(1, 3), at(4.5, 6.5));
  EXPECT_EQ(times(0, 2), at(4.5, 6.5));  // BW(stage 0, mb 0) waited for the pair's end
  EXPECT_EQ(times(0, 3), at(6.5, 8.5));
  const Metrics m = compute_metrics(s, t, costs);
  EXPECT_EQ(m.devices[1].busy_ns, ms_to_ns(5.5));  // 1 + 2.5 + 2: the pair counts once
  EXPECT_EQ(m.devices[1].span_ns, ms_to_ns(5.5));
  EXPECT_DOUBLE_EQ(m.devices[1].bubble_rate, 0.0);
  EXPECT_DOUBLE_EQ(m.devices[1].peak_activation_memory, 2.0);  // F1 counts before BW0 frees
  EXPECT_TRUE(same_timeline(t, OpGraph(s, costs).earliest_times()));
  EXPECT_EQ(OpGraph(s, costs).num_vertices(), s.num_ops() - 1);
}

// Busy times near the clock's end (2^63 ns, 292 years): the pair's second op is not summed
// and then taken back, and the devices' busy times are summed as doubles, so nothing passes
// 2^63 where every device's time fits (the profile_values fuzzer found both sums overflowing:
// UBSan, signed integer overflow in compute_metrics). The timeline is made by hand.
TEST(Engine, MetricsOfTimesNearTheClocksEnd) {
  Schedule s = generate("1f1b", 2, 2);
  std::swap(s.device_ops[1][1], s.device_ops[1][2]);  // F0 F1 BW0 BW1, F1 and BW0 a pair
  s.overlapped_pairs = {{}, {1}};
  const TimeNs e18 = 1'000'000'000'000'000'000;
  Timeline t;
  const TimeNs e18_7_5 = 7 * e18 + e18 / 2;  // 15 * e18 / 2 would pass 2^63 on the way
  t.device_ops = {{{0, e18}, {e18, 2 * e18}, {6 * e18, e18_7_5}, {e18_7_5, 9 * e18}},
                  {{e18, 2 * e18}, {2 * e18, 6 * e18}, {2 * e18, 6 * e18}, {6 * e18, 7 * e18}}};
  const Metrics m = compute_metrics(s, t, uniform_costs(2, 1, 2, 1, 0));
  EXPECT_EQ(m.devices[0].busy_ns, 5 * e18);
  EXPECT_EQ(m.devices[1].busy_ns, 6 * e18);  // 1 + 4 (the pair, once) + 1
  EXPECT_EQ(m.max_device_span_ns, 9 * e18);
  EXPECT_DOUBLE_EQ(m.bubble_rate, 1.0 - 11.0 / 18.0);
}

// p = 2, m = 2, 1F1B (device 0: F0 F1 BW0 BW1, device 1: F0 BW0 F1 BW1), F 1 ms, BW 2 ms,
// a hop 0.5 ms. Blocking: a sender is busy for the hop after its op; a receiver takes the hop
// on its own stream from max(it is free, the producer ended). By hand:
//   d0 F0 [0, 1] sends until 1.5; F1 [1.5, 2.5] sends until 3
//   d1 receives 1..1.5, F0 [1.5, 2.5]; BW0 [2.5, 4.5] sends until 5; receives F1 5..5.5
//      (F1 ended on d0 at 2.5, d1 was busy); F1 [5.5, 6.5]; BW1 [6.5, 8.5] sends until 9
//   d0 receives BW0's gradient 4.5..5 (ended 4.5, d0 free since 3); BW0 [5, 7];
//      receives BW1's 8.5..9; BW1 [9, 11]
// Async, the same inputs arrive 0.5 ms after their producer ends and nobody waits to send:
//   d0 F0 [0, 1] F1 [1, 2] BW0 [5, 7] BW1 [8, 10]; d1 F0 [1.5, 2.5] BW0 [2.5, 4.5]
//   F1 [4.5, 5.5] BW1 [5.5, 7.5].
TEST(Engine, BlockingTransfersHoldBothStreams) {
  const Schedule s = generate("1f1b", 2, 2);
  const auto costs = uniform_costs(2, 1, 1, 1, 0.5);
  const auto ms = [](double start, double end) { return OpTiming{ms_to_ns(start), ms_to_ns(end)}; };
  const Timeline blocking_expected{{{ms(0, 1), ms(1.5, 2.5), ms(5, 7), ms(9, 11)},
                                    {ms(1.5, 2.5), ms(2.5, 4.5), ms(5.5, 6.5), ms(6.5, 8.5)}}};
  const Timeline async_expected{{{ms(0, 1), ms(1, 2), ms(5, 7), ms(8, 10)},
                                 {ms(1.5, 2.5), ms(2.5, 4.5), ms(4.5, 5.5), ms(5.5, 7.5)}}};
  for (const bool watched : {false, true}) {
    EngineObserver watcher;
    Engine blocking(s, costs);
    blocking.set_p2p(P2pMode::Blocking);
    Engine async(s, costs);
    if (watched) {
      blocking.add_observer(watcher);
      async.add_observer(watcher);
    }
    EXPECT_TRUE(same_timeline(blocking.run(), blocking_expected)) << "watched " << watched;
    EXPECT_TRUE(same_timeline(async.run(), async_expected)) << "watched " << watched;
  }
  // Sends and receives are idle time, not compute: device 0 is busy 1 + 1 + 2 + 2 = 6 of 11.
  const SimulationResult r = simulate(s, costs, {}, nullptr, InputRule::All, P2pMode::Blocking);
  EXPECT_EQ(r.metrics.iteration_time_ns, ms_to_ns(11));
  EXPECT_EQ(r.metrics.devices[0].busy_ns, ms_to_ns(6));
}

TEST(Engine, BlockingTransfersAreRejectedOverANetwork) {
  const Schedule s = generate("1f1b", 2, 2);
  const auto costs = uniform_costs(2, 1, 1, 1, 0.5);
  Network network(2);
  const int link = network.add_link(Link{1e9, 1000});
  network.set_route(0, 1, {link});
  network.set_route(1, 0, {link});
  Engine engine(s, costs);
  engine.set_network(network);
  engine.set_p2p(P2pMode::Blocking);
  EXPECT_THROW(engine.run(), InvalidArgument);
}

// A pass pays its overhead whole, also as a chunk: with v = 2 chunks, a forward of 4 ms runs in
// 2 ms plus the 0.25 ms overhead; a fused BW pays B's overhead once.
TEST(CostModel, OpOverheadIsPaidWholeByEveryPass) {
  DeviceCosts c{ms_to_ns(4), ms_to_ns(3), ms_to_ns(2), 0, 1.0, 0.5};
  c.overheads = OpOverheads{ms_to_ns(0.25), ms_to_ns(0.5), ms_to_ns(0.125)};
  const auto costs = PerDeviceCostModel::uniform(c, 1, 2);
  EXPECT_EQ(costs.duration_ns({OpKind::F, 0, 0, 0}, 0), ms_to_ns(2.25));
  EXPECT_EQ(costs.duration_ns({OpKind::B, 0, 0, 0}, 0), ms_to_ns(2.0));
  EXPECT_EQ(costs.duration_ns({OpKind::W, 0, 0, 0}, 0), ms_to_ns(1.125));
  EXPECT_EQ(costs.duration_ns({OpKind::BW, 0, 0, 0}, 0), ms_to_ns(3.0));
  // One device, 1F1B with m = 3 and whole-stage passes: 3 (F + BW) = 3 (4.25 + 5.5) ms.
  const Schedule s = generate("1f1b", 1, 3);
  const auto whole = PerDeviceCostModel::uniform(c, 1);
  EXPECT_EQ(simulate(s, whole).metrics.iteration_time_ns, ms_to_ns(3 * (4.25 + 5.5)));
}

TEST(Engine, PairThatFeedsItselfDeadlocks) {
  // On the last stage BW(mb 0) needs F(mb 0)'s output: overlapped with it, it can never start.
  Schedule s = generate("1f1b", 1, 1);  // F0 BW0
  s.overlapped_pairs = {{0}};
  const auto costs = uniform_costs(1, 1, 1, 1, 0);
  try {
    Engine(s, costs).run();
    FAIL();
  } catch (const DeadlockError& e) {
    EXPECT_EQ(e.cycle(), (std::vector<Op>{{OpKind::F, 0, 0, 0}, {OpKind::BW, 0, 0, 0}}));
  }
}

TEST(CostModel, OverlapModelHidesAShareOfTheShorterPass) {
  EXPECT_EQ(overlapped_pair_ns(3000, 5000, 0.0), 8000);  // back to back
  EXPECT_EQ(overlapped_pair_ns(3000, 5000, 1.0), 5000);  // fully hidden
  EXPECT_EQ(overlapped_pair_ns(5000, 3000, 0.25), 7250);
  EXPECT_EQ(overlapped_pair_ns(3, 3, 0.5), 5);  // 3 + 1.5, rounded
  // The interface's default gains nothing.
  struct Flat : CostModel {
    TimeNs duration_ns(const Op& op, int) const override { return op.kind == OpKind::F ? 3 : 4; }
    TimeNs transfer_ns(int, int) const override { return 0; }
    double activation_delta(const Op&, int) const override { return 0; }
  } flat;
  EXPECT_EQ(flat.overlapped_ns(Op{OpKind::F, 0, 0, 0}, Op{OpKind::BW, 0, 0, 1}, 0), 7);
}

TEST(Engine, HandComputedTimeline) {
  // p = 2, m = 1, 1F1B: F 1 ms, BW 3 ms, comm 0.5 ms.
  const Schedule s = generate("1f1b", 2, 1);
  const auto costs = uniform_costs(2, 1, 2, 1, 0.5);
  const Timeline t = Engine(s, costs).run();
  const TimeNs ms = 1'000'000;
  ASSERT_EQ(t.device_ops[0].size(), 2u);
  EXPECT_EQ(t.device_ops[0][0].start_ns, 0);
  EXPECT_EQ(t.device_ops[0][0].end_ns, 1 * ms);
  EXPECT_EQ(t.device_ops[1][0].start_ns, 3 * ms / 2);  // F arrives after 0.5 ms
  EXPECT_EQ(t.device_ops[1][1].end_ns, 11 * ms / 2);   // BW right after
  EXPECT_EQ(t.device_ops[0][1].start_ns, 6 * ms);      // gradient arrives after 0.5 ms
  EXPECT_EQ(t.device_ops[0][1].end_ns, 9 * ms);

  const Metrics m = compute_metrics(s, t, costs);
  EXPECT_EQ(m.iteration_time_ns, 9 * ms);
  EXPECT_EQ(m.max_device_span_ns, 9 * ms);
  EXPECT_EQ(m.devices[1].span_ns, 4 * ms);
  EXPECT_EQ(m.devices[0].busy_ns, 4 * ms);
  EXPECT_DOUBLE_EQ(m.devices[0].bubble_rate, 1.0 - 4.0 / 9.0);
  EXPECT_DOUBLE_EQ(m.devices[1].bubble_rate, 0.0);
  EXPECT_DOUBLE_EQ(m.bubble_rate, 1.0 - 8.0 / 18.0);
  EXPECT_DOUBLE_EQ(m.peak_activation_memory, 1.0);
}

class Recorder : public EngineObserver {
 public:
  void on_op_start(const OpEvent& e) override { record(e.start_ns), ++starts; }
  void on_op_end(const OpEvent& e) override {
    record(e.end_ns);
    ++ends;
    overlapped += e.overlapped ? 1 : 0;
    ends_match &= e.end_ns - e.start_ns == duration(e);
  }
  void on_transfer(const TransferEvent& e) override {
    record(e.start_ns);
    ++transfers;
    cross_device &= e.src_device != e.dst_device;
  }
  std::function<TimeNs(const OpEvent&)> duration;
  int starts = 0, ends = 0, transfers = 0, overlapped = 0;
  bool ordered = true, ends_match = true, cross_device = true;

 private:
  void record(TimeNs t) {
    ordered &= t >= last_;
    last_ = t;
  }
  TimeNs last_ = 0;
};

TEST(Engine, ObserversSeeEveryEventInTimeOrder) {
  const int p = 4, m = 8;
  const Schedule s = generate("zb-h1", p, m);
  const auto costs = uniform_costs(p, 2, 3, 1, 0.25);
  Recorder a, b;  // two observers on one engine
  a.duration = b.duration = [&](const OpEvent& e) { return costs.duration_ns(e.op, e.device); };
  Engine engine(s, costs);
  engine.add_observer(a);
  engine.add_observer(b);
  engine.run();
  for (const Recorder* r : {&a, &b}) {
    EXPECT_EQ(r->starts, 3 * p * m);
    EXPECT_EQ(r->ends, 3 * p * m);
    // Forward and backward hops between p stages, for each microbatch.
    EXPECT_EQ(r->transfers, 2 * (p - 1) * m);
    EXPECT_TRUE(r->ordered);
    EXPECT_TRUE(r->ends_match);
    EXPECT_TRUE(r->cross_device);
  }
}

TEST(Engine, ObserversSeeBothOpsOfAPair) {
  Schedule s = generate("1f1b", 2, 2);
  std::swap(s.device_ops[1][1], s.device_ops[1][2]);  // F0 (F1 & BW0) BW1
  s.overlapped_pairs = {{}, {1}};
  const auto costs = uniform_costs(2, 1, 1, 1, 0.25);
  Recorder r;
  r.duration = [&](const OpEvent& e) {
    if (!e.overlapped) return costs.duration_ns(e.op, e.device);
    return costs.overlapped_ns(s.device_ops[1][1], s.device_ops[1][2], 1);
  };
  Engine engine(s, costs);
  engine.add_observer(r);
  engine.run();
  EXPECT_EQ(r.starts, 8);
  EXPECT_EQ(r.ends, 8);
  EXPECT_EQ(r.overlapped, 2);
  EXPECT_EQ(r.transfers, 4);
  EXPECT_TRUE(r.ordered);
  EXPECT_TRUE(r.ends_match);
}

TEST(Engine, TwoEnginesRunIndependently) {
  const Schedule s1 = generate("1f1b", 3, 5);
  const Schedule s2 = generate("zb-h2", 3, 6);
  const auto costs = uniform_costs(3, 1, 1, 1, 0);
  Engine e1(s1, costs), e2(s2, costs);
  const Timeline t1 = e1.run();
  const Timeline t2 = e2.run();
  EXPECT_TRUE(same_timeline(t1, Engine(s1, costs).run()));
  // zb-h2 at m >= 2p - 1 with unit costs has no bubble: every device span is 3m; the last
  // device starts (p - 1) T_F later.
  EXPECT_EQ(compute_metrics(s2, t2, costs).max_device_span_ns, ms_to_ns(18));
  EXPECT_EQ(makespan(t2), ms_to_ns(20));
}

// Device 1 runs the backward of microbatch 0 before the forward it needs.
Schedule deadlocking_schedule() {
  Schedule s = generate("1f1b", 2, 2);
  auto& ops = s.device_ops[1];  // F0 BW0 F1 BW1
  std::swap(ops[0], ops[1]);    // BW0 F0 F1 BW1
  return s;
}

TEST(OpGraph, CycleIsNamed) {
  const Schedule s = deadlocking_schedule();
  const auto costs = uniform_costs(2, 1, 1, 1, 0);
  const OpGraph graph(s, costs);
  const std::vector<Op> cycle = graph.find_cycle();
  ASSERT_EQ(cycle.size(), 2u);
  EXPECT_NE(std::find(cycle.begin(), cycle.end(), Op{OpKind::BW, 1, 0, 0}), cycle.end());
  EXPECT_NE(std::find(cycle.begin(), cycle.end(), Op{OpKind::F, 1, 0, 0}), cycle.end());
  EXPECT_THROW(graph.check_acyclic(), DeadlockError);
  EXPECT_THROW(graph.critical_path(), DeadlockError);
}

TEST(Engine, DeadlockIsReportedWithTheCycle) {
  const Schedule s = deadlocking_schedule();
  const auto costs = uniform_costs(2, 1, 1, 1, 0);
  try {
    Engine(s, costs).run();
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    EXPECT_EQ(e.cycle().size(), 2u);
    const std::string what = e.what();
    EXPECT_NE(what.find("schedule deadlocks"), std::string::npos) << what;
    EXPECT_NE(what.find("BW(stage 1, mb 0)"), std::string::npos) << what;
    EXPECT_NE(what.find("F(stage 1, mb 0)"), std::string::npos) << what;
  }
}

TEST(Engine, LongCycleAcrossDevicesIsFound) {
  // Every device runs its backward before its forward: the cycle spans all stages.
  Schedule s = generate("gpipe", 3, 1);
  for (auto& ops : s.device_ops)
    std::swap(ops[0], ops[1]);
  const auto costs = uniform_costs(3, 1, 1, 1, 0);
  try {
    Engine(s, costs).run();
    FAIL();
  } catch (const DeadlockError& e) {
    EXPECT_GE(e.cycle().size(), 2u);
  }
}

TEST(Engine, InvalidScheduleIsRejectedBeforeRunning) {
  Schedule s = generate("1f1b", 2, 2);
  s.device_ops[0].pop_back();
  EXPECT_THROW(Engine(s, uniform_costs(2, 1, 1, 1, 0)).run(), MissingOpError);
}

TEST(OpGraph, CriticalPathOfOneFOneBStartsAndEndsOnDeviceZero) {
  const int p = 4, m = 8;
  const Schedule s = generate("1f1b", p, m);
  const auto costs = uniform_costs(p, 1, 1, 1, 0);
  const CriticalPath path = OpGraph(s, costs).critical_path();
  EXPECT_EQ(path.length_ns, ms_to_ns(m * 3 + (p - 1) * 3));
  ASSERT_FALSE(path.ops.empty());
  EXPECT_EQ(path.ops.front(), (Op{OpKind::F, 0, 0, 0}));
  EXPECT_EQ(path.ops.back(), (Op{OpKind::BW, 0, 0, m - 1}));
  // Durations along the chain add up to the length (no communication here).
  TimeNs sum = 0;
  for (const Op& op : path.ops)
    sum += costs.duration_ns(op, op.stage);
  EXPECT_EQ(sum, path.length_ns);
}

TEST(OpGraph, CountsVerticesAndEdges) {
  const int p = 3, m = 4;
  const Schedule s = generate("zb-h1", p, m);
  const OpGraph graph(s, uniform_costs(p, 1, 1, 1, 0));
  EXPECT_EQ(graph.num_vertices(), static_cast<std::size_t>(3 * p * m));
  // Device order: ops - devices. Data: every op but F of stage 0 has one input.
  EXPECT_EQ(graph.num_edges(), static_cast<std::size_t>((3 * p * m - p) + (3 * p * m - m)));
}

}  // namespace
}  // namespace bubblesim::sim
