#include "sim/schedules/v_shape.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "sim/cost_model.h"
#include "sim/device_events.h"
#include "sim/engine.h"
#include "sim/placement.h"
#include "sim/schedules/improve.h"
#include "sim/schedules/justify.h"
#include "sim/schedules/splice.h"
#include "sim/schedules/stage_costs.h"

namespace bubblesim::sim {

namespace {

// The yes/no choices of the greedy.
struct Choices {
  bool forward_first = false;              // a ready F goes before a ready B
  bool reserve_for_chunk1 = false;         // a chunk-0 F leaves room for one chunk-1 F
  bool chunk1_forward_first = true;        // between two ready F, the later stage's
  bool lower_stage_backward_first = true;  // between two ready B, the earlier stage's
  bool w_only_in_long_gaps = false;        // a W waits for a gap of at least w_gap_share of
                                           // its length, unless memory stops the next F or
                                           // nothing else is known
  int chunk0_in_flight = kNoCap;           // chunk-0 microbatches past F and before B, at most
  bool alternate = false;                  // after the first B: F and B take turns
  bool lookahead = false;  // wait for the preferred op when it arrives before the other ends
  bool feed = false;       // between a startable F and B: the one whose next device is free first
  bool commit = false;     // a chunk-1 F or B whose input is known goes first, however late
  bool tight_w = false;    // a pending W goes first while the memory has room for less than
                           // two more F (it frees memory that the next F's will need)
  // With w_only_in_long_gaps: 1 fills only gaps a W fits in whole; 1/2 also those where the
  // idle it fills outweighs the delay it causes (at p = 32, m = 117 a device waiting 859
  // units for a chunk-1 forward beside 891-unit W's idled through the steady state).
  double w_gap_share = 1.0;
  // A device that would idle past this much in all (since its first op) starts a pending W
  // instead of waiting, whatever the rules above say (idle_allowance() sets it).
  double idle_allowance_ns = kNoAllowance;

  static constexpr double kNoAllowance = 1e300;

  static constexpr int kNoCap = 1 << 30;
  // The five yes/no choices from the bits of `bits` (0 is the defaults above).
  static constexpr int kCombinations = 1024;
  // The first five bits: the choices phase 2 varies per device (the later three are kept).
  static constexpr int kDeviceCombinations = 32;
  static constexpr int kWOnlyInLongGapsBit = 16;
  Choices with_rules_of(const Choices& other) const {
    Choices out = *this;
    out.alternate = other.alternate;
    out.lookahead = other.lookahead;
    out.feed = other.feed;
    out.commit = other.commit;
    out.tight_w = other.tight_w;
    out.idle_allowance_ns = other.idle_allowance_ns;
    out.w_gap_share = other.w_gap_share;
    return out;
  }
  static Choices from_bits(int bits, int cap) {
    return Choices{(bits & 1) != 0,
                   (bits & 2) != 0,
                   (bits & 4) == 0,
                   (bits & 8) == 0,
                   (bits & kWOnlyInLongGapsBit) != 0,
                   cap,
                   (bits & 32) != 0,
                   (bits & 64) != 0,
                   (bits & 128) != 0,
                   (bits & 256) != 0,
                   (bits & 512) != 0};
  }
  friend bool operator==(const Choices&, const Choices&) = default;
};

// How good one run of the greedy is, from the timing and memory it simulated on the way.
struct Score {
  TimeNs max_span_ns = 0;
  TimeNs sum_span_ns = 0;  // over devices: a tie-break that rewards progress off the longest
  double peak = 0;         // largest activation memory any device held
  bool no_bubble = false;  // every device busy for the whole longest span

  // Shorter first, then leaner, then with less span summed over the devices.
  bool better_than(const Score& other) const {
    if (max_span_ns != other.max_span_ns) return max_span_ns < other.max_span_ns;
    if (peak != other.peak) return peak < other.peak;
    return sum_span_ns < other.sum_span_ns;
  }
};

// Per device, the idle time it may have in all without being the longest device, at `scale`
// times the closed-form bound: every device's span is at least its work plus the idle it
// cannot avoid in the warm-up, where it runs only chunk-0 forwards (as many as fit beside
// one chunk-1 activation, at most m) until its first chunk-1 forward can start, the first
// microbatch's way up the V from its stage and back (forwards and transfers). The longest of
// those bounds is the target; a device with less work or less forced idle may idle the
// difference. Device 0 has the most to wait (p = 32, m = 48, no transfers: 15 forwards); a
// greedy that lets it wait again later for a forward that is about to arrive, rather than
// run a W, ends 2.6% above that bound, where the authors' scheduler is 0.07% above it.
std::vector<double> idle_allowance(int p, int m, const std::vector<StageCosts>& costs,
                                   const std::vector<double>& limit, double scale) {
  std::vector<double> work(static_cast<std::size_t>(p)), out(work.size());
  double target = 0;
  for (int d = 0; d < p; ++d) {
    const auto i = static_cast<std::size_t>(d);
    const int high = 2 * p - 1 - d;
    double up_and_back = 0;
    for (int s = d; s <= high; ++s) {
      const StageCosts& c = costs[static_cast<std::size_t>(s)];
      if (s == d || s == high) work[i] += m * static_cast<double>(c.f_ns + c.b_ns + c.w_ns);
      if (s < high) up_and_back += static_cast<double>(c.f_ns + c.f_out_ns);
    }
    const StageCosts& low = costs[i];
    const double fit = low.f_delta > 0 ? std::floor(limit[i] / low.f_delta + 1e-9) - 1 : m;
    const double forwards = std::clamp(fit, 0.0, static_cast<double>(m));
    target = std::max(target, work[i] + std::max(0.0, up_and_back - forwards * low.f_ns));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = scale * (target - work[i]);
  return out;
}

// Builds one V schedule by simulating: see v_shape.h. Returns nothing when the memory limit
// stops every device before all ops are placed.
class VGreedy {
 public:
  VGreedy(int p, int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit,
          const std::vector<Choices>& choices)
      : p_(p),
        m_(m),
        costs_(costs),
        choices_(choices),
        // One entry more per stage than microbatches, never ready: reading past the last
        // microbatch of a pass needs no check.
        f_ready_(static_cast<std::size_t>(2 * p * (m + 1)), kNever),
        b_ready_(f_ready_.size(), kNever),
        next_(static_cast<std::size_t>(2 * p)),
        free_at_(static_cast<std::size_t>(p), 0),
        first_start_(static_cast<std::size_t>(p), 0),
        busy_(static_cast<std::size_t>(p), 0),
        left_(static_cast<std::size_t>(p), 0),
        held_(static_cast<std::size_t>(p), 0.0),
        peak_(static_cast<std::size_t>(p), 0.0),
        room_(static_cast<std::size_t>(p)),
        picks_(static_cast<std::size_t>(p)),
        last_f_(static_cast<std::size_t>(p), 0),
        seen_b_(static_cast<std::size_t>(p), 0),
        events_(static_cast<std::size_t>(p)) {
    schedule_.num_microbatches = m;
    schedule_.stage_device = v_placement(p);
    schedule_.device_ops.resize(static_cast<std::size_t>(p));
    for (int d = 0; d < p; ++d) {
      room_[static_cast<std::size_t>(d)] = limit[static_cast<std::size_t>(d)] + 1e-9;
      schedule_.device_ops[static_cast<std::size_t>(d)].reserve(static_cast<std::size_t>(6 * m));
      for (const int s : {d, 2 * p - 1 - d}) {
        const StageCosts& c = costs_[static_cast<std::size_t>(s)];
        left_[static_cast<std::size_t>(d)] += m * (c.f_ns + c.b_ns + c.w_ns);
      }
    }
    for (int k = 0; k < m; ++k)
      f_ready_[index(0, k)] = 0;
  }

  // Gives up (returns nothing) as soon as a device's span must exceed `bound_ns`: what it has
  // spent plus the work it has left. The schedule is left in schedule().
  std::optional<Score> run(TimeNs bound_ns) {
    for (int d = 0; d < p_; ++d)
      replan(d);
    while (events_.next_time() != kNever) {
      const auto d = events_.next_device();
      place(static_cast<int>(d), picks_[d]);
      ++placed_;
      if (free_at_[d] - first_start_[d] + left_[d] > bound_ns) return std::nullopt;
    }
    if (placed_ != static_cast<std::size_t>(6 * p_ * m_)) return std::nullopt;
    Score built;
    built.no_bubble = true;
    for (std::size_t d = 0; d < free_at_.size(); ++d) {
      built.max_span_ns = std::max(built.max_span_ns, free_at_[d] - first_start_[d]);
      built.sum_span_ns += free_at_[d] - first_start_[d];
      built.peak = std::max(built.peak, peak_[d]);
    }
    for (std::size_t d = 0; d < free_at_.size(); ++d) {
      built.no_bubble = built.no_bubble && busy_[d] == built.max_span_ns;
    }
    return built;
  }

  std::size_t placed() const { return placed_; }
  Schedule& schedule() { return schedule_; }

 private:
  struct Pick {
    TimeNs start_ns = kNever;
    OpKind kind = OpKind::F;
    int stage = 0;
  };
  struct Counters {
    int f = 0, b = 0, w = 0;  // next microbatch of each pass on the stage
  };

  std::size_t index(int stage, int mb) const {
    return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_ + 1) +
           static_cast<std::size_t>(mb);
  }
  int device_of(int stage) const { return stage < p_ ? stage : 2 * p_ - 1 - stage; }

  // When an op whose input is there at `ready_ns` can start on a device free at `free_ns`.
  static TimeNs start(TimeNs free_ns, TimeNs ready_ns) { return std::max(free_ns, ready_ns); }

  // The device's next op under the rules of v_shape.h, and when it can start. Written out for
  // the two stages of the device rather than looped: it runs once per op placed.
  Pick choose(int d) const {
    const auto i = static_cast<std::size_t>(d);
    const Choices& choices = choices_[i];
    const TimeNs free = free_at_[i];
    const double held = held_[i], room = room_[i];
    const int low = d, high = 2 * p_ - 1 - d;
    const Counters& cl = next_[static_cast<std::size_t>(low)];
    const Counters& ch = next_[static_cast<std::size_t>(high)];
    const StageCosts& kl = costs_[static_cast<std::size_t>(low)];
    const StageCosts& kh = costs_[static_cast<std::size_t>(high)];

    // B: the earliest of the two stages' next B that fits, ties to the preferred stage.
    const TimeNs bl = held + kl.b_delta <= room ? start(free, b_ready_[index(low, cl.b)]) : kNever;
    const TimeNs bh = held + kh.b_delta <= room ? start(free, b_ready_[index(high, ch.b)]) : kNever;
    bool b_high = choices.lower_stage_backward_first ? bh < bl : bh <= bl && bh != kNever;
    if (choices.commit && bh != kNever) b_high = true;
    Pick b = b_high ? Pick{bh, OpKind::B, high} : Pick{bl, OpKind::B, low};

    // F: likewise, within the cap on chunk 0 and the memory (with the room kept for chunk 1).
    TimeNs fl = start(free, f_ready_[index(low, cl.f)]);
    TimeNs fh = start(free, f_ready_[index(high, ch.f)]);
    bool memory_bound = false;
    if (fl != kNever && cl.f - cl.b >= choices.chunk0_in_flight) fl = kNever;
    if (fl != kNever && held + (choices.reserve_for_chunk1 ? 2 * kl.f_delta : kl.f_delta) > room) {
      fl = kNever;
      memory_bound = true;
    }
    if (fh != kNever && held + kh.f_delta > room) {
      fh = kNever;
      memory_bound = true;
    }
    bool f_high = choices.chunk1_forward_first ? fh <= fl && fh != kNever : fh < fl;
    if (choices.lookahead && fh != kNever && fl != kNever) {
      f_high = choices.chunk1_forward_first ? fh < fl + kl.f_ns : !(fl < fh + kh.f_ns);
    }
    if (choices.commit && fh != kNever) f_high = true;
    Pick f = f_high ? Pick{fh, OpKind::F, high} : Pick{fl, OpKind::F, low};
    if (choices.alternate && seen_b_[i]) {
      const bool f_left = cl.f < m_ || ch.f < m_;
      const bool b_left = cl.b < m_ || ch.b < m_;
      if (last_f_[i] && b_left) {
        f.start_ns = kNever;
      } else if (!last_f_[i] && f_left && !memory_bound) {
        b.start_ns = kNever;
      }
    }

    const bool wl_pending = cl.w < cl.b, wh_pending = ch.w < ch.b;
    if (choices.tight_w && (wl_pending || wh_pending) &&
        held + 2 * std::max(kl.f_delta, kh.f_delta) > room) {
      const int w_stage =
          (choices.lower_stage_backward_first ? wl_pending : !wh_pending) ? low : high;
      return Pick{free, OpKind::W, w_stage};
    }
    bool forward_first = choices.forward_first;
    if (choices.feed && f.start_ns == free && b.start_ns == free) {
      forward_first = consumer_free(f) < consumer_free(b);
    }
    const Pick& first = forward_first ? f : b;
    const Pick& second = forward_first ? b : f;
    const Pick* target = nullptr;
    if (choices.lookahead) {
      const TimeNs second_end =
          second.start_ns == kNever
              ? kNever
              : second.start_ns +
                    costs_[static_cast<std::size_t>(second.stage)].duration_ns(second.kind);
      target = first.start_ns != kNever && first.start_ns < second_end ? &first : &second;
      if (target->start_ns == free) return *target;
    } else {
      if (first.start_ns == free) return first;
      if (second.start_ns == free) return second;
      target = first.start_ns <= second.start_ns ? &first : &second;
    }
    const Pick& earliest = *target;
    // W: the preferred stage's pending one first.
    const bool wl = cl.w < cl.b, wh = ch.w < ch.b;
    if (wl || wh) {
      const int w_stage = (choices.lower_stage_backward_first ? wl : !wh) ? low : high;
      if (earliest.start_ns != kNever &&
          static_cast<double>(earliest.start_ns - first_start_[i] - busy_[i]) >
              choices.idle_allowance_ns) {
        return Pick{free, OpKind::W, w_stage};
      }
      if ((!choices.w_only_in_long_gaps || memory_bound || earliest.start_ns == kNever ||
           earliest.start_ns - free >= w_gap(choices, w_stage)) &&
          (memory_bound || absorbed(earliest, free, w_stage))) {
        return Pick{free, OpKind::W, w_stage};
      }
    }
    return earliest;
  }

  // The shortest gap a W of `stage` fills under w_only_in_long_gaps.
  TimeNs w_gap(const Choices& choices, int stage) const {
    return static_cast<TimeNs>(choices.w_gap_share *
                               static_cast<double>(costs_[static_cast<std::size_t>(stage)].w_ns));
  }

  // A W that would delay a known B runs only where the device that B feeds holds pending W's
  // of at least kAbsorb times the delay. Measured on the reference sets (validation.md): 2 and
  // 4 do about as well, 8 less; unlike zb-auto's greedy, where a fixed threshold loses rows
  // (it sweeps one), the V greedy gains on average with it always on.
  static constexpr int kAbsorb = 4;

  // Whether a W of `w_stage` started at `free_ns`, delaying the B `waiting` by the rest of the
  // W, leaves the device that B feeds pending W's worth kAbsorb times the delay: a delayed B
  // passes its delay on down the chain unless the devices there have W's to run meanwhile
  // (zb_auto.cpp's rule). Always true for an F, a B of stage 0 or an unknown start.
  // Decided with the B's known when the device plans its op: a B that arrives later does not
  // call a planned W back (doing so lost on the reference sets: zb-v 27 -> 26 rows at or
  // below, V-Min's worst 1.0053 -> 1.0135).
  bool absorbed(const Pick& waiting, TimeNs free_ns, int w_stage) const {
    if (waiting.kind != OpKind::B || waiting.stage == 0 || waiting.start_ns == kNever) return true;
    const TimeNs delay_ns =
        free_ns + costs_[static_cast<std::size_t>(w_stage)].w_ns - waiting.start_ns;
    if (delay_ns <= 0) return true;
    const int d = device_of(waiting.stage - 1);
    double pending_ns = 0;  // in doubles: a count times an op's time may leave int64's range
    for (const int s : {d, 2 * p_ - 1 - d}) {
      const Counters& c = next_[static_cast<std::size_t>(s)];
      pending_ns += static_cast<double>(c.b - c.w) *
                    static_cast<double>(costs_[static_cast<std::size_t>(s)].w_ns);
    }
    return pending_ns >= kAbsorb * static_cast<double>(delay_ns);
  }

  // When the device that runs the op's output next is free (never for a B of stage 0).
  TimeNs consumer_free(const Pick& pick) const {
    int next = pick.kind == OpKind::F ? pick.stage + 1 : pick.stage - 1;
    if (next == 2 * p_) next = pick.stage;
    if (next < 0) return kNever;
    return free_at_[static_cast<std::size_t>(device_of(next))];
  }

  void replan(int d) {
    Pick& plan = picks_[static_cast<std::size_t>(d)];
    const TimeNs before = plan.start_ns;
    plan = choose(d);
    // Often the same time (a busy device whose next op stays at its end): the queue holds
    // times only.
    if (plan.start_ns != before) events_.set(static_cast<std::size_t>(d), plan.start_ns);
  }

  // Runs the pick on device d and makes its output ready where it goes.
  void place(int d, const Pick& pick) {
    const auto s = static_cast<std::size_t>(pick.stage);
    const StageCosts& cost = costs_[s];
    Counters& c = next_[s];
    const int mb = pick.kind == OpKind::F ? c.f++ : pick.kind == OpKind::B ? c.b++ : c.w++;
    const TimeNs duration = cost.duration_ns(pick.kind);
    const double delta = cost.delta(pick.kind);
    const TimeNs end = pick.start_ns + duration;
    const auto i = static_cast<std::size_t>(d);
    if (schedule_.device_ops[i].empty()) first_start_[i] = pick.start_ns;
    schedule_.device_ops[i].push_back(Op{pick.kind, pick.stage, pick.stage < p_ ? 0 : 1, mb});
    free_at_[i] = end;
    busy_[i] += duration;
    left_[i] -= duration;
    held_[i] += delta;
    peak_[i] = std::max(peak_[i], held_[i]);
    if (pick.kind != OpKind::W) last_f_[i] = pick.kind == OpKind::F;
    if (pick.kind == OpKind::B) seen_b_[i] = true;

    // The op that now has its input: the next stage's F, this stage's B on the last stage,
    // the previous stage's B.
    OpKind next_kind = OpKind::B;
    int next_stage = pick.stage - 1;
    TimeNs ready = end + cost.b_out_ns;
    if (pick.kind == OpKind::F) {
      const bool last = pick.stage + 1 == 2 * p_;
      next_kind = last ? OpKind::B : OpKind::F;
      next_stage = last ? pick.stage : pick.stage + 1;
      ready = end + cost.f_out_ns;
    }
    const bool has_next = pick.kind == OpKind::F || (pick.kind == OpKind::B && pick.stage > 0);
    if (has_next) (next_kind == OpKind::F ? f_ready_ : b_ready_)[index(next_stage, mb)] = ready;
    replan(d);
    if (has_next && device_of(next_stage) != d) arrive(next_kind, next_stage, mb, ready);
  }

  // The input of `kind` of (stage, mb) has been made ready at `ready_ns` on another device:
  // that device replans unless the new op cannot change its plan, which the rules of choose()
  // guarantee when it is not the stage's next op of its kind, or when it could start only
  // after the planned op (and a planned W would still fit before it).
  void arrive(OpKind kind, int stage, int mb, TimeNs ready_ns) {
    const Counters& c = next_[static_cast<std::size_t>(stage)];
    if (mb != (kind == OpKind::F ? c.f : c.b)) return;
    const int d = device_of(stage);
    const auto i = static_cast<std::size_t>(d);
    const Pick& plan = picks_[i];
    const TimeNs start = std::max(free_at_[i], ready_ns);
    const bool may_change_w =
        choices_[i].w_only_in_long_gaps &&
        (plan.kind == OpKind::W ? start - free_at_[i] < w_gap(choices_[i], plan.stage)
                                : kind == OpKind::F);  // an F that does not fit lets a W go first
    if (plan.start_ns == kNever || start <= plan.start_ns || may_change_w ||
        choices_[i].lookahead) {
      replan(d);
    }
  }

  int p_, m_;
  const std::vector<StageCosts>& costs_;  // per stage
  const std::vector<Choices>& choices_;   // per device
  std::size_t placed_ = 0;
  std::vector<TimeNs> f_ready_, b_ready_;  // per (stage, mb): when the input is there
  std::vector<Counters> next_;             // per stage
  // Per device: when it is free, its first op's start, its work done and left.
  std::vector<TimeNs> free_at_, first_start_, busy_, left_;
  std::vector<double> held_, peak_;  // per device: activation memory held now, and at most
  std::vector<double> room_;         // per device: the limit, with a tolerance for rounding
  std::vector<Pick> picks_;          // per device: its planned next op
  std::vector<char> last_f_, seen_b_;
  DeviceEvents events_;  // per device: when its planned op starts
  Schedule schedule_;
};

// The search over the greedy's choices (v_shape.h), in two phases:
//  1. The same choices on every device: the combinations of the yes/no choices, each under
//     a few caps on chunk-0 microbatches in flight (the same on every device, or falling by
//     a fixed step per device: 1 or 2, and below 1F1B's memory 1/3, 1/2 or 2/3, with which
//     V-Min at p = 32, m = 64 takes 505 units at unit cost against the blocks' and the
//     authors' 507), every cap in turn for a combination, the most promising first. Each
//     run is cut short once it must be slower than the best so far. The phase stops at zero
//     bubble, or when a whole run would take the ops simulated past kUniformOps (the first
//     run always goes): small pipelines try every candidate, large ones (p = 32, m = 256)
//     just the first.
//  2. Only where a whole round of it costs at most its budget (small p and m): choices per
//     device, by coordinate descent from the best few results of phase 1 (kStarts with one
//     cap on every device, then kSlopedStarts with sloped caps). One device at a time tries
//     every cap and combination with the others fixed, keeping a change that makes the
//     result better (shorter, else leaner, else with less span summed over the devices),
//     until nothing improves or the budget is spent. Per-device choices matter where memory
//     binds: V-Min's building block at p = 4 needs devices that behave differently, which
//     phase 1 cannot give, and at p = 12 (m = 24, 36 at unit cost: 185 and 257 units instead
//     of the blocks' 187 and 259) the descent needs about 3M ops. So the budget is
//     kTightRefineOps below 1F1B's memory (fewer than 2p chunk-0 microbatches fit: V-Half,
//     V-Min, a lower --mem-limit; about 2 s at p = 12, m = 36), else kRefineOps (at zb-v's
//     default limit five times the budget changed no validation row's count or mean and
//     doubled the time at p = 8). A round costs p * cap * 32 runs of 6pm ops, cap being what
//     fits of chunk 0 (2p at zb-v's limit, about 2(p+4)/3 at V-Min's): zb-v refines up to
//     p = 8, m = 25 or p = 4, m = 203, V-Min up to p = 12, m = 90 or p = 16, m = 42.
class VSearch {
 public:
  static constexpr std::size_t kUniformOps = 1'000'000;
  // Phase 1's budget shrinks with the square of the size: kUniformScale / ops of a run.
  static constexpr std::size_t kUniformScale = 4'000'000'000;
  // Its extension (the allowance runs, then the candidates not yet run) shrinks with the cube:
  // kExtendedScale / ops^2, in all, at most kExtendedOps. It adds nothing from p = 32, m = 256
  // (49k ops a run; the benchmark's size) on, where the cube falls below the square, and
  // about 3 times phase 1's runs at p = 32, m = 88 (41 runs instead of 14), 4 times below
  // 5k ops (4M ops, about 0.3 s).
  static constexpr std::size_t kExtendedOps = 2'000'000;
  static constexpr std::size_t kExtendedScale = 200'000'000'000'000;
  static constexpr std::size_t kRefineOps = 5'000'000;
  static constexpr std::size_t kTightRefineOps = 25'000'000;
  static constexpr std::size_t kStarts = 4;        // results of phase 1 that phase 2 starts from
  static constexpr std::size_t kSlopedStarts = 2;  // ... and of its runs with sloped caps, after
  static constexpr int kMaxFit = 1 << 20;          // chunk0_fit_ when everything fits
  // The scales of the idle allowance (idle_allowance()) that the best choices of phase 1 are
  // run again with, the most often best first.
  static constexpr double kAllowanceScales[] = {1.2, 1.0, 1.5};
  // The shares of a W's length a gap must reach for the W to fill it (Choices::w_gap_share),
  // tried in turn for each combination with w_only_in_long_gaps and each cap.
  static constexpr double kWGapShares[] = {1.0, 0.5};

  VSearch(int p, int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit)
      : p_(p), m_(m), costs_(costs), limit_(limit) {
    pass_ops_ = static_cast<std::size_t>(6 * p * m);
    // Chunk-0 microbatches whose activations fit on device 0: the scale of the caps. With no
    // limit (inf) or activations of no size (x / 0) every microbatch fits: kMaxFit, which no cap
    // below reaches in practice and which keeps the caps' arithmetic in range (the cast of inf
    // to int was undefined; x86 made it INT_MIN, so a cap of 1 microbatch in flight).
    const double fit = limit[0] / costs[0].f_delta + 1e-9;
    chunk0_fit_ = fit < kMaxFit ? std::max(1, static_cast<int>(fit)) : kMaxFit;
    below_1f1b_memory_ = chunk0_fit_ < 2 * p;
    refine_ops_ = below_1f1b_memory_ ? kTightRefineOps : kRefineOps;
    refine_ = static_cast<std::size_t>(p) * static_cast<std::size_t>(chunk0_fit_) *
                  Choices::kDeviceCombinations * pass_ops_ <=
              refine_ops_;
    uniform_budget_ = std::min(kUniformOps, kUniformScale / pass_ops_);
    extended_budget_ = std::min(kExtendedOps, kExtendedScale / pass_ops_ / pass_ops_);
    for (const double scale : kAllowanceScales)
      allowances_.push_back(idle_allowance(p, m, costs, limit, scale));
  }

  void run() {
    std::vector<std::pair<Score, std::vector<Choices>>> starts, sloped_starts;
    const int seven_eighths = (7 * chunk0_fit_ + 4) / 8;
    const bool free_transfers = std::all_of(costs_.begin(), costs_.end(), [](const StageCosts& c) {
      return c.f_out_ns == 0 && c.b_out_ns == 0;
    });
    const std::vector<Candidate> list = candidates(free_transfers, seven_eighths);
    std::size_t next = 0;
    for (; next < list.size(); ++next) {
      if (done() || (best_ && spent_ + pass_ops_ > uniform_budget_)) break;
      const std::vector<Choices> choices = uniform_choices(list[next]);
      // Phase 2 starts from results that need not be the best: they must run to the end.
      std::optional<Score> built = attempt(choices, refine_ ? kNever : bound());
      if (!built || !refine_) continue;
      // Phase 2 starts from the plain greedy's best runs (no alternation, lookahead or
      // feeding): per-device choices matter most where the plain rules fall short (V-Min's
      // building block). The best runs with the same cap on every device first, then the
      // best with sloped caps.
      if (list[next].bits >= Choices::kDeviceCombinations) continue;
      auto& kept = list[next].slope_sixths == 0 ? starts : sloped_starts;
      kept.emplace_back(*built, choices);
      std::sort(kept.begin(), kept.end(),
                [](const auto& a, const auto& b) { return a.first.better_than(b.first); });
      if (kept.size() > (list[next].slope_sixths == 0 ? kStarts : kSlopedStarts)) kept.pop_back();
    }
    allowance_pass();
    for (; next < list.size() && !done() && spent_ + pass_ops_ <= extended_budget_; ++next)
      attempt(uniform_choices(list[next]), bound());
    for (auto& sloped : sloped_starts)
      starts.push_back(std::move(sloped));
    const std::size_t refine_end = spent_ + refine_ops_;
    for (auto& [current, choices] : starts) {
      for (bool improved = true; improved && !done();) {
        improved = false;
        for (std::size_t d = 0; d < choices.size(); ++d) {
          for (int cap = 1; cap <= chunk0_fit_; ++cap) {
            for (int bits = 0; bits < Choices::kDeviceCombinations; ++bits) {
              if (done() || spent_ + pass_ops_ > refine_end) return;
              std::vector<Choices> trial = choices;
              trial[d] = Choices::from_bits(bits, cap).with_rules_of(choices[d]);
              if (trial[d] == choices[d]) continue;
              std::optional<Score> built = attempt(trial, current.max_span_ns);
              if (built && built->better_than(current)) {
                current = *built;
                choices = std::move(trial);
                improved = true;
              }
            }
          }
        }
      }
    }
  }

  // One uniform run of phase 1: the yes/no choices' bits, a cap on the chunk-0 microbatches
  // in flight on device 0, lowered by slope_sixths / 6 on each later device (rounded down,
  // at least 1).
  struct Candidate {
    int bits;
    int cap;
    int slope_sixths;
    double w_gap_share = 1.0;
  };

  // Phase 1's runs, the most promising first: combinations by their distance from the one
  // that wins most often (without transfers: the plain greedy, uncapped, which reaches zero
  // bubble at unit costs; with transfers: forward first, a W only in a gap it fits, and
  // lookahead, under a cap two below what fits that falls to about half of it at the V's top),
  // each under every cap.
  std::vector<Candidate> candidates(bool free_transfers, int seven_eighths) const {
    const int anchor = free_transfers ? 3 : 81;
    std::vector<int> bits(Choices::kCombinations);
    for (int b = 0; b < Choices::kCombinations; ++b)
      bits[static_cast<std::size_t>(b)] = b;
    std::stable_sort(bits.begin(), bits.end(), [&](int a, int b) {
      return std::popcount(static_cast<unsigned>(a ^ anchor)) <
             std::popcount(static_cast<unsigned>(b ^ anchor));
    });
    const int fit = chunk0_fit_;
    std::vector<std::pair<int, int>> caps;  // (cap, slope)
    auto add = [&](int cap, int slope) {
      if (cap >= 1 && std::find(caps.begin(), caps.end(), std::pair{cap, slope}) == caps.end())
        caps.emplace_back(cap, slope);
    };
    if (free_transfers) add(Choices::kNoCap, 0);
    // The anchor's cap falls to about half of fit - 2 at the V's top: by one microbatch per
    // device at 1F1B's memory (fit = 2p), by less below it, where one per device would leave
    // the top devices a cap of 1 (V-Half at p = 32: ten times the span of the best run).
    const int halving = std::clamp((3 * fit + p_ / 2) / p_, 1, 6);
    add(fit - 2, halving);
    for (const auto& [cap, slope] : {std::pair{fit - 2, 6},
                                     {Choices::kNoCap, 0},
                                     {fit - 1, 0},
                                     {seven_eighths, 0},
                                     {fit - 2, 0},
                                     {p_, 0},
                                     {(3 * p_ + 3) / 4, 0},
                                     {p_ - 1, 0},
                                     {p_ / 2, 0},
                                     {fit - 2, 12}}) {
      add(cap, slope);
    }
    // Below 1F1B's memory the caps that fit fall along the V (V-Min's chunk-0 lifespans
    // shorten by about a third of a period per device): slopes of 1/3, 1/2 and 2/3 per device.
    if (below_1f1b_memory_) {
      for (const int sixths : {2, 3, 4}) {
        add(fit - 1, sixths);
        add(fit - 2, sixths);
      }
    }
    std::vector<Candidate> out;
    for (const int b : bits) {
      for (const auto& [cap, slope] : caps) {
        for (const double share : kWGapShares) {
          out.push_back({b, cap, slope, share});
          if ((b & Choices::kWOnlyInLongGapsBit) == 0) break;  // the share has no effect
        }
      }
    }
    return out;
  }

  // The candidate's choices on every device.
  std::vector<Choices> uniform_choices(const Candidate& candidate) const {
    std::vector<Choices> choices(static_cast<std::size_t>(p_),
                                 Choices::from_bits(candidate.bits, candidate.cap));
    for (std::size_t d = 0; d < choices.size(); ++d) {
      choices[d].w_gap_share = candidate.w_gap_share;
      choices[d].chunk0_in_flight =
          std::max(1, candidate.cap - candidate.slope_sixths * static_cast<int>(d) / 6);
    }
    return choices;
  }

  // The best choices of phase 1 again under each scale of the idle allowance, within the
  // extended budget.
  void allowance_pass() {
    if (!best_) return;
    const std::vector<Choices> base = best_choices_;
    for (const auto& allowance : allowances_) {
      if (done() || spent_ + pass_ops_ > extended_budget_) return;
      std::vector<Choices> trial = base;
      for (std::size_t d = 0; d < trial.size(); ++d)
        trial[d].idle_allowance_ns = allowance[d];
      attempt(trial, bound());
    }
  }

  // The best schedule found, with its score; nothing if every run ran out of memory.
  const std::optional<Score>& best() const { return best_; }
  Schedule& best_schedule() { return best_schedule_; }
  // The schedules that were the best before the best, the latest last (at most kRunnersUp):
  // starts for the multi-start improver.
  std::vector<std::pair<Schedule, TimeNs>>& runners_up() { return runners_up_; }
  static constexpr std::size_t kRunnersUp = 6;

 private:
  bool done() const { return best_ && best_->no_bubble; }  // nothing is shorter
  TimeNs bound() const { return best_ ? best_->max_span_ns : kNever; }

  // One run of the greedy, stopped at `bound_ns`. Keeps the schedule if it is the best.
  std::optional<Score> attempt(const std::vector<Choices>& choices, TimeNs bound_ns) {
    VGreedy greedy(p_, m_, costs_, limit_, choices);
    std::optional<Score> built = greedy.run(bound_ns);
    spent_ += greedy.placed();
    if (built && (!best_ || built->better_than(*best_))) {
      if (best_) {
        runners_up_.emplace_back(std::move(best_schedule_), best_->max_span_ns);
        if (runners_up_.size() > kRunnersUp) runners_up_.erase(runners_up_.begin());
      }
      best_ = built;
      best_choices_ = choices;
      best_schedule_ = std::move(greedy.schedule());
    }
    return built;
  }

  int p_, m_;
  const std::vector<StageCosts>& costs_;
  const std::vector<double>& limit_;
  int chunk0_fit_ = 1;
  std::size_t pass_ops_ = 0;         // ops of one whole run
  std::size_t uniform_budget_ = 0;   // ops phase 1 may place
  std::size_t extended_budget_ = 0;  // ops phase 1 and its extension may place in all
  bool refine_ = false;
  bool below_1f1b_memory_ = false;               // fewer than 2p chunk-0 microbatches fit
  std::size_t refine_ops_ = 0;                   // phase 2's budget
  std::size_t spent_ = 0;                        // ops placed over all runs
  std::vector<std::vector<double>> allowances_;  // per scale, per device
  std::optional<Score> best_;
  Schedule best_schedule_;
  std::vector<Choices> best_choices_;
  std::vector<std::pair<Schedule, TimeNs>> runners_up_;
};

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
    const std::vector<int> device = v_placement(p_);
    busy_.assign(static_cast<std::size_t>(p_), {});
    block_.clear();
    const int stages = 2 * p_;
    TimeNs ready = 0;
    for (int s = 0; s < stages; ++s) {  // the forwards, up the V
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at = place(device[static_cast<std::size_t>(s)], ready, c.f_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::F, s, s < p_ ? 0 : 1, 0}, *at});
      ready = *at + c.f_ns + c.f_out_ns + (s < p_ ? gaps.f0_ns : gaps.f1_ns) +
              (s == p_ - 1 ? gaps.turn_ns : 0);
    }
    ready += gaps.bottom_ns;
    std::vector<TimeNs> b_end(static_cast<std::size_t>(stages));
    for (int s = stages - 1; s >= 0; --s) {  // the backwards, down it
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at = place(device[static_cast<std::size_t>(s)], ready, c.b_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::B, s, s < p_ ? 0 : 1, 0}, *at});
      b_end[static_cast<std::size_t>(s)] = *at + c.b_ns + gaps.w_ns;
      ready = *at + c.b_ns + c.b_out_ns + (s < p_ ? gaps.b0_ns : gaps.b1_ns) +
              (s == p_ ? gaps.b_turn_ns : 0);
    }
    for (int s = stages - 1; s >= 0; --s) {  // each W after its B
      const StageCosts& c = costs_[static_cast<std::size_t>(s)];
      const std::optional<TimeNs> at =
          place(device[static_cast<std::size_t>(s)], b_end[static_cast<std::size_t>(s)], c.w_ns);
      if (!at) return false;
      block_.push_back({Op{OpKind::W, s, s < p_ ? 0 : 1, 0}, *at});
    }
    return true;
  }

  // The block repeated for microbatches 0..m-1: every device's ops in time order. Op o of
  // microbatch k starts at s_o + k T = (q_o + k) T + r_o (q_o, r_o: s_o's quotient and
  // remainder by T), so the order is round by round (q_o + k), by remainder within a round.
  Schedule repeat(int m) const {
    const std::vector<int> device = v_placement(p_);
    struct Entry {
      TimeNs round, remainder;
      Op op;
    };
    std::vector<std::vector<Entry>> per_device(static_cast<std::size_t>(p_));
    for (const auto& [op, start_ns] : block_) {
      per_device[static_cast<std::size_t>(device[static_cast<std::size_t>(op.stage)])].push_back(
          {start_ns / period_ns_, start_ns % period_ns_, op});
    }
    Schedule schedule;
    schedule.num_microbatches = m;
    schedule.stage_device = device;
    schedule.device_ops.resize(static_cast<std::size_t>(p_));
    for (std::size_t d = 0; d < per_device.size(); ++d) {
      auto& entries = per_device[d];
      // Ops that start together (passes that take no time) keep the block's order, which
      // is their inputs' order within a microbatch.
      std::stable_sort(entries.begin(), entries.end(),
                       [](const Entry& a, const Entry& b) { return a.remainder < b.remainder; });
      TimeNs first = kNever, last = 0;
      for (const Entry& e : entries) {
        first = std::min(first, e.round);
        last = std::max(last, e.round);
      }
      auto& ops = schedule.device_ops[d];
      ops.reserve(entries.size() * static_cast<std::size_t>(m));
      for (TimeNs round = first; round <= last + m - 1; ++round) {
        for (const Entry& e : entries) {
          const TimeNs k = round - e.round;
          if (k < 0 || k >= m) continue;
          Op op = e.op;
          op.microbatch = static_cast<std::int32_t>(k);
          ops.push_back(op);
        }
      }
    }
    return schedule;
  }

  // Whether two ops of a device start at the same step of the cycle.
  bool starts_together() const {
    const std::vector<int> device = v_placement(p_);
    std::vector<std::pair<int, TimeNs>> steps;
    for (const auto& [op, start_ns] : block_)
      steps.emplace_back(device[static_cast<std::size_t>(op.stage)], start_ns % period_ns_);
    std::sort(steps.begin(), steps.end());
    return std::adjacent_find(steps.begin(), steps.end()) != steps.end();
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
    const std::vector<int> device = v_placement(p_);
    for (const auto& [op, start_ns] : block_) {
      const int d = device[static_cast<std::size_t>(op.stage)];
      double held = 0;
      for (const auto& [other, other_ns] : block_) {
        if (device[static_cast<std::size_t>(other.stage)] != d) continue;
        const TimeNs diff = start_ns - other_ns;
        const TimeNs repeats =
            diff >= 0 ? diff / period_ns_ : -((-diff + period_ns_ - 1) / period_ns_);
        held += costs_[static_cast<std::size_t>(other.stage)].delta(other.kind) *
                static_cast<double>(repeats);
      }
      if (held > limit[static_cast<std::size_t>(d)] + 1e-9) return false;
    }
    return true;
  }

 private:
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
};

// Ops the engine may simulate justifying each candidate: 30 runs at 2,000 ops, none at
// p = 32, m = 256 (49k ops).
constexpr std::size_t kJustifyOps = 1'200'000'000;

// Pipelines of more ops skip the unit-cost candidates (the block and the order of unit
// costs): their edges weigh little beside m periods, where the real-cost block does as well,
// and their engine runs would take p = 32, m = 256 past its time budget.
constexpr std::size_t kUnitCostOps = 30'000;
// Blocks of each kind v_blocks returns, the shortest first (a span once): the justification
// that follows (VShape::generate) reorders their warm-up and cool-down, after which the
// shortest need not stay the shortest (zb-v, p = 32, m = 57: 480,567 -> 457,801 units, but
// 509,436 -> 457,217). Five rather than one: zb-v 59 -> 61 reference rows at or below, 5 of
// 80 rows' worth more justification time; V-Half and V-Min almost unchanged.
constexpr std::ptrdiff_t kKeptPerKind = 5;
// Ops the engine may simulate timing blocks with waits (v_blocks): 250 blocks at 4,000 ops,
// 40 at 25,000.
constexpr std::size_t kGapOps = 1'000'000;
// The time of one op in the blocks of unit costs.
constexpr TimeNs kUnitNs = 1000;

// The table with every op taking kUnitNs and free transfers; the memory deltas kept.
std::vector<StageCosts> unit_costs(std::vector<StageCosts> costs) {
  for (StageCosts& c : costs) {
    c.f_ns = c.b_ns = c.w_ns = kUnitNs;
    c.f_out_ns = c.b_out_ns = 0;
  }
  return costs;
}

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

// Ops the engine may simulate splicing the candidates (splice.h), for pipelines of at most
// kUnitCostOps ops: about 1,300 splices at 3,000 ops, 130 at 30,000. On the reference sets'
// V-Half and V-Min rows a quarter of it turned 6 rows fewer, four times it none more
// (docs/validation.md).
constexpr std::size_t kSpliceOps = 4'000'000;

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

// Times `laid` repeated m times with `model` if it keeps within `limit`, offers it to `best`
// and adds the run's ops to `spent_ops`; false where it does not keep within the limit.
bool time_block(const VBlock& laid, int m, const std::vector<double>& limit, const CostModel& model,
                Shortest& best, std::size_t& spent_ops) {
  if (!laid.within(m, limit)) return false;
  Schedule schedule = laid.repeat(m);
  const TimeNs span = Engine(schedule, model).run().max_span_ns();
  spent_ops += schedule.num_ops();
  best.offer(std::move(schedule), span);
  return true;
}

// Repeated building blocks within the memory limit, each timed by the engine with the real
// costs; the best of each kind:
//  1. laid out from the real costs, at periods from the shortest T0 to twice it (the shortest
//     that fit first: 3 of them within kTimedOps simulated ops, the first always: 3 up to
//     20k ops, 1 from 30k);
//  2. only for pipelines of at most kUnitCostOps ops, with waits of 0, 1 or 2 steps after
//     the ops of each chain and at the V's top (VBlock::Gaps: 3^6 combinations, the top's
//     wait varying slowest, so that a small budget tries the chains first): of unit costs
//     (every op one unit, free transfers, the real memory) at the shortest period, a step
//     being a unit (the controllable-memory paper builds V-Min and V-Half from such blocks,
//     and a block with slack keeps its shape when the real costs time its order); then of the
//     real costs, a
//     step being T0 / 6, at the periods of 1. Within kGapOps simulated ops in all;
//  3. the unit-cost blocks of 2 squeezed at unit costs (squeeze), within kSqueezeOps.
// Of kinds 1 and 2 the kKeptPerKind shortest (distinct spans), of 3 the shortest; a kind is
// missing when no layout fits. Returned squeezed first, then unit-cost, then real-cost.
std::vector<Timed> v_blocks(int p, int m, const std::vector<StageCosts>& costs,
                            const std::vector<double>& limit, const CostModel& model) {
  constexpr int kSteps = 32;  // periods tried: T0 (1 + j / kSteps), j = 0..kSteps
  // The longer periods add m times their excess to the steady state and rarely win: timing
  // one period instead of 3 changed no zb-v reference row's side (mean 0.9941 either way)
  // and none of 18 spans of zb-v, V-Half and V-Min at p = 24-32, m = 160-300; at p = 32,
  // m = 256 the two extra engine runs took 8-10 of the 20-22 ms of the generation.
  constexpr std::size_t kTimedOps = 60'000;
  constexpr std::size_t kPeriods = 3;
  const std::size_t ops = static_cast<std::size_t>(6 * p) * static_cast<std::size_t>(m);
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
  for (int j = 0;
       j <= kSteps && periods.size() < kPeriods && (periods.empty() || spent + ops <= kTimedOps);
       ++j) {
    const TimeNs period = t0 + t0 * j / kSteps;
    if (block.lay_out(period) && time(block, real)) periods.push_back(period);
  }
  if (ops > kUnitCostOps) {
    real.move_to(out);
    return out;
  }
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  const PerDeviceCostModel unit_model = unit_cost_model(p, costs);
  std::size_t squeeze_left = kSqueezeOps;
  for (int g = 0; g < kGapCombinations && spent + ops <= kGapOps; ++g) {
    if (unit_block.lay_out(unit_block.min_period_ns(), chain_gaps(g, kUnitNs)) &&
        time(unit_block, unit))
      squeeze(unit_block.repeat(m), unit_model, model, limit, squeeze_left, squeezed);
  }
  for (const TimeNs period : periods) {
    for (int g = 1; g < kGapCombinations && spent + ops <= kGapOps; ++g) {
      if (block.lay_out(period, chain_gaps(g, t0 / 6))) time(block, real);
    }
  }
  squeezed.move_to(out);
  unit.move_to(out);
  real.move_to(out);
  return out;
}

// The unit-cost blocks of v_blocks (2.) again with a wait of 1 or 2 steps at the V's bottom or
// at its top on the way down, or both (VBlock::Gaps; 8 turns, each with the 729 waits of the
// chains, the first turn first), within kGapOps simulated ops: the kKeptPerKind shortest,
// shortest first. Only for pipelines of at most kUnitCostOps ops. Why: a wait at a turn moves
// all the later ops of the microbatch to other steps of the cycle, where the waits after each
// op of a chain move each device's ops by a different amount. At unit costs, where 2p is a
// multiple of 6, a device's chunk-0 forward and chunk-1 backward, and its chunk-1 forward and
// chunk-0 backward, fall on the same step of the cycle without it, on every device; a wait of 2
// at the bottom separates them all. (Squeezing them as v_blocks does took more time than all
// the rest of this and turned no reference row.)
std::vector<Timed> turn_blocks(int p, int m, const std::vector<StageCosts>& costs,
                               const std::vector<double>& limit, const CostModel& model) {
  constexpr int kTurns = 3 * 3;  // the bottom's wait varying fastest, then the top's
  const std::vector<StageCosts> unit_table = unit_costs(costs);  // unit_block keeps a reference
  VBlock unit_block(p, unit_table);
  Shortest laid(kKeptPerKind);
  std::size_t spent = 0;
  const std::size_t ops = static_cast<std::size_t>(6 * p) * static_cast<std::size_t>(m);
  for (int turn = 1; turn < kTurns; ++turn) {
    for (int g = 0; g < kGapCombinations && spent + ops <= kGapOps; ++g) {
      VBlock::Gaps gaps = chain_gaps(g, kUnitNs);
      gaps.bottom_ns = turn % kGapSteps * kUnitNs;
      gaps.b_turn_ns = turn / kGapSteps * kUnitNs;
      if (unit_block.lay_out(unit_block.min_period_ns(), gaps))
        time_block(unit_block, m, limit, model, laid, spent);
    }
  }
  std::vector<Timed> out;
  laid.move_to(out);
  return out;
}

// The order the search finds when every op takes the same time and transfers are free (the
// real memory deltas kept, so the order holds the limit), timed with the real costs: an order
// that does not chase the costs, a candidate beside the cost-aware ones.
std::optional<Timed> unit_cost_order(int p, int m, const std::vector<StageCosts>& costs,
                                     const std::vector<double>& limit, const CostModel& model) {
  const std::vector<StageCosts> unit = unit_costs(costs);
  VSearch search(p, m, unit, limit);
  search.run();
  if (!search.best()) return std::nullopt;
  Schedule schedule = std::move(search.best_schedule());
  const TimeNs span = Engine(schedule, model).run().max_span_ns();
  return std::pair{std::move(schedule), span};
}

// The improver's budget for a V schedule of `ops` ops: improve_budget_ops, which falls to a run
// or two above 12,000 ops (zb-auto's time at p = 32, m = 128 needs that), but from there up to
// kUnitCostOps (the pipelines that also get the unit-cost candidates) kVImproveScale / ops:
// about 80 runs at 12,000 ops, 13 at 30,000; nothing more at p = 32, m = 256 (49k ops). On the
// reference sets' large rows (p = 24-32, m = 81-120) that gains 0.1-0.4% on 10 of 18 rows
// (zb-v 61 -> 62 at or below the reference, 63 -> 65 within 0.1%); zb-v at p = 32, m = 120
// takes 0.59 s instead of 0.37 (the authors' Python: 0.71 s). Five times more changed no row.
constexpr std::size_t kVImproveFromOps = 12'000;
constexpr std::size_t kVImproveScale = 12'000'000'000;
std::size_t v_improve_budget_ops(std::size_t ops) {
  const std::size_t base = improve_budget_ops(ops);
  if (ops <= kVImproveFromOps || ops > kUnitCostOps) return base;
  return std::max(base, kVImproveScale / ops);
}

// The three V schedules differ in their default memory limit (in whole-stage M_B).
struct VShapeKind {
  const char* name;
  const char* description;
  double (*default_limit)(int p);  // in whole-stage M_B
};

double zb_v_limit(int p) {
  return p;
}
double v_half_limit(int p) {
  return (p + 2) / 2.0;
}
double v_min_limit(int p) {
  return (p + 4) / 3;
}

constexpr VShapeKind kZbV{"zb-v",
                          "V-shaped zero bubble: 2 chunks per device in a V, W fills the "
                          "bubbles; peak <= --mem-limit (default p*M_B)",
                          zb_v_limit};
constexpr VShapeKind kVHalf{"v-half",
                            "V-shaped, half of 1F1B's activation memory: peak (p+2)/2*M_B "
                            "(or --mem-limit)",
                            v_half_limit};
constexpr VShapeKind kVMin{"v-min",
                           "V-shaped, a third of 1F1B's activation memory: peak "
                           "floor((p+4)/3)*M_B (or --mem-limit)",
                           v_min_limit};

class VShape final : public ScheduleGenerator {
 public:
  explicit VShape(const VShapeKind& kind) : kind_(kind) {}
  std::string_view name() const override { return kind_.name; }
  std::string_view description() const override { return kind_.description; }
  std::string_view parameters() const override { return "p >= 1, m >= 1, v = 2"; }
  int default_chunks() const override { return 2; }
  bool takes_mem_limit() const override { return true; }

  std::vector<double> exact_limits(const ScheduleParams& params) const override {
    return limits(params, *params.costs);
  }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 2);
    const int p = params.pp, m = params.microbatches;
    // Unit costs when none are given: T_F = T_B = T_W, M_B = 1, M_W = 0.5 per whole stage.
    const PerDeviceCostModel unit =
        PerDeviceCostModel::uniform(DeviceCosts{2000, 2000, 2000, 0, 1.0, 0.5}, p, 2);
    const CostModel& costs = params.costs != nullptr ? *params.costs : unit;

    const std::vector<double> limit = limits(params, costs);

    const std::vector<StageCosts> stage_cost = stage_costs(v_placement(p), costs);
    VSearch search(p, m, stage_cost, limit);
    search.run();
    std::vector<Timed> candidates, turned;
    if (search.best())
      candidates.emplace_back(std::move(search.best_schedule()), search.best()->max_span_ns);
    // The search's earlier bests: starts worth having where they are justified below.
    const std::size_t ops = 6 * static_cast<std::size_t>(p) * static_cast<std::size_t>(m);
    if (params.improve && kJustifyOps / ops >= 2 * ops) {
      for (auto& runner_up : search.runners_up())
        candidates.push_back(std::move(runner_up));
    }
    if (!search.best() || !search.best()->no_bubble) {
      for (Timed& block : v_blocks(p, m, stage_cost, limit, costs))
        candidates.push_back(std::move(block));
      std::optional<Timed> order;
      if (ops <= kUnitCostOps) order = unit_cost_order(p, m, stage_cost, limit, costs);
      if (order) candidates.push_back(std::move(*order));
      if (ops <= kUnitCostOps) turned = turn_blocks(p, m, stage_cost, limit, costs);
    }
    if (candidates.empty()) {
      throw InvalidArgument("schedule '" + std::string(name()) +
                            "': no schedule found within the memory limit " +
                            format_number(limit.front()) + "; try a limit closer to p*M_B");
    }
    for (const Timed& candidate : candidates)
      check(candidate.first, stage_cost, limit, costs);
    for (const Timed& candidate : turned)
      check(candidate.first, stage_cost, limit, costs);
    // Each candidate justified (improve.h, without local moves: a few engine runs), as a
    // block's order squeezed at its ends can beat a greedy's that was shorter before.
    auto justify_candidate = [&](Timed& candidate) {
      ImproveResult justified = improve_schedule(std::move(candidate.first), costs,
                                                 ImproveLimits{limit, kJustifyOps / ops, false});
      candidate.first = std::move(justified.schedule);  // as it was without a run
      if (justified.runs > 0) candidate.second = justified.after_ns;
    };
    if (params.improve) {
      if (candidates.size() > 1) {
        for (Timed& candidate : candidates)
          justify_candidate(candidate);
      }
      for (Timed& candidate : turned)
        justify_candidate(candidate);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Timed& a, const Timed& b) { return a.second < b.second; });
    // Splices of the candidates (kSpliceOps). Where the improver screens several starts, the
    // shortest candidate stays its first start, improved with the whole budget as before, and
    // the splices are further starts: the result is never longer than without them (a splice
    // first, shorter to start with, ended longer at p = 4, m = 8 of V-Min: 539.2 against 536.6).
    if (params.improve && ops <= kUnitCostOps) {
      const std::size_t before = candidates.size();
      splice_best(candidates, costs, limit, kSpliceOps);
      const auto found = static_cast<std::ptrdiff_t>(candidates.size() - before);
      if (found > 0 && screens_starts(ops)) {
        std::rotate(candidates.begin(), candidates.begin() + found, candidates.begin() + found + 1);
      }
    }
    // The blocks with waits at the turns compete with the result as they are (justified), so
    // that no result is longer than without them. Spliced with the others they changed which
    // splices the budget buys (V-Half lost 3 of its 36 reference rows); as further starts,
    // which start the improver took on with its whole budget (zb-v, p = 32, m = 100: 594.8
    // instead of 584.7 ms). Real-cost blocks with such waits turned no reference row.
    std::optional<Timed> turn;
    for (Timed& candidate : turned) {
      if (!turn || candidate.second < turn->second) turn = std::move(candidate);
    }
    Timed result;
    if (params.improve) {
      const TimeNs first_ns = candidates.front().second;
      std::vector<Schedule> starts;
      for (Timed& candidate : candidates)
        starts.push_back(std::move(candidate.first));
      const std::size_t budget = v_improve_budget_ops(starts.front().num_ops());
      ImproveResult improved =
          improve_best_of(std::move(starts), costs, ImproveLimits{limit, budget});
      result = {std::move(improved.schedule), improved.runs > 0 ? improved.after_ns : first_ns};
    } else {
      result = std::move(candidates.front());
    }
    if (turn && turn->second < result.second) return std::move(turn->first);
    return std::move(result.first);
  }

  // The candidates were timed and sized from the per-stage table. Checking the table against
  // the cost model op by op keeps their timing the engine's and their peaks within the limit,
  // at a fraction of the cost of running the engine again.
  static void check(const Schedule& schedule, const std::vector<StageCosts>& stage_cost,
                    const std::vector<double>& limit, const CostModel& costs) {
    for (std::size_t i = 0; i < schedule.device_ops.size(); ++i) {
      const int d = static_cast<int>(i);
      double held = 0;
      for (const Op& op : schedule.device_ops[i]) {
        const StageCosts& c = stage_cost[static_cast<std::size_t>(op.stage)];
        const double delta = costs.activation_delta(op, d);
        BUBBLESIM_CHECK(
            costs.duration_ns(op, d) == c.duration_ns(op.kind) && delta == c.delta(op.kind),
            "the V greedy assumes costs that do not depend on the microbatch; " + to_string(op) +
                " differs");
        held += delta;
        BUBBLESIM_CHECK(held <= limit[i] + 1e-9,
                        "the V greedy exceeded its memory limit on device " + std::to_string(d));
      }
    }
  }

 private:
  // Per device: --mem-limit, else the kind's multiple of a whole stage's M_B (both chunks' F).
  std::vector<double> limits(const ScheduleParams& params, const CostModel& costs) const {
    std::vector<double> limit;
    for (int d = 0; d < params.pp; ++d) {
      const double m_b = 2 * costs.activation_delta(Op{OpKind::F, d, 0, 0}, d);
      const double l =
          params.mem_limit > 0 ? params.mem_limit : kind_.default_limit(params.pp) * m_b;
      if (l + 1e-9 < m_b) {
        throw SettingError("mem-limit", "schedule '" + std::string(name()) +
                                            "': " + format_number(l) +
                                            " is below what one microbatch needs on a device, "
                                            "M_B = " +
                                            format_number(m_b));
      }
      limit.push_back(l);
    }
    return limit;
  }

  const VShapeKind& kind_;
};

}  // namespace

void add_v_shape_schedules(ScheduleRegistry& registry) {
  registry.add(std::make_unique<VShape>(kZbV));
  registry.add(std::make_unique<VShape>(kVHalf));
  registry.add(std::make_unique<VShape>(kVMin));
}

}  // namespace bubblesim::sim
