#include "sim/schedules/v_greedy.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>

#include "sim/device_events.h"
#include "sim/error.h"
#include "sim/placement.h"

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
  // After the device's first B, chunk1_forward_first turned round: the warm-up's preference
  // between two ready F is not the steady state's. With it the search (phase 3 included) gives
  // zb-v's worst reference row then (p = 12, m = 44, F 851 per chunk) the authors' cost exactly
  // (199,586, against 202,545), and 70 -> 73 zb-v rows at or below theirs (docs/validation.md).
  bool flip_forwards_after_first_b = false;
  // Choices turned round once the device has started all its chunk-0 forwards (its tail: from
  // then on its chunk-0 B's come back from below while its chunk-1 ops feed the devices above,
  // which the other rules weigh as in the steady state): a set of the kTail* flags. Phase 1
  // varies them as two more bits, and the best choices of phase 1 run again with each set
  // (VSearch::tail_pass). On the zb-v reference rows: 73 -> 74 at or below the authors' cost,
  // the worst 1.0034 -> 1.0029 (p = 32, m = 92: raw 603,905 -> 603,377), V-Min's mean ratio
  // 0.9838 -> 0.9837 (docs/validation.md).
  int tail_flips = 0;
  static constexpr int kTailBackward = 1;  // lower_stage_backward_first
  static constexpr int kTailCommit = 2;    // commit
  // With w_only_in_long_gaps: 1 fills only gaps a W fits in whole; 1/2 also those where the
  // idle it fills outweighs the delay it causes (at p = 32, m = 117 a device waiting 859
  // units for a chunk-1 forward beside 891-unit W's idled through the steady state).
  double w_gap_share = 1.0;
  // A device that would idle past this much in all (since its first op) starts a pending W
  // instead of waiting, whatever the rules above say (idle_allowance() sets it).
  double idle_allowance_ns = kNoAllowance;

  static constexpr double kNoAllowance = 1e300;

  static constexpr int kNoCap = 1 << 30;
  // The eleven yes/no choices and the two tail flips from the bits of `bits` (0 is the
  // defaults above).
  static constexpr int kCombinations = 8192;
  // The first five bits: the choices phase 2 varies per device (the later ones are kept).
  static constexpr int kDeviceCombinations = 32;
  static constexpr int kWOnlyInLongGapsBit = 16;
  Choices with_rules_of(const Choices& other) const {
    Choices out = *this;
    out.alternate = other.alternate;
    out.lookahead = other.lookahead;
    out.feed = other.feed;
    out.commit = other.commit;
    out.tight_w = other.tight_w;
    out.flip_forwards_after_first_b = other.flip_forwards_after_first_b;
    out.tail_flips = other.tail_flips;
    out.idle_allowance_ns = other.idle_allowance_ns;
    out.w_gap_share = other.w_gap_share;
    return out;
  }
  static Choices from_bits(int bits, int cap) {
    return Choices{
        (bits & 1) != 0,
        (bits & 2) != 0,
        (bits & 4) == 0,
        (bits & 8) == 0,
        (bits & kWOnlyInLongGapsBit) != 0,
        cap,
        (bits & 32) != 0,
        (bits & 64) != 0,
        (bits & 128) != 0,
        (bits & 256) != 0,
        (bits & 512) != 0,
        (bits & 1024) != 0,
        ((bits & 2048) != 0 ? kTailBackward : 0) | ((bits & 4096) != 0 ? kTailCommit : 0)};
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

// Decisions forced against the rules (VSearch's phase 3): per device, per position of its
// order, 0 (the rules decide) or one of the codes below. A forced op that cannot run there (no
// W pending, no F or B allowed by the memory and the cap) leaves the decision to the rules.
using Overrides = std::vector<std::vector<signed char>>;
constexpr int kForceW = 1;  // a pending W, now
constexpr int kForceB = 2;  // the B the rules prefer, waiting for its input if need be
constexpr int kForceF = 3;  // the F the rules prefer, likewise
constexpr int kNoW = 4;     // whatever the rules choose but a W
constexpr int kOtherF = 5;  // the F of the stage the rules do not prefer, where it can start
constexpr int kForceCodes = 4;     // the codes tried below 1F1B's memory (VSearch::descend)
constexpr int kForceCodesAll = 5;  // ... and at or above it

// Whether forcing `code` where the rules ran an op of `kind` can change the run.
constexpr bool changes(int code, OpKind kind) {
  switch (code) {
    case kForceW: return kind != OpKind::W;
    case kForceB: return kind != OpKind::B;
    case kForceF: return kind != OpKind::F;
    case kOtherF:
      return kind == OpKind::F;
    default: return kind == OpKind::W;
  }
}

// Builds one V schedule by simulating: see v_shape.h. Returns nothing when the memory limit
// stops every device before all ops are placed.
class VGreedy {
 public:
  VGreedy(int p, int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit,
          const std::vector<Choices>& choices, const Overrides* overrides = nullptr)
      : p_(p),
        m_(m),
        costs_(costs),
        choices_(choices),
        overrides_(overrides),
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

  // A run that differs from a base run only from one decision on (op `position` of `device`)
  // may stop where it reaches the base run's state again: `base` holds copies of that run's
  // state every `every` ops placed, the first before any.
  struct Rejoin {
    const std::vector<VGreedy>* base = nullptr;
    std::size_t every = 1;
    std::size_t device = 0;
    std::size_t position = 0;
  };

  // Gives up (returns nothing) as soon as a device's span must exceed `bound_ns`: what it has
  // spent plus the work it has left. The schedule is left in schedule(). With `snapshots`,
  // keeps a copy of the state there every `every` ops placed (the first before any): a run
  // that differs from this one only in decisions taken after a copy resumes from it.
  std::optional<Score> run(TimeNs bound_ns, std::size_t every = 0,
                           std::vector<VGreedy>* snapshots = nullptr,
                           const Rejoin* rejoin = nullptr) {
    for (int d = 0; d < p_; ++d)
      replan(d);
    return resume(bound_ns, every, snapshots, rejoin);
  }

  // Places the ops left, from the state as it is (a snapshot's, or after run()'s first plans),
  // keeping copies as run() does. With `rejoin`, stops (returns nothing, rejoined() true) at
  // the first copy of the base run's state that this run's state equals once it has placed
  // the op of its own decision: from there the base run placed the ops left as this run would.
  std::optional<Score> resume(TimeNs bound_ns, std::size_t every = 0,
                              std::vector<VGreedy>* snapshots = nullptr,
                              const Rejoin* rejoin = nullptr) {
    while (events_.next_time() != kNever) {
      if (snapshots != nullptr && placed_ % every == 0) snapshots->push_back(*this);
      if (rejoin != nullptr && placed_ % rejoin->every == 0 &&
          placed_on(rejoin->device) > rejoin->position &&
          placed_ / rejoin->every < rejoin->base->size() &&
          same_future((*rejoin->base)[placed_ / rejoin->every])) {
        rejoined_ = true;
        return std::nullopt;
      }
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

  // The decisions forced from now on (the caller keeps them alive while the run goes).
  void force(const Overrides* overrides) { overrides_ = overrides; }
  // Ops placed on each device so far.
  std::size_t placed_on(std::size_t device) const { return schedule_.device_ops[device].size(); }

  std::size_t placed() const { return placed_; }
  Schedule& schedule() { return schedule_; }
  // Whether resume() stopped at the base run's state (Rejoin).
  bool rejoined() const { return rejoined_; }
  // The largest activation memory `device` held so far.
  double peak_on(std::size_t device) const { return peak_[device]; }

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
    const int tail_flips = cl.f == m_ ? choices.tail_flips : 0;  // in the tail: the flips
    const bool commit = choices.commit != ((tail_flips & Choices::kTailCommit) != 0);

    // B: the earliest of the two stages' next B that fits, ties to the preferred stage.
    const TimeNs bl = held + kl.b_delta <= room ? start(free, b_ready_[index(low, cl.b)]) : kNever;
    const TimeNs bh = held + kh.b_delta <= room ? start(free, b_ready_[index(high, ch.b)]) : kNever;
    const bool lower_first =
        choices.lower_stage_backward_first != ((tail_flips & Choices::kTailBackward) != 0);
    bool b_high = lower_first ? bh < bl : bh <= bl && bh != kNever;
    if (commit && bh != kNever) b_high = true;
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
    const bool chunk1_first =
        choices.chunk1_forward_first != (choices.flip_forwards_after_first_b && seen_b_[i] != 0);
    bool f_high = chunk1_first ? fh <= fl && fh != kNever : fh < fl;
    if (choices.lookahead && fh != kNever && fl != kNever) {
      f_high = chunk1_first ? fh < fl + kl.f_ns : !(fl < fh + kh.f_ns);
    }
    if (commit && fh != kNever) f_high = true;
    Pick f = f_high ? Pick{fh, OpKind::F, high} : Pick{fl, OpKind::F, low};
    // W: the preferred stage's pending one first.
    const bool wl_pending = cl.w < cl.b, wh_pending = ch.w < ch.b;
    const int w_stage =
        (choices.lower_stage_backward_first ? wl_pending : !wh_pending) ? low : high;
    const int forced = forced_at(i);
    bool no_w = false;
    if (forced != 0) {
      if (forced == kForceW && (wl_pending || wh_pending)) return Pick{free, OpKind::W, w_stage};
      if (forced == kForceB && b.start_ns != kNever) return b;
      if (forced == kForceF && f.start_ns != kNever) return f;
      if (forced == kOtherF) {
        const Pick other = f_high ? Pick{fl, OpKind::F, low} : Pick{fh, OpKind::F, high};
        if (other.start_ns != kNever) return other;
      }
      no_w = forced == kNoW;
    }
    if (choices.alternate && seen_b_[i]) {
      const bool f_left = cl.f < m_ || ch.f < m_;
      const bool b_left = cl.b < m_ || ch.b < m_;
      if (last_f_[i] && b_left) {
        f.start_ns = kNever;
      } else if (!last_f_[i] && f_left && !memory_bound) {
        b.start_ns = kNever;
      }
    }

    if (!no_w && choices.tight_w && (wl_pending || wh_pending) &&
        held + 2 * std::max(kl.f_delta, kh.f_delta) > room) {
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
    if (!no_w && (wl_pending || wh_pending)) {
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

  // The decision forced on device i at its next position (0: none).
  int forced_at(std::size_t i) const {
    if (overrides_ == nullptr) return 0;
    const auto& row = (*overrides_)[i];
    const std::size_t pos = schedule_.device_ops[i].size();
    return pos < row.size() ? row[pos] : 0;
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

  // Whether every later decision is the same as `other`'s: the same ops placed on every
  // stage, and the same device times, plans, inputs' ready times, memory held and rule state
  // (what choose() reads; the work done and left follow from the ops placed). Peaks and the
  // order so far may differ. Held memory is compared exactly: sums in another order that round
  // differently only miss a stop, never make a wrong one.
  bool same_future(const VGreedy& other) const {
    if (placed_ != other.placed_ || free_at_ != other.free_at_ ||
        first_start_ != other.first_start_ || held_ != other.held_ || last_f_ != other.last_f_ ||
        seen_b_ != other.seen_b_) {
      return false;
    }
    for (std::size_t s = 0; s < next_.size(); ++s) {
      const Counters &a = next_[s], &b = other.next_[s];
      if (a.f != b.f || a.b != b.b || a.w != b.w) return false;
    }
    for (std::size_t d = 0; d < picks_.size(); ++d) {
      const Pick &a = picks_[d], &b = other.picks_[d];
      if (a.start_ns != b.start_ns || a.kind != b.kind || a.stage != b.stage) return false;
    }
    return f_ready_ == other.f_ready_ && b_ready_ == other.b_ready_;
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
        choices_[i].lookahead || forced_at(i) != 0) {
      replan(d);
    }
  }

  int p_, m_;
  const std::vector<StageCosts>& costs_;  // per stage
  const std::vector<Choices>& choices_;   // per device
  const Overrides* overrides_;            // per device, per position: a forced decision
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
  bool rejoined_ = false;
  Schedule schedule_;
};

// The search over the greedy's choices (v_shape.h), in three phases (the third is
// descend_decisions: single decisions forced against the rules):
//  1. The same choices on every device: the combinations of the yes/no choices, each under
//     a few caps on chunk-0 microbatches in flight (the same on every device, or falling by
//     a fixed step per device: 1 or 2, and below 1F1B's memory 1/3, 1/2 or 2/3, with which
//     V-Min at p = 32, m = 64 takes 505 units at unit cost against the blocks' and the
//     authors' 507), every cap in turn for a combination, the most promising first. Each
//     run is cut short once it must be slower than the best so far. The phase stops at zero
//     bubble, or when a whole run would take the ops simulated past kUniformOps (the
//     anchors always go: one with transfers, two without): small pipelines try every
//     candidate, large ones (p = 32, m = 256) just those.
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
//     Its runs use the cores (refine_round), with the result of one run after another.
class VSearch {
 public:
  static constexpr std::size_t kUniformOps = 1'000'000;
  // Phase 1's budget shrinks with the square of the size: kUniformScale / ops of a run.
  static constexpr std::size_t kUniformScale = 4'000'000'000;
  // Its extension (the allowance runs, the tail flips, then the candidates not yet run) shrinks
  // with the cube: kExtendedScale / ops^2, in all, at most kExtendedOps. It adds nothing from
  // p = 32, m = 256 (49k ops a run; the benchmark's size) on, where the cube falls below the
  // square, and about 3 times phase 1's runs at p = 32, m = 88 (41 runs instead of 14), 4 times
  // below 5k ops (4M ops, about 0.3 s).
  static constexpr std::size_t kExtendedOps = 2'000'000;
  static constexpr std::size_t kExtendedScale = 200'000'000'000'000;
  static constexpr std::size_t kRefineOps = 5'000'000;
  static constexpr std::size_t kTightRefineOps = 25'000'000;
  static constexpr std::size_t kStarts = 4;        // results of phase 1 that phase 2 starts from
  static constexpr std::size_t kSlopedStarts = 2;
  // Phase 3's budget: kDecisionOps up to runs of kDecisionFullOps ops, then falling with the
  // fourth power of the size (p = 32, m = 92: 1M ops; none from p = 32, m = 200 on, where it
  // pays for less than two runs); its second scan (the last decisions first) gets what the
  // first leaves and 1 / kLastFirstShare of the budget more; copies of the state kept per run.
  static constexpr std::size_t kDecisionOps = 10'000'000;
  static constexpr double kDecisionFullOps = 10'000;
  static constexpr std::size_t kLastFirstShare = 4;
  static constexpr std::size_t kSnapshots = 32;  // ... and of its runs with sloped caps, after
  static constexpr int kMaxFit = 1 << 20;          // chunk0_fit_ when everything fits
  // The scales of the idle allowance (idle_allowance()) that the best choices of phase 1 are
  // run again with, the most often best first.
  static constexpr double kAllowanceScales[] = {1.2, 1.0, 1.5};
  // The shares of a W's length a gap must reach for the W to fill it (Choices::w_gap_share),
  // tried in turn for each combination with w_only_in_long_gaps and each cap.
  static constexpr double kWGapShares[] = {1.0, 0.5};

  // The proxy (transfer_from_proxy): a search of kProxyMicrobatchesPerDevice * p microbatches
  // within kProxyOps, phase 1 and its extension only, for pipelines whose own phase 1 pays for
  // fewer than kFewRuns runs (from about 32,000 ops on), where the proxy pays for at least
  // kProxyRuns and has at most half as many microbatches. Where phase 1 paid for up to 16 runs
  // (from 16,000 ops), the proxy's choices changed 2 of 30 random pipelines of 15,000-30,000
  // ops, by the improver's start more than by themselves: one 0.04% shorter, one 0.06% longer.
  static constexpr std::size_t kProxyOps = 200'000;
  static constexpr int kProxyMicrobatchesPerDevice = 6;
  static constexpr std::size_t kProxyRuns = 16;
  static constexpr std::size_t kFewRuns = 4;

  VSearch(int p, int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit,
          const VGreedyOptions& options, bool proxy = false)
      : p_(p), m_(m), costs_(costs), limit_(limit), options_(options), proxy_(proxy) {
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
    if (proxy_) {
      uniform_budget_ = extended_budget_ = kProxyOps;
      refine_ = false;
      options_.descend_decisions = false;
    }
    for (const double scale : kAllowanceScales)
      allowances_.push_back(idle_allowance(p, m, costs, limit, scale));
  }

  void run() {
    transfer_from_proxy();
    std::vector<std::pair<Score, std::vector<Choices>>> starts, sloped_starts;
    const int seven_eighths = (7 * chunk0_fit_ + 4) / 8;
    const bool free_transfers = std::all_of(costs_.begin(), costs_.end(), [](const StageCosts& c) {
      return c.f_out_ns == 0 && c.b_out_ns == 0;
    });
    // The anchors (the first of the list: candidates()) run whatever the budget: at unit costs,
    // p = 32, m = 240, where the budget paid for one run, the first alone left 0.0787 of
    // bubble at V-Min's peak, against 0.0588 with both, at V-Half's own.
    CandidateOrder order = candidates(free_transfers, seven_eighths);
    std::optional<Candidate> next = order.next();
    for (std::size_t taken = 0; next; next = order.next(), ++taken) {
      if (done() || (best_ && taken >= order.anchors() && spent_ + pass_ops_ > uniform_budget_))
        break;
      const std::vector<Choices> choices = uniform_choices(*next);
      // Phase 2 starts from results that need not be the best: they must run to the end.
      std::optional<Score> built = attempt(choices, refine_ ? kNever : bound());
      if (!built || !refine_) continue;
      // Phase 2 starts from the plain greedy's best runs (no alternation, lookahead or
      // feeding): per-device choices matter most where the plain rules fall short (V-Min's
      // building block). The best runs with the same cap on every device first, then the
      // best with sloped caps.
      if (next->bits >= Choices::kDeviceCombinations) continue;
      auto& kept = next->slope_sixths == 0 ? starts : sloped_starts;
      kept.emplace_back(*built, choices);
      std::sort(kept.begin(), kept.end(),
                [](const auto& a, const auto& b) { return a.first.better_than(b.first); });
      if (kept.size() > (next->slope_sixths == 0 ? kStarts : kSlopedStarts)) kept.pop_back();
    }
    // Again from the best the cap pass finds, while it finds one (each pass stops with the
    // budget).
    for (bool again = true; again;) {
      allowance_pass();
      tail_pass();
      const std::optional<Score> before = best_;
      cap_pass();
      again = before && best_->better_than(*before);
    }
    for (; next && !done() && spent_ + pass_ops_ <= extended_budget_; next = order.next())
      attempt(uniform_choices(*next), bound());
    for (auto& sloped : sloped_starts)
      starts.push_back(std::move(sloped));
    const std::size_t refine_end = spent_ + refine_ops_;
    for (auto& [current, choices] : starts) {
      for (bool improved = true; improved && !done();) {
        const std::optional<bool> round = refine_round(current, choices, refine_end);
        if (!round) break;  // the budget is spent
        improved = *round;
      }
    }
    descend_decisions();
  }

  // Where phase 1 pays for few runs (fewer than kFewRuns), the greedy's choices are searched
  // on a proxy: the same pipeline with kProxyMicrobatchesPerDevice * p microbatches (past the
  // warm-up, which the V fills in about 2p), whose runs are cheap enough for kProxyRuns of them
  // or more within kProxyOps; its best choices then run here once (the idle allowance at this
  // m, of the proxy's scale). The rules are the same at every microbatch, so choices that keep
  // the proxy's steady state short keep this one's: V-Min at p = 8, m = 700 (F, B, W = 2, 2.4,
  // 1.2, comm 0.1) added 7.7 ms a microbatch with the anchors' choices, 6.3 with the proxy's,
  // as m = 48-96 do with their whole search. The proxy's runs are counted apart from phase
  // 1's budget (ops_placed includes them).
  void transfer_from_proxy() {
    const int proxy_m = kProxyMicrobatchesPerDevice * p_;
    const auto proxy_ops = static_cast<std::size_t>(6 * p_) * static_cast<std::size_t>(proxy_m);
    if (proxy_ || uniform_budget_ >= kFewRuns * pass_ops_ || 2 * proxy_m > m_ ||
        kProxyRuns * proxy_ops > kProxyOps) {
      return;
    }
    VSearch proxy(p_, proxy_m, costs_, limit_, options_, true);
    proxy.run();
    proxy_spent_ += proxy.ops_placed();
    if (!proxy.best_) return;
    std::vector<Choices> choices = proxy.best_choices_;
    for (std::size_t d = 0; d < choices.size(); ++d) {
      double& allowance = choices[d].idle_allowance_ns;
      if (allowance == Choices::kNoAllowance) continue;
      for (std::size_t k = 0; k < allowances_.size(); ++k) {
        if (proxy.allowances_[k][d] == allowance) {
          allowance = allowances_[k][d];
          break;
        }
      }
    }
    attempt(choices, kNever);
  }

  // One round of phase 2 from `choices` (scored `current`): every device in turn tries every
  // cap and combination with the others fixed, keeping each change that improves. Whether one
  // did; nothing once the budget (up to `refine_end` ops placed) is spent or nothing is
  // shorter.
  // The trials run a batch at a time on the cores (oneTBB), each against the current choices,
  // and are then taken in order, each under the budget left, up to the first that improves:
  // the batch's later trials are dropped and the next batch starts after it. So the result is
  // what one trial after another would give, on any number of cores. Improvements come in
  // runs, so the batch after one is a single trial, doubling while none improves (up to
  // batch_size_): few trials dropped where the cores are busy anyway (validate's rows).
  std::optional<bool> refine_round(Score& current, std::vector<Choices>& choices,
                                   std::size_t refine_end) {
    const std::size_t per_device =
        static_cast<std::size_t>(chunk0_fit_) * Choices::kDeviceCombinations;
    const std::size_t round = choices.size() * per_device;
    auto make = [&](std::size_t next) -> std::optional<std::vector<Choices>> {
      const std::size_t d = next / per_device;
      const auto cap = static_cast<int>(next % per_device / Choices::kDeviceCombinations) + 1;
      const auto bits = static_cast<int>(next % Choices::kDeviceCombinations);
      std::vector<Choices> trial = choices;
      trial[d] = Choices::from_bits(bits, cap).with_rules_of(choices[d]);
      if (trial[d] == choices[d]) return std::nullopt;
      return trial;
    };
    auto execute = [&](const std::vector<Choices>& trial) {
      return run_greedy(trial, current.max_span_ns);
    };
    bool improved = false;
    for (std::size_t next = 0; next < round;) {
      auto found = first_better<std::vector<Choices>>(
          next, round, refine_end, current, make, execute,
          [](const std::vector<Choices>& trial) -> const std::vector<Choices>& { return trial; },
          [](const Score& run, const Score& now) { return run.better_than(now); });
      if (!found) return std::nullopt;
      if (found->index == round) break;
      current = found->score;
      choices = std::move(found->input);
      improved = true;
      next = found->index + 1;
    }
    return improved;
  }

  // Phase 3, the decision descent, within its budget (kDecisionOps, falling with the size):
  // from the best run, single decisions of the greedy are forced against its rules, one
  // device and one position of its order at a time (a W instead of the F or B the rules ran
  // there; the F or the B instead of a W, or instead of each other, waiting for its input if
  // need be; no W where the rules ran one; at or above 1F1B's memory also the other stage's F
  // where the rules ran an F), keeping each change that shortens the run (the
  // later decisions follow the rules again: they adapt to the forced one), until a whole round
  // over the positions improves nothing or the budget is spent. A trial resumes from a copy
  // of the run's state taken before the forced decision (kSnapshots per run): forcing a late
  // decision costs only the ops after it; a forced W where none is pending is not tried. A
  // trial whose state equals one of the base run's copies again stops there and takes the
  // base run's rest (VGreedy::Rejoin, BaseRun): 60% of the trials at p = 16, m = 55, 1,080
  // ops per trial instead of 2,870, so that the budget reaches the later devices.
  //
  // Two scans, each a descent from the same start (the best run before phase 3): first
  // device by device from device 0, within the budget; then the last decision of every device
  // first, back to the first ones, with what the first scan left and a quarter of the budget
  // more. The second's result replaces the first's only where shorter (not on a tie-break),
  // and the first's then stays a runner-up (a start for the improver). A descent that keeps
  // the first change that shortens the run ends where its path leads: either scan alone
  // leaves rows the other reaches (p = 16, m = 55: the authors' cost exactly only from the
  // last decisions, 0.16% above it from the first; in that order alone 22 zb-v reference rows
  // ended longer); both give zb-v 78 rows at or below the authors' cost and none more than
  // 0.1% above (docs/validation.md).
  //
  // Where memory binds (zb-v's default limit on large pipelines) the rules hold W's back too
  // long: most forced decisions kept are a W where the rules ran an F or B, and zb-v gained 3
  // reference rows (docs/validation.md). The other stage's F: zb-v 74 -> 75 rows (p = 16,
  // m = 41 at the authors' cost exactly), mean 0.9914 -> 0.9912; below 1F1B's memory it made
  // the raw results shorter too, but the improver, started from them, ended longer on two
  // V-Half rows (p = 8, m = 27: 1.0021 of the authors' cost against 0.9940), so it is tried
  // only where the V's chunk-0 queue fits (zb-v's default limit and above).
  // The search's best before it stays a runner-up.
  void descend_decisions() {
    const double falling = std::pow(kDecisionFullOps / static_cast<double>(pass_ops_), 4);
    const auto budget = static_cast<std::size_t>(static_cast<double>(kDecisionOps) *
                                                 std::min(1.0, falling));
    if (!options_.descend_decisions || !best_ || done() || budget < 2 * pass_ops_) return;
    const std::size_t end = spent_ + budget;
    const std::vector<Choices> choices = best_choices_;
    // The runners-up stay those of phases 1-2 and their best (diverse starts for the improver,
    // rather than the descent's steps, each one decision from the next).
    auto runners_up = runners_up_;
    add_runner_up(runners_up, best_schedule_, best_->max_span_ns);
    const Score before = *best_;
    descend(choices, end, Scan::kDeviceMajor, before);
    const Score first = *best_;
    Schedule first_schedule = best_schedule_;
    auto first_runners_up = runners_up_;
    descend(choices, end + budget / kLastFirstShare, Scan::kLastFirst, before);
    if (best_->max_span_ns < first.max_span_ns) {
      if (first.better_than(before))
        add_runner_up(runners_up, std::move(first_schedule), first.max_span_ns);
    } else {  // as the first scan left it (commit may have replaced the best on a tie-break)
      best_ = first;
      best_schedule_ = std::move(first_schedule);
      runners_up_ = std::move(first_runners_up);
    }
    if (best_->better_than(before)) runners_up_ = std::move(runners_up);
  }

  // The order of phase 3's trials over the decisions of a run: device after device from
  // device 0, each from its first decision; or the last decision of every device first, then
  // the one before it on every device, and so on.
  enum class Scan { kDeviceMajor, kLastFirst };

  // One descent of phase 3 from the run of `choices` with nothing forced (`current`: its
  // score, the best's before phase 3), until `end` in simulated ops.
  void descend(const std::vector<Choices>& choices, std::size_t end, Scan scan, Score current) {
    Overrides forced(static_cast<std::size_t>(p_),
                     std::vector<signed char>(static_cast<std::size_t>(6 * m_), 0));
    const auto codes = static_cast<std::size_t>(below_1f1b_memory_ ? kForceCodes : kForceCodesAll);
    const std::size_t devices = forced.size(), positions = forced[0].size();
    const std::size_t round = devices * positions * codes;
    const std::size_t every = std::max<std::size_t>(1, pass_ops_ / kSnapshots);
    // The run with the decisions forced so far: copies of its state. The first scan chooses
    // its trials from the best run (best_schedule_: the kinds it ran, the W's pending), which
    // a run of the same span that is leaner or has less span summed may have replaced since
    // (commit keeps it; only a shorter one is taken as the new base); choosing them from the
    // base run itself instead left 2 zb-v reference rows 0.02-0.07% longer, no other changed.
    // The second scan, whose base is not the best run, chooses them from its base run.
    const bool from_best = scan == Scan::kDeviceMajor;
    std::vector<VGreedy> snapshots;
    BaseRun base;
    auto chosen_from = [&]() -> const Schedule& {
      return from_best ? best_schedule_ : base.schedule();
    };
    std::vector<std::vector<int>> w_pending;  // per device, per position: W's pending there
    auto keep_snapshots = [&] {
      snapshots.clear();
      VGreedy run(p_, m_, costs_, limit_, choices, &forced);
      spent_ += pass_ops_;
      const std::optional<Score> built = run.run(kNever, every, &snapshots);
      BUBBLESIM_CHECK(built.has_value(), "the V greedy's base run of phase 3 failed");
      base = BaseRun(std::move(run.schedule()), *built, costs_);
      w_pending.assign(forced.size(), {});
      for (std::size_t d = 0; d < forced.size(); ++d) {
        int pending = 0;
        for (const Op& op : chosen_from().device_ops[d]) {
          w_pending[d].push_back(pending);
          pending += op.kind == OpKind::B ? 1 : op.kind == OpKind::W ? -1 : 0;
        }
      }
    };
    // Trial `next`: per device and position in the scan's order, per code (those that change
    // what the run did).
    auto make = [&](std::size_t next) -> std::optional<DecisionTrial> {
      const int code = static_cast<int>(next % codes) + 1;
      const std::size_t d =
          scan == Scan::kDeviceMajor ? next / (positions * codes) : next / codes % devices;
      const std::size_t pos = scan == Scan::kDeviceMajor ? next / codes % positions
                                                         : positions - 1 - next / (devices * codes);
      if (forced[d][pos] != 0 || !changes(code, chosen_from().device_ops[d][pos].kind) ||
          (code == kForceW && w_pending[d][pos] == 0)) {
        return std::nullopt;
      }
      DecisionTrial trial{forced, 0, false, {&snapshots, every, d, pos}};
      trial.forced[d][pos] = static_cast<signed char>(code);
      // The last copy taken before the device planned its op at `pos` (none: from the start).
      while (trial.snapshot + 1 < snapshots.size() &&
             snapshots[trial.snapshot + 1].placed_on(d) < pos) {
        ++trial.snapshot;
      }
      trial.fresh = snapshots[trial.snapshot].placed_on(d) >= pos;
      return trial;
    };
    auto execute = [&](const DecisionTrial& trial) {
      VGreedy greedy = trial.fresh ? VGreedy(p_, m_, costs_, limit_, choices, &trial.forced)
                                   : snapshots[trial.snapshot];
      greedy.force(&trial.forced);
      const std::size_t from = greedy.placed();
      Run out;
      out.built = trial.fresh ? greedy.run(current.max_span_ns, 0, nullptr, &trial.rejoin)
                              : greedy.resume(current.max_span_ns, 0, nullptr, &trial.rejoin);
      out.placed = greedy.placed() - from;
      if (greedy.rejoined()) {
        out.built = base.finish(greedy, current.max_span_ns);
      }
      if (out.built) out.schedule = std::move(greedy.schedule());
      if (options_.check_resumes) {
        const Run whole = run_greedy(choices, current.max_span_ns, &trial.forced);
        BUBBLESIM_CHECK(whole.built.has_value() == out.built.has_value() &&
                            (!out.built || (whole.schedule == out.schedule &&
                                            whole.built->max_span_ns == out.built->max_span_ns &&
                                            whole.built->sum_span_ns == out.built->sum_span_ns &&
                                            whole.built->peak == out.built->peak &&
                                            whole.built->no_bubble == out.built->no_bubble)),
                        "a run of the V greedy resumed from a copy of its state, or stopped "
                        "where it rejoined the base run, differs from the same run from the "
                        "start");
      }
      return out;
    };
    auto same_choices = [&](const DecisionTrial&) -> const std::vector<Choices>& {
      return choices;
    };
    // Only a shorter run: a forced decision kept for a tie-break (less span summed, a lower
    // peak) changed which start the improver took (the default example's zb-v ended with the
    // same span, 2.5 ms longer from first op to last).
    auto shorter = [](const Score& run, const Score& now) {
      return run.max_span_ns < now.max_span_ns;
    };
    for (bool improved = true; improved;) {
      improved = false;
      for (std::size_t next = 0; next < round;) {
        if (spent_ + pass_ops_ > end) return;
        keep_snapshots();
        auto found = first_better<DecisionTrial>(next, round, end, current, make, execute,
                                                 same_choices, shorter);
        if (!found || found->index == round) break;
        current = found->score;
        forced = std::move(found->input.forced);
        improved = true;
        next = found->index + 1;
      }
    }
  }

  // A trial of phase 3: the forced decisions, and the state it resumes from (snapshots[i],
  // or a fresh run).
  struct DecisionTrial {
    Overrides forced;
    std::size_t snapshot = 0;
    bool fresh = false;
    VGreedy::Rejoin rejoin;  // the base run's copies, and the decision forced
  };

  // The run of phase 3 that the trials differ from (its decisions forced so far): where a
  // trial rejoins it (VGreedy::Rejoin), the trial's ops left, span and peak are the base
  // run's from there (the memory it holds from there on is the base run's too).
  class BaseRun {
   public:
    BaseRun() = default;
    BaseRun(Schedule schedule, const Score& score, const std::vector<StageCosts>& costs)
        : schedule_(std::move(schedule)), score_(score) {
      for (const auto& ops : schedule_.device_ops) {
        std::vector<double> held{0.0};  // before each op
        for (const Op& op : ops)
          held.push_back(held.back() + costs[static_cast<std::size_t>(op.stage)].delta(op.kind));
        // peak_from[k]: the most held after op k or any later op (0 past the last).
        std::vector<double> peak_from(held.size(), 0.0);
        for (std::size_t k = ops.size(); k-- > 0;)
          peak_from[k] = std::max(held[k + 1], peak_from[k + 1]);
        peak_from_.push_back(std::move(peak_from));
      }
    }
    const Schedule& schedule() const { return schedule_; }

    // Completes `trial`, which rejoined this run, in place: its schedule gets this run's ops
    // from where each device stands. Nothing where the span exceeds `bound_ns`, where the
    // whole run would have stopped too (a device's span plus its work left only grows).
    std::optional<Score> finish(VGreedy& trial, TimeNs bound_ns) const {
      if (score_.max_span_ns > bound_ns) return std::nullopt;
      Score out = score_;
      out.peak = 0;
      for (std::size_t d = 0; d < schedule_.device_ops.size(); ++d) {
        const std::size_t at = trial.placed_on(d);
        const auto& ops = schedule_.device_ops[d];
        auto& own = trial.schedule().device_ops[d];
        own.insert(own.end(), ops.begin() + static_cast<std::ptrdiff_t>(at), ops.end());
        out.peak = std::max({out.peak, trial.peak_on(d), peak_from_[d][at]});
      }
      return out;
    }

   private:
    Schedule schedule_;
    Score score_;
    std::vector<std::vector<double>> peak_from_;  // per device, per op
  };

  // The trials from `begin` on (of `count`) a batch at a time on the cores (oneTBB): make(i)
  // gives trial i's input (nothing: no trial), execute(input) runs it (concurrently, so const
  // work only); then the runs are counted in order (commit, with choices_of(input)) under the
  // budget up to `end` ops placed, up to the first that is better(run, current): the
  // batch's later trials are dropped. So the result is what one trial after another would
  // give, on any number of cores. Improvements come in runs, so a search starts with a batch
  // of one trial, doubling while none improves (up to batch_size_): few trials dropped where
  // the cores are busy anyway (validate's rows). Returns the first better trial (index
  // `count` if none), nothing once the budget is spent.
  template <class Input>
  struct Found {
    std::size_t index;
    Input input;
    Score score;
  };
  template <class Input, class Make, class Execute, class ChoicesOf, class Better>
  std::optional<Found<Input>> first_better(std::size_t begin, std::size_t count, std::size_t end,
                                           const Score& current, const Make& make,
                                           const Execute& execute, const ChoicesOf& choices_of,
                                           const Better& better) {
    std::size_t width = 1;
    for (std::size_t next = begin; next < count;) {
      std::vector<std::pair<std::size_t, Input>> batch;  // (trial, input)
      for (; next < count && batch.size() < width; ++next) {
        std::optional<Input> input = make(next);
        if (input) batch.emplace_back(next, std::move(*input));
      }
      std::vector<Run> runs(batch.size());
      tbb::parallel_for(std::size_t{0}, batch.size(),
                        [&](std::size_t i) { runs[i] = execute(batch[i].second); });
      width = std::min(2 * width, batch_size_);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (done() || spent_ + pass_ops_ > end) return std::nullopt;
        std::optional<Score> built = commit(std::move(runs[i]), choices_of(batch[i].second));
        if (built && better(*built, current))
          return Found<Input>{batch[i].first, std::move(batch[i].second), *built};
      }
    }
    return Found<Input>{count, {}, current};
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
  // each under every cap. The first `anchors` are that combination under the anchor caps: with
  // transfers the falling cap, without them also none before it (the falling caps are V-Half's
  // building block, which no cap keeps where the plain greedy falls back to V-Min's layout).
  // The order is generated as it is taken: it holds kCombinations times the caps (and shares)
  // runs, of which the budget takes a few on large pipelines (built whole, over 100k runs once
  // the tail flips took the combinations to 8192, the list took 2-4 ms of zb-v's, V-Half's and
  // V-Min's 9-12 ms at p = 32, m = 256).
  class CandidateOrder {
   public:
    CandidateOrder(int anchor, std::vector<std::pair<int, int>> caps, std::size_t anchors)
        : anchor_(anchor), caps_(std::move(caps)), anchors_(anchors) {}
    std::size_t anchors() const { return anchors_; }
    // The next run of the order; nothing after the last.
    std::optional<Candidate> next() {
      if (anchors_taken_ < anchors_) {
        const auto& [cap, slope] = caps_[anchors_taken_++];
        return Candidate{anchor_, cap, slope, kWGapShares[0]};
      }
      // Combinations by distance from the anchor, each in increasing order of its bits (as a
      // stable sort by distance), each under every cap, with each share where it has an effect.
      constexpr int kMaxDistance =
          std::bit_width(static_cast<unsigned>(Choices::kCombinations - 1));
      while (distance_ <= kMaxDistance) {
        if (bits_ == Choices::kCombinations) {
          bits_ = 0;
          ++distance_;
        } else if (std::popcount(static_cast<unsigned>(bits_ ^ anchor_)) != distance_ ||
                   cap_ == caps_.size()) {
          cap_ = 0;
          ++bits_;
        } else if (share_ ==
                   ((bits_ & Choices::kWOnlyInLongGapsBit) != 0 ? std::size(kWGapShares) : 1)) {
          share_ = 0;
          ++cap_;
        } else {
          const Candidate out{bits_, caps_[cap_].first, caps_[cap_].second, kWGapShares[share_]};
          const bool anchor_run = bits_ == anchor_ && cap_ < anchors_ && share_ == 0;
          ++share_;
          if (!anchor_run) return out;  // the anchors went first
        }
      }
      return std::nullopt;
    }

   private:
    int anchor_;
    std::vector<std::pair<int, int>> caps_;  // (cap, slope)
    std::size_t anchors_;
    std::size_t anchors_taken_ = 0;
    int distance_ = 0, bits_ = 0;      // where the order stands: the combination,
    std::size_t cap_ = 0, share_ = 0;  // its cap and its share
  };
  CandidateOrder candidates(bool free_transfers, int seven_eighths) const {
    const int anchor = free_transfers ? 3 : 81;
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
    const std::size_t anchors = caps.size();
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
    return CandidateOrder(anchor, std::move(caps), anchors);
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

  // The best choices so far again with every device's cap on chunk-0 microbatches in flight
  // one higher, then one lower, and the choices of the kEarlierChoices bests before it with
  // every cap one higher, within the extended budget. Phase 1 runs each combination of choices
  // under a few fixed caps (the anchor's falls by one per device from two below what fits), and
  // on large pipelines its budget reaches only the first few combinations: the caps next to
  // those of its best runs, with their choices, are what it misses. zb-v at p = 32, m = 92:
  // 603,377 -> 599,009 raw (cap one higher: device 0 keeps one more chunk-0 microbatch in
  // flight); on the reference rows 75 -> 76 at or below the authors' cost, the worst 1.0029 ->
  // 1.0016, the mean 0.9912 -> 0.9896 (docs/validation.md). At or above 1F1B's memory only: below
  // it phase 1 already varies the caps next to the anchor's (slopes of 1/3 to 2/3 per device), and
  // there the runs cost the phase 1 run they displace (V-Half at p = 32, m = 104: 0.9992 -> 1.0002
  // of the authors' cost).
  void cap_pass() {
    if (below_1f1b_memory_ || !best_) return;
    const std::vector<std::vector<Choices>> earlier = earlier_choices_;
    vary(best_choices_, 2,
         [](std::vector<Choices>& trial, std::size_t i) { shift_caps(trial, i == 0 ? 1 : -1); });
    for (auto it = earlier.rbegin(); it != earlier.rend(); ++it)
      vary(*it, 1, [](std::vector<Choices>& trial, std::size_t) { shift_caps(trial, 1); });
  }
  static void shift_caps(std::vector<Choices>& choices, int step) {
    for (Choices& c : choices) {
      if (c.chunk0_in_flight != Choices::kNoCap)
        c.chunk0_in_flight = std::max(1, c.chunk0_in_flight + step);
    }
  }
  static constexpr std::size_t kEarlierChoices = 3;

  // The best choices of phase 1 again under each scale of the idle allowance, within the
  // extended budget.
  void allowance_pass() {
    if (!best_) return;
    vary(best_choices_, allowances_.size(), [&](std::vector<Choices>& trial, std::size_t i) {
      for (std::size_t d = 0; d < trial.size(); ++d)
        trial[d].idle_allowance_ns = allowances_[i][d];
    });
  }

  // The best choices so far again with each set of tail flips turned round
  // (Choices::tail_flips), within the extended budget: phase 1's budget reaches the flip bits
  // only on small pipelines.
  void tail_pass() {
    static constexpr std::array kFlips = {Choices::kTailBackward, Choices::kTailCommit,
                                          Choices::kTailBackward | Choices::kTailCommit};
    if (!best_) return;
    vary(best_choices_, kFlips.size(), [&](std::vector<Choices>& trial, std::size_t i) {
      for (Choices& c : trial)
        c.tail_flips ^= kFlips[i];
    });
  }

  std::size_t ops_placed() const { return spent_ + proxy_spent_; }
  // The best schedule found, with its score; nothing if every run ran out of memory.
  const std::optional<Score>& best() const { return best_; }
  Schedule& best_schedule() { return best_schedule_; }
  // The schedules that were the best before the best, the latest last (at most kRunnersUp):
  // starts for the multi-start improver.
  std::vector<std::pair<Schedule, TimeNs>>& runners_up() { return runners_up_; }
  static constexpr std::size_t kRunnersUp = 6;

 private:
  // `base` (a copy: the best choices change as the runs go) run again under changes
  // change(trial, i) for i < n in turn, while the extended budget lasts and nothing shorter can
  // be wanted.
  template <class Change>
  void vary(const std::vector<Choices> base, std::size_t n, Change change) {
    for (std::size_t i = 0; i < n; ++i) {
      if (done() || spent_ + pass_ops_ > extended_budget_) return;
      std::vector<Choices> trial = base;
      change(trial, i);
      attempt(trial, bound());
    }
  }

  // Nothing is shorter, or the caller's task group is called off (v_shape.cpp: the search for
  // a candidate beside another search that found no bubble): what is left is not wanted.
  bool done() const {
    return (best_ && best_->no_bubble) || tbb::is_current_task_group_canceling();
  }
  TimeNs bound() const { return best_ ? best_->max_span_ns : kNever; }

  // One run of the greedy, stopped at `bound_ns`. Keeps the schedule if it is the best.
  std::optional<Score> attempt(const std::vector<Choices>& choices, TimeNs bound_ns) {
    return commit(run_greedy(choices, bound_ns), choices);
  }

  // One run of the greedy, stopped at `bound_ns`, not yet counted: safe to call concurrently.
  struct Run {
    std::optional<Score> built;
    std::size_t placed = 0;
    Schedule schedule;
  };
  Run run_greedy(const std::vector<Choices>& choices, TimeNs bound_ns,
                 const Overrides* overrides = nullptr) const {
    VGreedy greedy(p_, m_, costs_, limit_, choices, overrides);
    Run out;
    out.built = greedy.run(bound_ns);
    out.placed = greedy.placed();
    if (out.built) out.schedule = std::move(greedy.schedule());
    return out;
  }

  // Appends a runner-up, the oldest dropped past kRunnersUp.
  static void add_runner_up(std::vector<std::pair<Schedule, TimeNs>>& list, Schedule schedule,
                            TimeNs span_ns) {
    list.emplace_back(std::move(schedule), span_ns);
    if (list.size() > kRunnersUp) list.erase(list.begin());
  }

  // Counts the run's ops and keeps its schedule if it is the best.
  std::optional<Score> commit(Run run, const std::vector<Choices>& choices) {
    spent_ += run.placed;
    if (run.built && (!best_ || run.built->better_than(*best_))) {
      if (best_) add_runner_up(runners_up_, std::move(best_schedule_), best_->max_span_ns);
      best_ = run.built;
      if (!best_choices_.empty()) {
        earlier_choices_.push_back(std::move(best_choices_));
        if (earlier_choices_.size() > kEarlierChoices)
          earlier_choices_.erase(earlier_choices_.begin());
      }
      best_choices_ = choices;
      best_schedule_ = std::move(run.schedule);
    }
    return run.built;
  }

  int p_, m_;
  const std::vector<StageCosts>& costs_;
  const std::vector<double>& limit_;
  VGreedyOptions options_;
  bool proxy_ = false;  // a proxy of transfer_from_proxy: its budgets
  int chunk0_fit_ = 1;
  std::size_t pass_ops_ = 0;         // ops of one whole run
  std::size_t uniform_budget_ = 0;   // ops phase 1 may place
  std::size_t extended_budget_ = 0;  // ops phase 1 and its extension may place in all
  bool refine_ = false;
  bool below_1f1b_memory_ = false;  // fewer than 2p chunk-0 microbatches fit
  std::size_t refine_ops_ = 0;      // phase 2's budget
  // Phase 2's trials run at once: twice the threads of the arena the search runs in.
  std::size_t batch_size_ = 2 * static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  std::size_t spent_ = 0;                        // ops placed over all runs
  std::size_t proxy_spent_ = 0;                  // ... and by the proxy's
  std::vector<std::vector<double>> allowances_;  // per scale, per device
  std::optional<Score> best_;
  Schedule best_schedule_;
  std::vector<Choices> best_choices_;
  std::vector<std::pair<Schedule, TimeNs>> runners_up_;
  // The choices of the bests before the best, the latest last (at most kEarlierChoices).
  std::vector<std::vector<Choices>> earlier_choices_;
};

}  // namespace

std::optional<VGreedyResult> v_greedy_search(int p, int m, const std::vector<StageCosts>& costs,
                                             const std::vector<double>& limit,
                                             const VGreedyOptions& options) {
  VSearch search(p, m, costs, limit, options);
  search.run();
  if (!search.best()) return std::nullopt;
  return VGreedyResult{std::move(search.best_schedule()), search.best()->max_span_ns,
                       search.best()->no_bubble, std::move(search.runners_up()),
                       search.ops_placed()};
}

}  // namespace bubblesim::sim
