#include "sim/schedules/zb_auto.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "sim/cost_model.h"
#include "sim/device_events.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/placement.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/improve.h"
#include "sim/schedules/stage_costs.h"

namespace bubblesim::sim {

namespace {

// The yes/no choices of the greedy (zb_auto.h).
struct ZbChoices {
  bool idle_before_first_b = false;  // warm-up: the F that end before the first B arrives,
                                     // rather than one more that covers the wait
  bool backward_first = true;        // a ready B goes before a ready F
  bool fill_small_gaps = true;       // W into a gap shorter than itself when idling would give
                                     // this stage the most idle time of all
  bool cap_in_flight = true;         // after the warm-up, no more microbatches in flight than
                                     // the warm-up ran (else memory alone limits them)
  bool short_warmup = false;         // at most 1F1B's p - s warm-up F on stage s
  bool chained_warmup = false;       // the warm-up estimate waits for the stage below's own
                                     // warm-up forwards, not only for its backward's input
  int absorb = 0;  // a W in a gap shorter than itself that delays a known B only where the
                   // stage that B feeds holds pending W's of at least `absorb` times the
                   // delay (0: whatever the stage below holds)
};

// What one run of the greedy built, with the timing and memory it simulated on the way.
struct Built {
  Schedule schedule;
  TimeNs max_span_ns = 0;
};

// Warm-up forwards per stage: as many as run before the first B can arrive if every stage
// starts its first F as soon as it can, within the limit, and at least one more than the next
// stage (as far as the limit allows).
std::vector<int> warmup_forwards(int m, const std::vector<StageCosts>& c,
                                 const std::vector<double>& limit, ZbChoices choices) {
  const int p = static_cast<int>(c.size());
  std::vector<TimeNs> first_f(c.size(), 0);
  for (std::size_t s = 1; s < c.size(); ++s)
    first_f[s] = first_f[s - 1] + c[s - 1].f_ns + c[s - 1].f_out_ns;
  // The pace of stage s's forwards: the slowest F up to it.
  std::vector<TimeNs> pace(c.size(), c[0].f_ns);
  for (std::size_t s = 1; s < c.size(); ++s)
    pace[s] = std::max(pace[s - 1], c[s].f_ns);
  std::vector<int> warm(c.size(), 1);
  TimeNs b_arrives = first_f.back() + c.back().f_ns;  // on the last stage, after its first F
  for (int s = p - 1; s >= 0; --s) {
    const auto i = static_cast<std::size_t>(s);
    if (s < p - 1) {
      // Stage s+1 runs its first B once its input has arrived (and, chained, once its own
      // warm-up forwards are done: they may run past the arrival).
      const TimeNs warm_end = first_f[i + 1] + (warm[i + 1] - 1) * pace[i + 1] + c[i + 1].f_ns;
      if (choices.chained_warmup) b_arrives = std::max(b_arrives, warm_end);
      b_arrives += c[i + 1].b_ns + c[i + 1].b_out_ns;
    }
    const double window = static_cast<double>(b_arrives - first_f[i]);
    const double fit = window / static_cast<double>(std::max<TimeNs>(c[i].f_ns, 1));
    // Into [0, m] in doubles before the cast: a forward of (almost) no time fits billions of
    // times (a stage's F of 0 ms; the cast overflowed, found by options_fuzz), and the warm-up
    // is at most m below anyway.
    const double rounded =
        choices.idle_before_first_b ? std::floor(fit + 1e-9) : std::ceil(fit - 1e-9);
    int n = static_cast<int>(std::clamp(rounded, 0.0, static_cast<double>(m)));
    if (s < p - 1) n = std::max(n, warm[i + 1] + 1);
    if (choices.short_warmup) n = std::min(n, p - s);
    // In doubles first: the limit may be infinite.
    const double by_memory =
        c[i].f_delta > 0 ? std::floor(limit[i] / c[i].f_delta + 1e-9) : static_cast<double>(m);
    warm[i] = static_cast<int>(std::clamp(std::min<double>(n, by_memory), 1.0, double(m)));
  }
  return warm;
}

// Builds one schedule by simulating: see zb_auto.h. Returns nothing when the limit stops
// every device before all ops are placed, or when a stage's span exceeds the bound.
class LinearGreedy {
 public:
  LinearGreedy(int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit,
               ZbChoices choices)
      : p_(static_cast<int>(costs.size())),
        m_(m),
        c_(costs),
        limit_(limit),
        choices_(choices),
        cap_(warmup_forwards(m, costs, limit, choices)),
        f_ready_(static_cast<std::size_t>(p_ * m), kNever),
        b_ready_(f_ready_.size(), kNever),
        stages_(costs.size()),
        picks_(costs.size()),
        events_(costs.size()) {
    schedule_.num_microbatches = m;
    for (int s = 0; s < p_; ++s)
      schedule_.stage_device.push_back(s);
    schedule_.device_ops.resize(costs.size());
    for (auto& ops : schedule_.device_ops)
      ops.reserve(static_cast<std::size_t>(3 * m));
    for (int k = 0; k < m; ++k)
      f_ready_[index(0, k)] = 0;
  }

  // Gives up (returns nothing) as soon as a stage has been idle so long that its span cannot
  // end below `bound_ns` (its span is its work plus its idle time).
  std::optional<Built> run(TimeNs bound_ns) {
    std::vector<TimeNs> slack;
    for (const StageCosts& c : c_) {
      const TimeNs work = m_ * (c.f_ns + c.b_ns + c.w_ns);
      slack.push_back(bound_ns == kNever ? kNever : bound_ns - work);
    }
    for (int s = 0; s < p_; ++s)
      replan(s);
    std::size_t placed = 0;
    while (events_.next_time() != kNever) {
      const auto s = events_.next_device();
      place(static_cast<int>(s), picks_[s]);
      if (stages_[s].idle >= slack[s]) return std::nullopt;
      ++placed;
    }
    if (placed != static_cast<std::size_t>(3 * p_ * m_)) return std::nullopt;
    Built built;
    for (const Stage& st : stages_) {
      built.max_span_ns = std::max(built.max_span_ns, st.free_at - st.first_start);
    }
    built.schedule = std::move(schedule_);
    return built;
  }

 private:
  struct Pick {
    TimeNs start_ns = kNever;
    OpKind kind = OpKind::F;
  };
  struct Stage {
    int f = 0, b = 0, w = 0;  // next microbatch of each pass
    TimeNs free_at = 0, first_start = 0, idle = 0;
    double held = 0;  // activation memory
    bool started = false;
  };

  std::size_t index(int stage, int mb) const {
    return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_) +
           static_cast<std::size_t>(mb);
  }
  bool fits(int s, double delta) const {
    return stages_[static_cast<std::size_t>(s)].held + delta <=
           limit_[static_cast<std::size_t>(s)] + 1e-9;
  }

  // The stage's next op and when it starts; kNever start when it must wait for an input that
  // is not known yet (it is planned again when one becomes known).
  Pick choose(int s) const {
    const auto i = static_cast<std::size_t>(s);
    const Stage& st = stages_[i];
    const StageCosts& c = c_[i];
    const TimeNs free = st.free_at;
    TimeNs tb = kNever, tf = kNever;
    bool memory_bound = false;
    // A B that allocates (M_W > M_B) runs only where it fits; a pending W frees room for it.
    // An F is admitted only with room for one such B after it, so that a B is never stuck
    // without a W to make room.
    const double b_grows = std::max(0.0, c.b_delta);
    if (st.b < st.f && b_ready_[index(s, st.b)] != kNever) {
      if (b_grows == 0 || fits(s, b_grows)) {
        tb = std::max(free, b_ready_[index(s, st.b)]);
      } else {
        memory_bound = true;
      }
    }
    if (st.f < m_ && (!choices_.cap_in_flight || st.f - st.b < cap_[i]) &&
        (st.b > 0 || st.f < cap_[i])) {
      if (!fits(s, c.f_delta + b_grows)) {
        memory_bound = true;
      } else if (f_ready_[index(s, st.f)] != kNever) {
        tf = std::max(free, f_ready_[index(s, st.f)]);
      }
    }
    if (tb == free && tf == free) return {free, choices_.backward_first ? OpKind::B : OpKind::F};
    if (tb == free) return {free, OpKind::B};
    if (tf == free) return {free, OpKind::F};
    const TimeNs earliest = std::min(tb, tf);
    if (st.w < st.b) {
      const bool nothing_else = st.f == m_ && st.b == m_;
      const TimeNs gap = earliest == kNever ? kNever : earliest - free;
      if (nothing_else || memory_bound || (gap != kNever && gap >= c.w_ns) ||
          (choices_.fill_small_gaps && gap != kNever && st.idle + gap > max_idle_ &&
           absorbed(s, earliest == tb, gap))) {
        return {free, OpKind::W};
      }
    }
    if (earliest == kNever) return {};
    return {earliest, tb == earliest ? OpKind::B : OpKind::F};
  }

  // Whether a W started now on stage s, delaying the B due in gap_ns by the rest of the W,
  // leaves the stage that B feeds pending W's worth choices_.absorb times the delay: a
  // delayed B passes its delay on down the chain unless the stages there have W's to run
  // meanwhile, and near the end, when their W's run out, it becomes idle time.
  bool absorbed(int s, bool waits_for_b, TimeNs gap_ns) const {
    if (choices_.absorb == 0 || !waits_for_b || s == 0) return true;
    const auto below = static_cast<std::size_t>(s - 1);
    // In doubles: a count times an op's time may leave int64's range (ops up to 1e15 ns).
    const double delay_ns = static_cast<double>(c_[static_cast<std::size_t>(s)].w_ns - gap_ns);
    const double pending_ns = static_cast<double>(stages_[below].b - stages_[below].w) *
                              static_cast<double>(c_[below].w_ns);
    return pending_ns >= choices_.absorb * delay_ns;
  }

  void replan(int s) {
    picks_[static_cast<std::size_t>(s)] = choose(s);
    events_.set(static_cast<std::size_t>(s), picks_[static_cast<std::size_t>(s)].start_ns);
  }

  void place(int s, const Pick& pick) {
    const auto i = static_cast<std::size_t>(s);
    Stage& st = stages_[i];
    const StageCosts& c = c_[i];
    int mb = 0;
    TimeNs end = pick.start_ns;
    double delta = 0;
    switch (pick.kind) {
      case OpKind::F:
        mb = st.f++;
        end += c.f_ns;
        delta = c.f_delta;
        break;
      case OpKind::B:
        mb = st.b++;
        end += c.b_ns;
        delta = c.b_delta;
        break;
      default:
        mb = st.w++;
        end += c.w_ns;
        delta = c.w_delta;
        break;
    }
    if (!st.started) {
      st.started = true;
      st.first_start = pick.start_ns;
    } else {
      st.idle += pick.start_ns - st.free_at;
      max_idle_ = std::max(max_idle_, st.idle);
    }
    schedule_.device_ops[i].push_back(Op{pick.kind, s, 0, mb});
    st.free_at = end;
    st.held += delta;

    int consumer = -1;
    TimeNs arrival = 0;
    if (pick.kind == OpKind::F) {
      if (s + 1 < p_) {
        consumer = s + 1;
        arrival = f_ready_[index(s + 1, mb)] = end + c.f_out_ns;
      } else {
        b_ready_[index(s, mb)] = end;
      }
    } else if (pick.kind == OpKind::B && s > 0) {
      consumer = s - 1;
      arrival = b_ready_[index(s - 1, mb)] = end + c.b_out_ns;
    }
    replan(s);
    // An input that arrives after the consumer's planned F or B starts cannot change that
    // plan (a planned W or wait depends on the gap, so those are planned again).
    if (consumer >= 0) {
      const Pick& planned = picks_[static_cast<std::size_t>(consumer)];
      if (planned.start_ns == kNever || planned.kind == OpKind::W || arrival <= planned.start_ns) {
        replan(consumer);
      }
    }
  }

  int p_, m_;
  const std::vector<StageCosts>& c_;
  const std::vector<double>& limit_;
  ZbChoices choices_;
  std::vector<int> cap_;                   // per stage: warm-up forwards
  std::vector<TimeNs> f_ready_, b_ready_;  // per (stage, mb): when the input is there
  std::vector<Stage> stages_;
  std::vector<Pick> picks_;  // per stage: its planned next op
  DeviceEvents events_;      // per stage: when its planned op starts
  TimeNs max_idle_ = 0;      // the most idle time of any stage so far
  Schedule schedule_;
};

bool fits_everywhere(const Schedule& schedule, const CostModel& costs,
                     const std::vector<double>& limit) {
  const std::vector<double> peaks = activation_peaks(schedule, costs);
  for (std::size_t d = 0; d < peaks.size(); ++d) {
    if (peaks[d] > limit[d] + 1e-9) return false;
  }
  return true;
}

// ZB-H2 if it fits the limit, else ZB-H1 if it does, for the same p and m.
std::optional<Schedule> handcrafted_candidate(int p, int m, const CostModel& costs,
                                              const std::vector<double>& limit) {
  ScheduleRegistry registry;
  add_handcrafted_schedules(registry);
  for (const char* name : {"zb-h2", "zb-h1"}) {
    Schedule s = registry.get(name).generate(ScheduleParams{p, m});
    if (fits_everywhere(s, costs, limit)) return s;
  }
  return std::nullopt;
}

// The search's size: kPlacementScale / ops^2 greedy runs (shrinking with the square of the
// size, as the improver's budget), at least kMinRuns: all 64 up to about 2,100 ops, 1 at
// p = 32, m = 128.
constexpr std::size_t kPlacementScale = 300'000'000;
constexpr std::size_t kMinRuns = 1;

}  // namespace

namespace {

// The search's schedules, shortest first: with `every_run`, each greedy run goes to its end
// (starts for the multi-start improver); else each is cut short once it cannot beat the best so
// far (only the best is whole).
std::vector<Built> zb_candidates(int p, int m, const CostModel& costs,
                                 const std::vector<double>& limit, bool every_run) {
  const std::vector<StageCosts> c = stage_costs(looped_placement(p, 1), costs);
  for (int s = 0; s < p; ++s) {
    const auto i = static_cast<std::size_t>(s);
    const double need = std::max(c[i].f_delta, c[i].f_delta + c[i].b_delta);
    if (limit[i] + 1e-9 < need) {
      throw InvalidArgument("memory limit " + format_number(limit[i]) + " on device " +
                            std::to_string(s) + " is below what one microbatch needs there; " +
                            "the smallest feasible limit is " + format_number(need));
    }
  }
  const auto num_ops = static_cast<std::size_t>(3 * p * m);
  std::vector<Built> built;
  TimeNs best_ns = kNever;
  auto consider = [&](std::optional<Built> run) {
    if (!run) return;
    best_ns = std::min(best_ns, run->max_span_ns);
    built.push_back(std::move(*run));
  };
  // The choices, in the order that most often gives the best (measured over p up to 32,
  // limits from p to unlimited, uniform and unequal stages), as many as the budget allows.
  // The chained warm-up estimate (bit 32) doubles them: the plain ones first, as they win
  // on large pipelines.
  static constexpr std::array<int, 64> kOrder = [] {
    constexpr int kPlain[32] = {2,  3,  0,  22, 5,  6,  1,  12, 26, 10, 7,  8,  4,  9,  11, 13,
                                14, 15, 16, 17, 18, 19, 20, 21, 23, 24, 25, 27, 28, 29, 30, 31};
    std::array<int, 64> order{};
    for (int i = 0; i < 32; ++i) {
      order[static_cast<std::size_t>(i)] = kPlain[i];
      order[static_cast<std::size_t>(i + 32)] = kPlain[i] + 32;
    }
    return order;
  }();
  const std::size_t budget_runs = kPlacementScale / num_ops / num_ops;
  const std::size_t runs = std::clamp<std::size_t>(budget_runs, kMinRuns, std::size(kOrder));
  ZbChoices best{};
  for (std::size_t r = 0; r < runs; ++r) {
    const int bits = kOrder[r];
    const ZbChoices choices{(bits & 1) != 0, (bits & 2) == 0,  (bits & 4) == 0,
                            (bits & 8) == 0, (bits & 16) != 0, (bits & 32) != 0};
    const TimeNs before_ns = best_ns;
    consider(LinearGreedy(m, c, limit, choices).run(every_run ? kNever : best_ns));
    if (best_ns < before_ns) best = choices;
  }
  // Then the best combination with the small-gap W's held back where they would delay a B
  // that the stage below cannot absorb, at thresholds from the middle out: as many as the
  // budget pays beyond the first run (none at p = 32, m = 128; all five up to p = 24, m = 80).
  if (best.fill_small_gaps) {
    static constexpr int kAbsorbs[] = {4, 2, 8, 1, 16};
    const std::size_t sweep =
        std::min<std::size_t>(std::size(kAbsorbs), std::max<std::size_t>(budget_runs, 1) - 1);
    for (std::size_t r = 0; r < sweep; ++r) {
      ZbChoices choices = best;
      choices.absorb = kAbsorbs[r];
      consider(LinearGreedy(m, c, limit, choices).run(every_run ? kNever : best_ns));
    }
  }
  // The handcrafted schedule with the most memory that fits the limit competes too, so the
  // result is never worse than it.
  if (std::optional<Schedule> handcrafted = handcrafted_candidate(p, m, costs, limit)) {
    const TimeNs span = Engine(*handcrafted, costs).run().max_span_ns();
    consider(Built{std::move(*handcrafted), span});
  }
  BUBBLESIM_CHECK(!built.empty(), "the zero-bubble scheduler found no schedule");
  std::stable_sort(built.begin(), built.end(),
                   [](const Built& a, const Built& b) { return a.max_span_ns < b.max_span_ns; });
  for (const Built& b : built) {
    BUBBLESIM_CHECK(b.schedule.num_ops() == num_ops, "the zero-bubble scheduler lost ops");
    BUBBLESIM_CHECK(fits_everywhere(b.schedule, costs, limit),
                    "the zero-bubble scheduler exceeded its memory limit");
  }
  return built;
}

}  // namespace

Schedule auto_zero_bubble(int p, int m, const CostModel& costs, const std::vector<double>& limit) {
  return std::move(zb_candidates(p, m, costs, limit, false).front().schedule);
}

namespace {

// The three registered schedules differ only in their limit.
struct AutoKind {
  const char* name;
  const char* description;
  double whole_stages;  // limit in units of the device's M_B; 0: --mem-limit (default p M_B)
};

constexpr AutoKind kZb1p{"zb-1p",
                         "automatic zero bubble under p*M_B (1F1B's memory): warm-up, W fills "
                         "the gaps, search over the heuristic's choices",
                         1};
constexpr AutoKind kZb2p{"zb-2p", "automatic zero bubble under 2p*M_B", 2};
constexpr AutoKind kZbAuto{"zb-auto",
                           "automatic zero bubble under --mem-limit (default p*M_B; inf for "
                           "no limit)",
                           0};

constexpr const AutoKind* kKinds[] = {&kZb1p, &kZb2p, &kZbAuto};

// The limit of each device: the kind's multiple of p M_B, else --mem-limit, else p M_B.
std::vector<double> limits_for(const AutoKind& kind, const ScheduleParams& params,
                               const CostModel& costs) {
  std::vector<double> limit;
  for (int d = 0; d < params.pp; ++d) {
    const double m_b = costs.activation_delta(Op{OpKind::F, d, 0, 0}, d);
    limit.push_back(kind.whole_stages > 0  ? kind.whole_stages * params.pp * m_b
                    : params.mem_limit > 0 ? params.mem_limit
                                           : params.pp * m_b);
  }
  return limit;
}

class ZbAuto final : public ScheduleGenerator {
 public:
  explicit ZbAuto(const AutoKind& kind) : kind_(kind) {}
  std::string_view name() const override { return kind_.name; }
  std::string_view description() const override { return kind_.description; }
  std::string_view parameters() const override { return "p >= 1, m >= 1"; }
  bool takes_mem_limit() const override { return kind_.whole_stages == 0; }
  std::vector<double> exact_limits(const ScheduleParams& params) const override {
    return limits_for(kind_, params, *params.costs);
  }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    const PerDeviceCostModel unit =
        PerDeviceCostModel::uniform(DeviceCosts{1000, 1000, 1000, 0, 1.0, 0.5}, params.pp);
    const CostModel& costs = params.costs != nullptr ? *params.costs : unit;
    try {
      const std::vector<double> limit = limits_for(kind_, params, costs);
      if (!params.improve) return auto_zero_bubble(params.pp, params.microbatches, costs, limit);
      std::vector<Schedule> starts;
      const bool every_run =
          screens_starts(3 * static_cast<std::size_t>(params.pp) * params.microbatches);
      for (Built& b : zb_candidates(params.pp, params.microbatches, costs, limit, every_run))
        starts.push_back(std::move(b.schedule));
      const std::size_t budget = improve_budget_ops(starts.front().num_ops());
      return improve_best_of(std::move(starts), costs, ImproveLimits{limit, budget}).schedule;
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("schedule '" + std::string(name()) + "': " + e.what());
    }
  }

 private:
  const AutoKind& kind_;
};

}  // namespace

void add_zb_auto_schedules(ScheduleRegistry& registry) {
  for (const AutoKind* kind : kKinds)
    registry.add(std::make_unique<ZbAuto>(*kind));
}

}  // namespace bubblesim::sim
