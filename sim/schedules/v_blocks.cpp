#include "sim/schedules/v_blocks.h"

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/howard_cycle_ratio.hpp>
#include <optional>

#include <tbb/task_group.h>

#include "sim/device_events.h"
#include "sim/engine.h"
#include "sim/placement.h"
#include "sim/schedules/justify.h"

namespace bubblesim::sim {

namespace {

// Whether every device of `schedule` stays within its limit (the prefix sums of the deltas).
bool fits(const Schedule& schedule, const std::vector<StageCosts>& costs,
          const std::vector<double>& limit) {
  for (std::size_t d = 0; d < schedule.device_ops.size(); ++d) {
    double held = 0;
    for (const Op& op : schedule.device_ops[d]) {
      held += costs[static_cast<std::size_t>(op.stage)].delta(op.kind);
      if (held > limit[d] + 1e-9) return false;
    }
  }
  return true;
}

// The building block (the controllable-memory paper's idea, laid out here from the costs
// rather than fixed at unit cost): the ops of one microbatch, on a cycle of period T per
// device, each at the earliest time its input allows where its device's cycle is free (the
// forwards up the V, the backwards down it, then each W after its B); repeating the block
// every T gives every device's order. A longer period leaves idle time in the cycle and
// shortens how many microbatches are in flight (the memory). The order is deadlock-free by
// construction (the block's own times respect every input, shifted by whole periods).
class VBlock {
 public:
  VBlock(int p, const std::vector<StageCosts>& costs) : p_(p), costs_(costs) {}

  // The sum of one microbatch's op times on the busiest device: the shortest period.
  TimeNs min_period_ns() const {
    std::vector<TimeNs> work(static_cast<std::size_t>(p_), 0);
    const std::vector<int> device = v_placement(p_);
    for (int s = 0; s < 2 * p_; ++s) {
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      work[static_cast<std::size_t>(device[static_cast<std::size_t>(s)])] +=
          c.f_ns + c.b_ns + c.w_ns;
    }
    return *std::max_element(work.begin(), work.end());
  }

  // The block with period `period_ns` (its ops' start times), or false when a W finds no
  // room in its device's cycle, or when the period is not positive (every pass takes no
  // time: there is no cycle to lay out on).
  // Extra waits of the block's chains: at the V's top (between the last forward of chunk 0 and
  // the first of chunk 1, on device p-1: slack where the chunks meet), after each forward of
  // chunk 0 and of chunk 1, each backward of chunk 1 and of chunk 0, and before each W (slack
  // that keeps the order's shape when other costs time it, for more memory); at the V's bottom
  // (between the forward and the backward of stage 2p-1, on device 0) and at its top on the
  // way down (between the backwards of stages p and p-1, on device p-1): a wait there moves
  // every later op of the microbatch by the same amount, which shifts whole chains to other
  // steps of the cycle (turn_blocks).
  struct Gaps {
    TimeNs turn_ns = 0, f0_ns = 0, f1_ns = 0, b1_ns = 0, b0_ns = 0, w_ns = 0;
    TimeNs bottom_ns = 0, b_turn_ns = 0;
  };

  bool lay_out(TimeNs period_ns) { return lay_out(period_ns, Gaps{}); }
  bool lay_out(TimeNs period_ns, const Gaps& gaps) {
    if (period_ns <= 0) return false;
    period_ns_ = period_ns;
    busy_.resize(static_cast<std::size_t>(p_));
    for (auto& busy : busy_)
      busy.clear();
    block_.clear();
    const int stages = 2 * p_;
    TimeNs ready = 0;
    for (int s = 0; s < stages; ++s) {  // the forwards, up the V
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at = place(v_device(s), ready, c.f_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::F, s, s < p_ ? 0 : 1, 0}, *at});
      ready = *at + c.f_ns + c.f_out_ns + (s < p_ ? gaps.f0_ns : gaps.f1_ns) +
              (s == p_ - 1 ? gaps.turn_ns : 0);
    }
    ready += gaps.bottom_ns;
    b_end_.resize(static_cast<std::size_t>(stages));
    std::vector<TimeNs>& b_end = b_end_;
    for (int s = stages - 1; s >= 0; --s) {  // the backwards, down it
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at = place(v_device(s), ready, c.b_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::B, s, s < p_ ? 0 : 1, 0}, *at});
      b_end[static_cast<std::size_t>(s)] = *at + c.b_ns + gaps.w_ns;
      ready = *at + c.b_ns + c.b_out_ns + (s < p_ ? gaps.b0_ns : gaps.b1_ns) +
              (s == p_ ? gaps.b_turn_ns : 0);
    }
    for (int s = stages - 1; s >= 0; --s) {  // each W after its B
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at =
          place(v_device(s), b_end[static_cast<std::size_t>(s)], c.w_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::W, s, s < p_ ? 0 : 1, 0}, *at});
    }
    by_device_.resize(static_cast<std::size_t>(p_));
    for (auto& ops : by_device_)
      ops.clear();
    for (std::size_t i = 0; i < block_.size(); ++i)
      by_device_[static_cast<std::size_t>(v_device(block_[i].first.stage))].push_back(i);
    return true;
  }

  // The block repeated for microbatches 0..m-1: every device's ops in time order. Op o of
  // microbatch k starts at s_o + k T = (q_o + k) T + r_o (q_o, r_o: s_o's quotient and
  // remainder by T), so the order is round by round (q_o + k), in round_order() within a round.
  Schedule repeat(int m) const {
    Schedule schedule;
    schedule.num_microbatches = m;
    schedule.stage_device = v_placement(p_);
    schedule.device_ops.resize(static_cast<std::size_t>(p_));
    const std::vector<std::vector<std::size_t>> order = round_order();
    for (std::size_t d = 0; d < order.size(); ++d) {
      auto round_of = [&](std::size_t i) { return block_[i].second / period_ns_; };
      TimeNs first = kNever, last = 0;
      for (const std::size_t i : order[d]) {
        first = std::min(first, round_of(i));
        last = std::max(last, round_of(i));
      }
      auto& ops = schedule.device_ops[d];
      ops.reserve(order[d].size() * static_cast<std::size_t>(m));
      for (TimeNs round = first; round <= last + m - 1; ++round) {
        for (const std::size_t i : order[d]) {
          const TimeNs k = round - round_of(i);
          if (k < 0 || k >= m) continue;
          Op op = block_[i].first;
          op.microbatch = static_cast<std::int32_t>(k);
          ops.push_back(op);
        }
      }
    }
    return schedule;
  }

  // One constraint of the repeated block's order under some costs: the op `to` of the round R
  // starts at least `weight_ns` after the op `from` of the round R - `rounds` starts.
  struct Constraint {
    std::size_t from, to;
    TimeNs weight_ns, rounds;
  };

  // The constraints of the block's order when `real` times it, every op as early as its
  // device's order and its input allow (as the engine runs it): its device's previous op (0
  // rounds back, 1 for its first op), its input (the rounds between their starts in the block),
  // each weighing the earlier op's time and the transfer between them.
  std::vector<Constraint> constraints(const std::vector<StageCosts>& real) const {
    std::vector<Constraint> out;
    auto duration = [&](std::size_t i) {
      const Op& op = block_[i].first;
      return real[static_cast<std::size_t>(op.stage)].duration_ns(op.kind);
    };
    for (const std::vector<std::size_t>& ops : round_order()) {
      for (std::size_t k = 0; k < ops.size(); ++k) {
        out.push_back(
            {ops[k], ops[(k + 1) % ops.size()], duration(ops[k]), k + 1 == ops.size() ? 1 : 0});
      }
    }
    const std::size_t stages = 2 * static_cast<std::size_t>(p_);
    auto input = [&](std::size_t from, std::size_t to, TimeNs transfer_ns) {
      out.push_back({from, to, duration(from) + transfer_ns,
                     block_[to].second / period_ns_ - block_[from].second / period_ns_});
    };
    for (std::size_t s = 0; s < stages; ++s) {  // stage s's forward is block_[s]
      const StageCosts& c = real[s];
      input(s, s + 1 < stages ? s + 1 : b_index(s), c.f_out_ns);
      if (s > 0) input(b_index(s), b_index(s - 1), c.b_out_ns);
      input(b_index(s), w_index(s), 0);
    }
    return out;
  }

  // The period the repeated block settles to when `real` times its order (as the engine runs
  // it): the maximum cycle ratio of its constraints (Howard's algorithm, Boost.Graph), the time
  // they take over the rounds they span, on the slowest cycle of them. At least the busiest
  // device's work per microbatch (its own ops make a cycle of one round); the block's period
  // where `real` are the costs it was laid out with; more where a transfer or a longer op finds
  // no slack in its chain.
  double steady_period_ns(const std::vector<StageCosts>& real) const {
    struct Weights {
      double time_ns, rounds;
    };
    using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, Weights>;
    std::vector<std::pair<std::size_t, std::size_t>> edges;
    std::vector<Weights> weights;
    for (const Constraint& c : constraints(real)) {
      edges.emplace_back(c.from, c.to);
      weights.push_back({static_cast<double>(c.weight_ns), static_cast<double>(c.rounds)});
    }
    const Graph graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(),
                      weights.begin(), block_.size());
    return boost::maximum_cycle_ratio(graph, boost::get(boost::vertex_index, graph),
                                      boost::get(&Weights::time_ns, graph),
                                      boost::get(&Weights::rounds, graph));
  }

  // The rounds of the repetition one microbatch's ops span.
  TimeNs rounds() const {
    TimeNs first = kNever, last = 0;
    for (const auto& [op, start_ns] : block_) {
      first = std::min(first, start_ns / period_ns_);
      last = std::max(last, start_ns / period_ns_);
    }
    return last - first + 1;
  }

  // What the repeated order depends on (repeat(), constraints()): per device, its ops in
  // round_order() with the round each starts in. Layouts of the same signature repeat to the
  // same schedule at every m.
  std::vector<std::size_t> order_signature() const {
    std::vector<std::size_t> out;
    for (const std::vector<std::size_t>& ops : round_order()) {
      for (const std::size_t i : ops) {
        out.push_back(i);
        out.push_back(static_cast<std::size_t>(block_[i].second / period_ns_));
      }
    }
    return out;
  }

  // Whether two ops of a device start at the same step of the cycle.
  bool starts_together() const {
    for (const auto& ops : device_ops()) {
      for (std::size_t a = 0; a < ops.size(); ++a) {
        for (std::size_t b = a + 1; b < ops.size(); ++b) {
          if (block_[ops[a]].second % period_ns_ == block_[ops[b]].second % period_ns_) return true;
        }
      }
    }
    return false;
  }

  // The controllable-memory paper's squeezing of a block of unit costs (every op one step,
  // free transfers; nothing otherwise), as a list schedule: the ops of the block repeated m
  // times, in the order of their start there, each placed at the earliest step at or after its
  // input where its device is free and, for a forward, where the device stays within `limit`
  // until its W's start in the repetition (where it is known to end at the latest: no op starts
  // later than it did there). Ops of later microbatches fill the idle steps of the warm-up and
  // the cool-down, passing ops that still wait, where the memory allows; the repetition
  // itself must be within `limit` (within()). With a wait at the V's top it reaches the
  // authors' unit-cost spans where p is a multiple of 3 (6m + 4p - 7), where squeezing by
  // justification stays a step above (docs/validation.md).
  std::optional<Schedule> backfilled(int m, const std::vector<double>& limit) const {
    const std::optional<TimeNs> step = unit_step();
    if (!step) return std::nullopt;
    const auto mbs = static_cast<std::size_t>(m);
    const std::vector<Start> starts = repetition_starts(m, *step);
    const auto steps = static_cast<std::size_t>(starts.back().step + 1);
    std::vector<std::vector<char>> busy(static_cast<std::size_t>(p_), std::vector<char>(steps));
    // Per device and step, what the ops placed so far hold: a forward until its W's start in
    // the repetition (its B's and W's deltas from theirs: the three sum to zero), a B or W
    // placed sooner its delta over the steps it gained.
    std::vector<std::vector<double>> held(static_cast<std::size_t>(p_), std::vector<double>(steps));
    std::vector<TimeNs> end(block_.size() * mbs, 0);  // op i of microbatch k at i * m + k
    std::vector<std::vector<std::pair<TimeNs, Op>>> placed(static_cast<std::size_t>(p_));
    for (const Start& start : starts) {
      const Op& op = block_[start.op].first;
      const StageCosts& c = costs_[static_cast<std::size_t>(op.stage)];
      const auto d = static_cast<std::size_t>(v_device(op.stage));
      const auto s = static_cast<std::size_t>(op.stage);
      const TimeNs b_at = repeated_step(b_index(s), start.mb, *step);
      const TimeNs w_at = repeated_step(w_index(s), start.mb, *step);
      // Placed at step x, the op holds amount(t) for t in [x, until): a forward until its W's
      // start in the repetition, a B or W placed sooner its delta over the steps it gained.
      // Where it allocates, those steps must have room for it.
      const bool forward = op.kind == OpKind::F;
      const TimeNs until = forward ? w_at : start.step;
      auto amount = [&](TimeNs t) {
        if (!forward) return c.delta(op.kind);
        return t < b_at ? c.f_delta : c.f_delta + c.b_delta;
      };
      auto fits = [&](TimeNs x) {
        for (TimeNs t = x; t < until; ++t) {
          const double a = amount(t);
          if (a > 0 && held[d][static_cast<std::size_t>(t)] + a > limit[d] + 1e-9) return false;
        }
        return true;
      };
      const std::optional<std::size_t> input = input_index(start.op);
      TimeNs x = input ? end[*input * mbs + start.mb] : 0;
      while (x <= start.step && (busy[d][static_cast<std::size_t>(x)] || !fits(x)))
        ++x;
      if (x > start.step) return std::nullopt;  // the repetition was not within the limit
      busy[d][static_cast<std::size_t>(x)] = 1;
      end[start.op * mbs + start.mb] = x + 1;
      for (TimeNs t = x; t < until; ++t)
        held[d][static_cast<std::size_t>(t)] += amount(t);
      Op placed_op = op;
      placed_op.microbatch = static_cast<std::int32_t>(start.mb);
      placed[d].emplace_back(x, placed_op);
    }
    Schedule schedule;
    schedule.num_microbatches = m;
    schedule.stage_device = v_placement(p_);
    for (auto& ops : placed) {
      std::sort(ops.begin(), ops.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      auto& order = schedule.device_ops.emplace_back();
      for (const auto& [at, op] : ops)
        order.push_back(op);
    }
    return schedule;
  }

  // Whether the block repeated m times keeps every device within its limit.
  bool within(int m, const std::vector<double>& limit) const {
    TimeNs first = kNever, last = 0;
    for (const auto& [op, start_ns] : block_) {
      first = std::min(first, start_ns);
      last = std::max(last, start_ns);
    }
    // Fewer microbatches than overlap, or ops of a device that start together (passes that
    // take no time): the repeated order itself. The closed form below counts ops that start
    // together as one step and would miss the peak between them.
    if (m <= (last - first) / period_ns_ + 2 || starts_together())
      return fits(repeat(m), costs_, limit);
    // Otherwise the steady state's peak, which the warm-up never exceeds: just after op o
    // (at s_o + K T, K large) a device holds sum over its ops o' of delta(o') times the
    // repeats of o' started by then, K + floor((s_o - s_o') / T) (the K terms cancel, as a
    // microbatch's deltas sum to zero).
    for (const auto& ops : device_ops()) {
      for (const std::size_t i : ops) {
        const auto& [op, start_ns] = block_[i];
        double held = 0;
        for (const std::size_t j : ops) {
          const auto& [other, other_ns] = block_[j];
          const TimeNs diff = start_ns - other_ns;
          const TimeNs repeats =
              diff >= 0 ? diff / period_ns_ : -((-diff + period_ns_ - 1) / period_ns_);
          held += costs_[static_cast<std::size_t>(other.stage)].delta(other.kind) *
                  static_cast<double>(repeats);
        }
        const int d = v_device(op.stage);
        if (held > limit[static_cast<std::size_t>(d)] + 1e-9) return false;
      }
    }
    return true;
  }

 private:
  // Device d of stage s.
  int v_device(int stage) const { return std::min(stage, 2 * p_ - 1 - stage); }

  // The time every op of the last layout takes, where they all take the same, transfers are
  // free and the period is a whole number of them (a block of unit costs); nothing otherwise.
  std::optional<TimeNs> unit_step() const {
    const TimeNs step = costs_.front().f_ns;
    for (const StageCosts& c : costs_) {
      if (c.f_ns != step || c.b_ns != step || c.w_ns != step || c.f_out_ns != 0 || c.b_out_ns != 0)
        return std::nullopt;
    }
    if (step <= 0 || period_ns_ % step != 0) return std::nullopt;
    return step;
  }

  // When op i of block_ starts in the repetition for microbatch k, in steps of `step_ns`.
  TimeNs repeated_step(std::size_t i, std::size_t k, TimeNs step_ns) const {
    return (block_[i].second + static_cast<TimeNs>(k) * period_ns_) / step_ns;
  }

  // Every op of the block repeated m times, in the order of their starts (in steps of
  // `step_ns`), ties in block_'s order.
  struct Start {
    TimeNs step;
    std::size_t op, mb;
  };
  std::vector<Start> repetition_starts(int m, TimeNs step_ns) const {
    std::vector<Start> out;
    out.reserve(block_.size() * static_cast<std::size_t>(m));
    for (std::size_t k = 0; k < static_cast<std::size_t>(m); ++k) {
      for (std::size_t i = 0; i < block_.size(); ++i)
        out.push_back({repeated_step(i, k, step_ns), i, k});
    }
    std::sort(out.begin(), out.end(), [](const Start& a, const Start& b) {
      return a.step != b.step ? a.step < b.step : a.op < b.op;
    });
    return out;
  }

  // Where block_ holds the input of its op i (the op before it in the microbatch's chain:
  // the previous stage's F, the F of the last stage for its B, the next stage's B, its own B
  // for a W); nothing for stage 0's F.
  std::optional<std::size_t> input_index(std::size_t i) const {
    const Op& op = block_[i].first;
    const auto s = static_cast<std::size_t>(op.stage);
    const std::size_t stages = 2 * static_cast<std::size_t>(p_);
    if (op.kind == OpKind::F) return s == 0 ? std::nullopt : std::optional(s - 1);
    if (op.kind == OpKind::W) return b_index(s);
    return s + 1 == stages ? std::optional(s) : std::optional(b_index(s + 1));
  }

  // Where block_ holds stage s's B and W: it holds the forwards up the V (stage s at s), the
  // backwards down it, then the W's down it.
  std::size_t b_index(std::size_t s) const {
    const std::size_t stages = 2 * static_cast<std::size_t>(p_);
    return stages + (stages - 1 - s);
  }
  std::size_t w_index(std::size_t s) const { return b_index(s) + 2 * static_cast<std::size_t>(p_); }

  // Per device, the indices in block_ of its ops (of the last layout).
  const std::vector<std::vector<std::size_t>>& device_ops() const { return by_device_; }

  // Per device, the indices in block_ of its ops in the order a round of the repetition runs
  // them: by the remainder of their start by the period; ops that start together (passes that
  // take no time) in the block's order, which is their inputs' order within a microbatch.
  std::vector<std::vector<std::size_t>> round_order() const {
    std::vector<std::vector<std::size_t>> order = device_ops();
    for (auto& ops : order) {
      std::stable_sort(ops.begin(), ops.end(), [&](std::size_t a, std::size_t b) {
        return block_[a].second % period_ns_ < block_[b].second % period_ns_;
      });
    }
    return order;
  }

  // The earliest start >= ready_ns where [start, start + duration) is free in the device's
  // cycle; marks it busy.
  std::optional<TimeNs> place(int d, TimeNs ready_ns, TimeNs duration_ns) {
    auto& busy = busy_[static_cast<std::size_t>(d)];
    const TimeNs period = period_ns_;
    auto mod = [period](TimeNs t) { return ((t % period) + period) % period; };
    auto free_at = [&](TimeNs t) {
      for (const auto& [from, length] : busy) {
        const TimeNs x = mod(t - from);
        if (x < length || x + duration_ns > period) return false;
      }
      return true;
    };
    std::optional<TimeNs> best;
    auto consider = [&](TimeNs t) {
      if ((!best || t < *best) && free_at(t)) best = t;
    };
    consider(ready_ns);
    for (const auto& [from, length] : busy)
      consider(ready_ns + mod(from + length - ready_ns));
    if (best) busy.emplace_back(mod(*best), duration_ns);
    return best;
  }

  int p_;
  const std::vector<StageCosts>& costs_;
  TimeNs period_ns_ = 1;
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> busy_;  // per device: (start mod T, length)
  std::vector<std::pair<Op, TimeNs>> block_;                  // op and start time
  std::vector<TimeNs> b_end_;                        // lay_out's: per stage, when its W may start
  std::vector<std::vector<std::size_t>> by_device_;  // device_ops()
};

// Blocks of each kind v_blocks returns, the shortest first (a span once): the justification
// that follows (VShape::generate) reorders their warm-up and cool-down, after which the
// shortest need not stay the shortest (zb-v, p = 32, m = 57: 480,567 -> 457,801 units, but
// 509,436 -> 457,217). Five rather than one: zb-v 59 -> 61 reference rows at or below, 5 of
// 80 rows' worth more justification time; V-Half and V-Min almost unchanged.
constexpr std::ptrdiff_t kKeptPerKind = 5;
// Ops the engine may simulate timing blocks with waits (v_blocks): 250 blocks at 4,000 ops,
// 40 at 25,000.
constexpr std::size_t kGapOps = 1'000'000;
// The same for the backfilled orders of unit-cost blocks (backfilled_blocks), one engine run
// per order, and at most kBackfillRuns of them: V-Min's rows of the reference sets take 2-11
// (p = 16-24); zb-v's layouts (more fit its memory) took 52 at p = 32, m = 100 within
// kBackfillOps alone, 0.3 s more of its generation. The cap changed no reference row.
constexpr std::size_t kBackfillOps = 1'000'000;
constexpr std::size_t kBackfillRuns = 16;
// The time of one op in the blocks of unit costs.
constexpr TimeNs kUnitNs = 1000;

// A schedule and its largest device span.
using Timed = SpanRanked;

// The `capacity` shortest schedules offered, a span once, shortest first.
class Shortest {
 public:
  explicit Shortest(std::ptrdiff_t capacity) : capacity_(capacity) {}
  // Whether a schedule of `span_ns` would be kept (the caller may then build it).
  bool wants(TimeNs span_ns) const {
    const auto at = position(span_ns);
    return at - kept_.begin() < capacity_ && (at == kept_.end() || at->second != span_ns);
  }
  void offer(Schedule schedule, TimeNs span_ns) {
    if (!wants(span_ns)) return;
    kept_.emplace(position(span_ns), std::move(schedule), span_ns);
    if (std::ssize(kept_) > capacity_) kept_.pop_back();
  }
  // Appends the kept schedules to `out` and forgets them.
  void move_to(std::vector<Timed>& out) {
    for (Timed& kept : kept_)
      out.push_back(std::move(kept));
    kept_.clear();
  }

 private:
  std::vector<Timed>::const_iterator position(TimeNs span_ns) const {
    return std::find_if(kept_.begin(), kept_.end(),
                        [&](const Timed& kept) { return span_ns <= kept.second; });
  }
  std::ptrdiff_t capacity_;
  std::vector<Timed> kept_;
};

// Ops the engine may simulate squeezing unit-cost blocks (squeeze): the rounds of about 250
// layouts at p = 10, m = 24, of about five at p = 32, m = 100.
constexpr std::size_t kSqueezeOps = 2'000'000;

// The cost model of the unit-cost blocks (every op kUnitNs, free transfers) with the real
// memory deltas of `costs` (the per-stage table; device d's chunk 0 is stage d).
PerDeviceCostModel unit_cost_model(int p, const std::vector<StageCosts>& costs) {
  std::vector<DeviceCosts> devices;
  for (int d = 0; d < p; ++d) {
    const StageCosts& c = costs[static_cast<std::size_t>(d)];
    devices.push_back({2 * kUnitNs, 2 * kUnitNs, 2 * kUnitNs, 0, 2 * c.f_delta, -2 * c.w_delta});
  }
  return PerDeviceCostModel(devices, 2);
}

// The controllable-memory paper's squeezing of a repeated block, done at unit costs as the
// paper does it (the order is then fixed and timed with the real costs): rounds of
// forward-backward justification (justify.h) under `unit_model`, at most 4 and while the
// unit-cost span does not grow, close up the block's warm-up and cool-down and let ops
// overtake the ones still waiting. Each round's order, timed with `model`, is offered to
// `best`. A round costs about five engine runs, taken from `budget_ops`; none is started
// without them.
void squeeze(Schedule schedule, const CostModel& unit_model, const CostModel& model,
             const std::vector<double>& limit, std::size_t& budget_ops, Shortest& best) {
  const std::size_t round_ops = 5 * schedule.num_ops();
  for (int round = 0; round < 4 && budget_ops >= round_ops; ++round) {
    budget_ops -= round_ops;
    const Timeline timeline = Engine(schedule, unit_model).run();
    std::optional<Schedule> next = justify(schedule, timeline, unit_model, limit);
    if (!next || Engine(*next, unit_model).run().max_span_ns() > timeline.max_span_ns()) return;
    schedule = std::move(*next);
    const TimeNs span = Engine(schedule, model).run().max_span_ns();
    if (best.wants(span)) best.offer(schedule, span);
  }
}

// Waits of 0, 1 or 2 steps (the digits of `combination` in base 3) after the ops of each chain
// and at the V's top (VBlock::Gaps), the chains' varying fastest.
constexpr int kGapSteps = 3;
constexpr int kGapCombinations = 3 * 3 * 3 * 3 * 3 * 3;  // the five chains, then the turn
VBlock::Gaps chain_gaps(int combination, TimeNs step_ns) {
  TimeNs wait[6];
  for (int k = 0; k < 6; ++k, combination /= kGapSteps)
    wait[k] = combination % kGapSteps * step_ns;
  return VBlock::Gaps{.turn_ns = wait[5],
                      .f0_ns = wait[0],
                      .f1_ns = wait[1],
                      .b1_ns = wait[2],
                      .b0_ns = wait[3],
                      .w_ns = wait[4]};
}

// `block` (of unit costs: unit_costs) laid out at its shortest period with the waits of
// combination `g` (chain_gaps), a step being one unit; false where it does not lay out.
bool lay_out_unit(VBlock& block, int g) {
  return block.lay_out(block.min_period_ns(), chain_gaps(g, kUnitNs));
}

// Whether the waits of combination `g` (chain_gaps) after the ops of each chain are of at most
// one step (the turn's of any).
bool one_step_waits(int g) {
  for (int k = 0; k < 5; ++k, g /= kGapSteps) {
    if (g % kGapSteps > 1) return false;
  }
  return true;
}

// Whether the caller's task group is called off (v_shape.cpp: the greedy beside the blocks
// found no bubble): the loops below stop, as what they return is not wanted.
bool called_off() {
  return tbb::is_current_task_group_canceling();
}

// Times `laid` repeated m times with `model` if it keeps within `limit`, offers it to `best`
// and adds the run's ops to `spent_ops`; false where it does not keep within the limit (or
// the caller is called off).
bool time_block(const VBlock& laid, int m, const std::vector<double>& limit, const CostModel& model,
                Shortest& best, std::size_t& spent_ops) {
  if (called_off() || !laid.within(m, limit)) return false;
  Schedule schedule = laid.repeat(m);
  const TimeNs span = Engine(schedule, model).run().max_span_ns();
  spent_ops += schedule.num_ops();
  best.offer(std::move(schedule), span);
  return true;
}

// The real-cost blocks' periods tried: T0 (1 + j / kPeriodSteps), j = 0..kPeriodSteps.
constexpr int kPeriodSteps = 32;
TimeNs real_period(TimeNs t0_ns, int j) {
  return t0_ns + t0_ns * j / kPeriodSteps;
}

// Ops the engine may simulate screening the blocks of screen_unit_blocks: about 15 short runs
// at p = 32 (35 microbatches each).
constexpr std::size_t kScreenOps = 100'000;

// The microbatches of estimated_span's run: two more than one microbatch's ops span rounds
// (past the warm-up), at most m.
int sample_microbatches(const VBlock& laid, int m) {
  return static_cast<int>(std::min<TimeNs>(m, laid.rounds() + 2));
}

// The span of `laid` repeated m times, estimated from a run of sample_microbatches plus the
// microbatches left at `period_ns`, its steady period (VBlock::steady_period_ns). Adds the
// run's ops to `spent_ops`.
double estimated_span(const VBlock& laid, int m, double period_ns, const CostModel& model,
                      std::size_t& spent_ops) {
  const int few = sample_microbatches(laid, m);
  const Schedule sample = laid.repeat(few);
  spent_ops += sample.num_ops();
  return static_cast<double>(Engine(sample, model).run().max_span_ns()) + (m - few) * period_ns;
}

// The unit-cost blocks with waits of at most one step after the ops of each chain and up to two
// at the V's top (chain_gaps; 96 layouts) that fit, each order once (a layout whose repetition
// is an earlier one's is skipped: at p = 32, m = 256 V-Half's 33 fits are 27 orders, V-Min's 6
// are 4), ranked without timing each one at m: by their steady period under the real costs (a
// unit-cost order whose chains have no slack for the transfers falls behind by a little every
// round), then, for those of the shortest, by estimated_span, within kScreenOps (the first
// always). The best estimate and its layout; nothing where none fits.
std::optional<std::pair<double, int>> screen_unit_blocks(VBlock& block, int m,
                                                         const std::vector<StageCosts>& costs,
                                                         const std::vector<double>& limit,
                                                         const CostModel& model) {
  struct Layout {
    double period_ns;
    int gaps;
  };
  std::vector<Layout> fit;
  std::vector<std::vector<std::size_t>> seen;  // the fits' order signatures
  for (int g = 0; g < kGapCombinations; ++g) {
    if (!one_step_waits(g) || !lay_out_unit(block, g) || !block.within(m, limit)) continue;
    std::vector<std::size_t> signature = block.order_signature();
    if (std::find(seen.begin(), seen.end(), signature) != seen.end()) continue;
    seen.push_back(std::move(signature));
    fit.push_back({block.steady_period_ns(costs), g});
  }
  if (fit.empty()) return std::nullopt;
  const double shortest =
      std::min_element(fit.begin(), fit.end(), [](const Layout& a, const Layout& b) {
        return a.period_ns < b.period_ns;
      })->period_ns;
  std::optional<std::pair<double, int>> chosen;
  std::size_t spent = 0;
  for (const Layout& layout : fit) {
    if (layout.period_ns > shortest * (1 + 1e-9)) continue;
    lay_out_unit(block, layout.gaps);
    const auto sample_ops =  // 6 ops per microbatch and device, 2 stages per device
        3 * costs.size() * static_cast<std::size_t>(sample_microbatches(block, m));
    if (chosen && spent + sample_ops > kScreenOps) break;
    const double estimate = estimated_span(block, m, layout.period_ns, model, spent);
    if (!chosen || estimate < chosen->first) chosen = {estimate, layout.gaps};
  }
  return chosen;
}

// Kind 4 of v_blocks, for pipelines of more than kUnitCostOps ops: the real-cost block at the
// shortest period that fits and, below 1F1B's memory, the best of screen_unit_blocks, each
// estimated (estimated_span); the one of the shorter estimate alone is timed at m.
std::vector<Timed> large_pipeline_blocks(int p, int m, const std::vector<StageCosts>& costs,
                                         const std::vector<double>& limit, const CostModel& model) {
  std::size_t spent = 0;
  VBlock block(p, costs);
  const TimeNs t0 = block.min_period_ns();
  std::optional<std::pair<double, TimeNs>> real;  // estimate and period
  for (int j = 0; j <= kPeriodSteps && !real; ++j) {
    const TimeNs period = real_period(t0, j);
    if (block.lay_out(period) && block.within(m, limit))
      real = {estimated_span(block, m, block.steady_period_ns(costs), model, spent), period};
  }
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  std::optional<std::pair<double, int>> unit;  // estimate and layout
  if (limit[0] < 2 * p * costs[0].f_delta)
    unit = screen_unit_blocks(unit_block, m, costs, limit, model);
  Shortest timed(1);
  if (unit && (!real || unit->first < real->first)) {
    if (lay_out_unit(unit_block, unit->second))
      time_block(unit_block, m, limit, model, timed, spent);
  } else if (real && block.lay_out(real->second)) {
    time_block(block, m, limit, model, timed, spent);
  }
  std::vector<Timed> out;
  timed.move_to(out);
  return out;
}

}  // namespace

std::vector<StageCosts> unit_costs(std::vector<StageCosts> costs) {
  for (StageCosts& c : costs) {
    c.f_ns = c.b_ns = c.w_ns = kUnitNs;
    c.f_out_ns = c.b_out_ns = 0;
  }
  return costs;
}

std::vector<Timed> v_blocks(int p, int m, const std::vector<StageCosts>& costs,
                            const std::vector<double>& limit, const CostModel& model) {
  // The longer periods add m times their excess to the steady state and rarely win: timing
  // one period instead of 3 changed no zb-v reference row's side (mean 0.9941 either way)
  // and none of 18 spans of zb-v, V-Half and V-Min at p = 24-32, m = 160-300; at p = 32,
  // m = 256 the two extra engine runs took 8-10 of the 20-22 ms of the generation.
  constexpr std::size_t kTimedOps = 60'000;
  constexpr std::size_t kPeriods = 3;
  const std::size_t ops = static_cast<std::size_t>(6 * p) * static_cast<std::size_t>(m);
  if (ops > kUnitCostOps) return large_pipeline_blocks(p, m, costs, limit, model);
  std::vector<Timed> out;
  // The kinds. Five squeezed blocks instead of one changed no row (zb-v mean 0.9941 either way).
  Shortest real(kKeptPerKind), unit(kKeptPerKind), squeezed(1);
  std::size_t spent = 0;
  auto time = [&](const VBlock& laid, Shortest& best) {
    return time_block(laid, m, limit, model, best, spent);
  };

  VBlock block(p, costs);
  const TimeNs t0 = block.min_period_ns();
  std::vector<TimeNs> periods;  // that fit
  for (int j = 0; j <= kPeriodSteps && periods.size() < kPeriods &&
                  (periods.empty() || spent + ops <= kTimedOps);
       ++j) {
    const TimeNs period = real_period(t0, j);
    if (block.lay_out(period) && time(block, real)) periods.push_back(period);
  }
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  const PerDeviceCostModel unit_model = unit_cost_model(p, costs);
  std::size_t squeeze_left = kSqueezeOps;
  for (int g = 0; g < kGapCombinations && spent + ops <= kGapOps && !called_off(); ++g) {
    if (lay_out_unit(unit_block, g) && time(unit_block, unit))
      squeeze(unit_block.repeat(m), unit_model, model, limit, squeeze_left, squeezed);
  }
  for (const TimeNs period : periods) {
    for (int g = 1; g < kGapCombinations && spent + ops <= kGapOps && !called_off(); ++g) {
      if (block.lay_out(period, chain_gaps(g, t0 / 6))) time(block, real);
    }
  }
  squeezed.move_to(out);
  unit.move_to(out);
  real.move_to(out);
  return out;
}

// The waits of turn_blocks' layouts: chain_gaps(g) with, for turn t, t % 3 steps at the V's
// bottom and t / 3 at its top on the way down (turn 0: v_blocks' unit-cost layouts).
constexpr int kTurns = 3 * 3;  // the bottom's wait varying fastest, then the top's
VBlock::Gaps turn_gaps(int turn, int g) {
  VBlock::Gaps gaps = chain_gaps(g, kUnitNs);
  gaps.bottom_ns = turn % kGapSteps * kUnitNs;
  gaps.b_turn_ns = turn / kGapSteps * kUnitNs;
  return gaps;
}

std::vector<Timed> turn_blocks(int p, int m, const std::vector<StageCosts>& costs,
                               const std::vector<double>& limit, const CostModel& model) {
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  Shortest laid(kKeptPerKind);
  std::size_t spent = 0;
  const std::size_t ops = static_cast<std::size_t>(6 * p) * static_cast<std::size_t>(m);
  for (int turn = 1; turn < kTurns; ++turn) {
    for (int g = 0; g < kGapCombinations && spent + ops <= kGapOps && !called_off(); ++g) {
      if (unit_block.lay_out(unit_block.min_period_ns(), turn_gaps(turn, g)))
        time_block(unit_block, m, limit, model, laid, spent);
    }
  }
  std::vector<Timed> out;
  laid.move_to(out);
  return out;
}

std::vector<Timed> backfilled_blocks(int p, int m, const std::vector<StageCosts>& costs,
                                     const std::vector<double>& limit, const CostModel& model) {
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  Shortest best(kKeptPerKind);
  std::vector<std::vector<std::size_t>> seen;  // the order signatures backfilled
  std::size_t spent = 0;
  const std::size_t ops = static_cast<std::size_t>(6 * p) * static_cast<std::size_t>(m);
  const std::size_t budget = std::min(kBackfillOps, kBackfillRuns * ops);
  for (int turn = 0; turn < kTurns; ++turn) {
    for (int g = 0; g < kGapCombinations && spent + ops <= budget && !called_off(); ++g) {
      if (!unit_block.lay_out(unit_block.min_period_ns(), turn_gaps(turn, g)) ||
          !unit_block.within(m, limit))
        continue;
      std::vector<std::size_t> signature = unit_block.order_signature();
      if (std::find(seen.begin(), seen.end(), signature) != seen.end()) continue;
      seen.push_back(std::move(signature));
      std::optional<Schedule> schedule = unit_block.backfilled(m, limit);
      if (!schedule) continue;
      spent += ops;
      const TimeNs span = Engine(*schedule, model).run().max_span_ns();
      best.offer(std::move(*schedule), span);
    }
  }
  std::vector<Timed> out;
  best.move_to(out);
  return out;
}

}  // namespace bubblesim::sim
