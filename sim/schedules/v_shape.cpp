#include "sim/schedules/v_shape.h"

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>

#include "sim/cost_model.h"
#include "sim/device_events.h"
#include "sim/placement.h"
#include "sim/simulation.h"

namespace bubblesim::sim {

namespace {

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

// The yes/no choices of the greedy.
struct Choices {
  bool forward_first = false;              // a ready F goes before a ready B
  bool reserve_for_chunk1 = false;         // a chunk-0 F leaves room for one chunk-1 F
  bool chunk1_forward_first = true;        // between two ready F, the later stage's
  bool lower_stage_backward_first = true;  // between two ready B, the earlier stage's
  bool w_only_in_long_gaps = false;        // a W waits for a gap of at least its length, unless
                                           // memory stops the next F or nothing else is known
  int chunk0_in_flight = 1 << 30;          // chunk-0 microbatches past F and before B, at most
};

// What one run of the greedy built, with the timing and memory it simulated on the way.
struct Built {
  Schedule schedule;
  TimeNs max_span_ns = 0;
  double peak = 0;         // largest activation memory any device held
  bool no_bubble = false;  // every device busy for the whole longest span
};

// The costs of one stage's ops on its device, looked up once per generate() rather than once
// per decision: the greedy takes an op's cost to depend on its kind and stage, not on its
// microbatch (true of PerDeviceCostModel; the engine's check at the end would catch a model
// where it is not).
struct StageCosts {
  TimeNs f_ns = 0, b_ns = 0, w_ns = 0;
  TimeNs f_out_ns = 0;  // from the end of F until the input of the next op of the microbatch
                        // (the next stage's F, or this stage's B on the last stage) is there
  TimeNs b_out_ns = 0;  // from the end of B until the previous stage's B has its input
  double f_delta = 0, b_delta = 0, w_delta = 0;  // activation memory
};

std::vector<StageCosts> stage_costs(int p, const CostModel& costs) {
  const std::vector<int> device = v_placement(p);
  const int stages = 2 * p;
  std::vector<StageCosts> out(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const int d = device[static_cast<std::size_t>(s)];
    auto of = [&](OpKind kind) { return Op{kind, s, s < p ? 0 : 1, 0}; };
    auto hop = [&](int to) {
      const int e = device[static_cast<std::size_t>(to)];
      return e == d ? TimeNs{0} : costs.transfer_ns(d, e);
    };
    StageCosts& c = out[static_cast<std::size_t>(s)];
    c.f_ns = costs.duration_ns(of(OpKind::F), d);
    c.b_ns = costs.duration_ns(of(OpKind::B), d);
    c.w_ns = costs.duration_ns(of(OpKind::W), d);
    c.f_out_ns = s + 1 < stages ? hop(s + 1) : 0;
    c.b_out_ns = s > 0 ? hop(s - 1) : 0;
    c.f_delta = costs.activation_delta(of(OpKind::F), d);
    c.b_delta = costs.activation_delta(of(OpKind::B), d);
    c.w_delta = costs.activation_delta(of(OpKind::W), d);
  }
  return out;
}

// Builds one V schedule by simulating: see v_shape.h. Returns nothing when the memory limit
// stops every device before all ops are placed.
class VGreedy {
 public:
  VGreedy(int p, int m, const std::vector<StageCosts>& costs, const std::vector<double>& limit,
          Choices choices)
      : p_(p),
        m_(m),
        costs_(costs),
        limit_(limit),
        choices_(choices),
        f_ready_(static_cast<std::size_t>(2 * p * m), kNever),
        b_ready_(f_ready_.size(), kNever),
        next_(static_cast<std::size_t>(2 * p)),
        free_at_(static_cast<std::size_t>(p), 0),
        first_start_(static_cast<std::size_t>(p), 0),
        busy_(static_cast<std::size_t>(p), 0),
        left_(static_cast<std::size_t>(p), 0),
        held_(static_cast<std::size_t>(p), 0.0),
        peak_(static_cast<std::size_t>(p), 0.0),
        picks_(static_cast<std::size_t>(p)),
        events_(static_cast<std::size_t>(p)) {
    schedule_.num_microbatches = m;
    schedule_.stage_device = v_placement(p);
    schedule_.device_ops.resize(static_cast<std::size_t>(p));
    for (int d = 0; d < p; ++d) {
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
  // spent plus the work it has left.
  std::optional<Built> run(TimeNs bound_ns) {
    for (int d = 0; d < p_; ++d)
      replan(d);
    std::size_t placed = 0;
    while (events_.next_time() != kNever) {
      const auto d = events_.next_device();
      place(static_cast<int>(d), picks_[d]);
      if (free_at_[d] - first_start_[d] + left_[d] > bound_ns) return std::nullopt;
      ++placed;
    }
    if (placed != static_cast<std::size_t>(6 * p_ * m_)) return std::nullopt;
    Built built;
    built.no_bubble = true;
    for (std::size_t d = 0; d < free_at_.size(); ++d) {
      built.max_span_ns = std::max(built.max_span_ns, free_at_[d] - first_start_[d]);
      built.peak = std::max(built.peak, peak_[d]);
    }
    for (std::size_t d = 0; d < free_at_.size(); ++d) {
      built.no_bubble = built.no_bubble && busy_[d] == built.max_span_ns;
    }
    built.schedule = std::move(schedule_);
    return built;
  }

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
    return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_) +
           static_cast<std::size_t>(mb);
  }
  int device_of(int stage) const { return stage < p_ ? stage : 2 * p_ - 1 - stage; }
  bool fits(int d, double delta) const {
    return held_[static_cast<std::size_t>(d)] + delta <= limit_[static_cast<std::size_t>(d)] + 1e-9;
  }

  // The device's next op under the rules of v_shape.h, and when it can start.
  Pick choose(int d) const {
    const TimeNs free = free_at_[static_cast<std::size_t>(d)];
    const int low = d, high = 2 * p_ - 1 - d;
    Pick b, f, w;
    for (const int s :
         choices_.lower_stage_backward_first ? std::array{low, high} : std::array{high, low}) {
      const Counters& c = next_[static_cast<std::size_t>(s)];
      if (c.b < c.f && b_ready_[index(s, c.b)] != kNever &&
          fits(d, costs_[static_cast<std::size_t>(s)].b_delta)) {
        const TimeNs t = std::max(free, b_ready_[index(s, c.b)]);
        if (t < b.start_ns) b = Pick{t, OpKind::B, s};
      }
      if (c.w < c.b && w.start_ns == kNever) w = Pick{free, OpKind::W, s};
    }
    bool memory_bound = false;
    for (const int s :
         choices_.chunk1_forward_first ? std::array{high, low} : std::array{low, high}) {
      const Counters& c = next_[static_cast<std::size_t>(s)];
      if (c.f == m_ || f_ready_[index(s, c.f)] == kNever) continue;
      if (s == low && c.f - c.b >= choices_.chunk0_in_flight) continue;
      const double delta = costs_[static_cast<std::size_t>(s)].f_delta;
      if (!fits(d, s == low && choices_.reserve_for_chunk1 ? 2 * delta : delta)) {
        memory_bound = true;
        continue;
      }
      const TimeNs t = std::max(free, f_ready_[index(s, c.f)]);
      if (t < f.start_ns) f = Pick{t, OpKind::F, s};
    }
    const Pick& first = choices_.forward_first ? f : b;
    const Pick& second = choices_.forward_first ? b : f;
    if (first.start_ns == free) return first;
    if (second.start_ns == free) return second;
    const Pick& earliest = first.start_ns <= second.start_ns ? first : second;
    if (w.start_ns != kNever) {
      if (!choices_.w_only_in_long_gaps || memory_bound || earliest.start_ns == kNever ||
          earliest.start_ns - free >= costs_[static_cast<std::size_t>(w.stage)].w_ns) {
        return w;
      }
    }
    return earliest;
  }

  void replan(int d) {
    picks_[static_cast<std::size_t>(d)] = choose(d);
    events_.set(static_cast<std::size_t>(d), picks_[static_cast<std::size_t>(d)].start_ns);
  }

  // Runs the pick on device d and makes its output ready where it goes.
  void place(int d, const Pick& pick) {
    const auto s = static_cast<std::size_t>(pick.stage);
    const StageCosts& cost = costs_[s];
    Counters& c = next_[s];
    int mb = 0;
    TimeNs duration = 0;
    double delta = 0;
    switch (pick.kind) {
      case OpKind::F:
        mb = c.f++, duration = cost.f_ns, delta = cost.f_delta;
        break;
      case OpKind::B:
        mb = c.b++, duration = cost.b_ns, delta = cost.b_delta;
        break;
      default:
        mb = c.w++, duration = cost.w_ns, delta = cost.w_delta;
        break;
    }
    const TimeNs end = pick.start_ns + duration;
    const auto i = static_cast<std::size_t>(d);
    if (schedule_.device_ops[i].empty()) first_start_[i] = pick.start_ns;
    schedule_.device_ops[i].push_back(Op{pick.kind, pick.stage, pick.stage < p_ ? 0 : 1, mb});
    free_at_[i] = end;
    busy_[i] += duration;
    left_[i] -= duration;
    held_[i] += delta;
    peak_[i] = std::max(peak_[i], held_[i]);

    int consumer = -1;
    if (pick.kind == OpKind::F) {
      const bool last = pick.stage + 1 == 2 * p_;
      const int stage = last ? pick.stage : pick.stage + 1;
      consumer = device_of(stage);
      (last ? b_ready_ : f_ready_)[index(stage, mb)] = end + cost.f_out_ns;
    } else if (pick.kind == OpKind::B && pick.stage > 0) {
      consumer = device_of(pick.stage - 1);
      b_ready_[index(pick.stage - 1, mb)] = end + cost.b_out_ns;
    }
    replan(d);
    if (consumer >= 0 && consumer != d) replan(consumer);
  }

  int p_, m_;
  const std::vector<StageCosts>& costs_;  // per stage
  const std::vector<double>& limit_;      // per device
  Choices choices_;
  std::vector<TimeNs> f_ready_, b_ready_;  // per (stage, mb): when the input is there
  std::vector<Counters> next_;             // per stage
  // Per device: when it is free, its first op's start, its work done and left.
  std::vector<TimeNs> free_at_, first_start_, busy_, left_;
  std::vector<double> held_, peak_;  // per device: activation memory held now, and at most
  std::vector<Pick> picks_;          // per device: its planned next op
  DeviceEvents events_;              // per device: when its planned op starts
  Schedule schedule_;
};

// The three V schedules differ in their default memory limit (in whole-stage M_B) and in
// which caps on chunk-0 microbatches in flight they try besides none.
struct VShapeKind {
  const char* name;
  const char* description;
  double (*default_limit)(int p);  // in whole-stage M_B
  std::size_t caps_to_try;         // of the caps below, besides none
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
                          zb_v_limit, 1};
constexpr VShapeKind kVHalf{"v-half",
                            "V-shaped, half of 1F1B's activation memory: peak (p+2)/2*M_B "
                            "(or --mem-limit)",
                            v_half_limit, 4};
constexpr VShapeKind kVMin{"v-min",
                           "V-shaped, a third of 1F1B's activation memory: peak "
                           "floor((p+4)/3)*M_B (or --mem-limit)",
                           v_min_limit, 4};

class VShape final : public ScheduleGenerator {
 public:
  explicit VShape(const VShapeKind& kind) : kind_(kind) {}
  std::string_view name() const override { return kind_.name; }
  std::string_view description() const override { return kind_.description; }
  std::string_view parameters() const override { return "p >= 1, m >= 1, v = 2"; }
  int default_chunks() const override { return 2; }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 2);
    const int p = params.pp, m = params.microbatches;
    // Unit costs when none are given: T_F = T_B = T_W, M_B = 1, M_W = 0.5 per whole stage.
    const PerDeviceCostModel unit =
        PerDeviceCostModel::uniform(DeviceCosts{2000, 2000, 2000, 0, 1.0, 0.5}, p, 2);
    const CostModel& costs = params.costs != nullptr ? *params.costs : unit;

    std::vector<double> limit;
    for (int d = 0; d < p; ++d) {
      // A whole stage's M_B is both chunks' F.
      const double m_b = 2 * costs.activation_delta(Op{OpKind::F, d, 0, 0}, d);
      const double l = params.mem_limit > 0 ? params.mem_limit : kind_.default_limit(p) * m_b;
      if (l + 1e-9 < m_b) {
        throw InvalidArgument(
            "schedule '" + std::string(name()) + "': --mem-limit " + number(l) +
            " is below what one microbatch needs on a device, M_B = " + number(m_b));
      }
      limit.push_back(l);
    }

    // Caps on chunk-0 microbatches in flight: none, then p (half of ZB-V's memory for chunk
    // 0, its better warm-up when T_comm is large) and a few around 3p/4, where V-Half and
    // V-Min find their building block. Each cap costs a full search: ZB-V tries just p.
    std::vector<int> caps = {1 << 30};
    for (const int cap : {p, (3 * p + 3) / 4, p - 1, p / 2}) {
      if (caps.size() > kind_.caps_to_try) break;
      if (cap >= 1 && std::find(caps.begin(), caps.end(), cap) == caps.end()) caps.push_back(cap);
    }

    // Every combination of the choices, keeping the shortest (then the leanest); the greedy's
    // own timing is the engine's, which the end checks. The order puts first the combinations
    // that most often win (measured over uniform and unequal costs, p up to 16), so that the
    // later ones are mostly cut short by the bound.
    static constexpr int kOrder[32] = {3, 26, 19, 27, 18, 10, 11, 2,  1,  9, 8,
                                       0, 17, 16, 25, 24, 15, 22, 23, 4,  5, 6,
                                       7, 12, 13, 14, 20, 21, 28, 29, 30, 31};
    const std::vector<StageCosts> stage_cost = stage_costs(p, costs);
    std::optional<Built> best;
    for (const int cap : caps) {
      for (const int bits : kOrder) {
        const Choices choices{(bits & 1) != 0, (bits & 2) != 0,  (bits & 4) == 0,
                              (bits & 8) == 0, (bits & 16) != 0, cap};
        std::optional<Built> built =
            VGreedy(p, m, stage_cost, limit, choices).run(best ? best->max_span_ns : kNever);
        if (!built) continue;
        if (!best || built->max_span_ns < best->max_span_ns ||
            (built->max_span_ns == best->max_span_ns && built->peak < best->peak)) {
          best = std::move(built);
        }
        if (best->no_bubble) break;  // nothing is shorter than no bubble
      }
      if (best && best->no_bubble) break;
    }
    if (!best) {
      throw InvalidArgument("schedule '" + std::string(name()) +
                            "': no schedule found within the memory limit " +
                            number(limit.front()) + "; try a limit closer to p*M_B");
    }
    const Metrics check = simulate(best->schedule, costs).metrics;
    BUBBLESIM_CHECK(check.max_device_span_ns == best->max_span_ns,
                    "the V greedy's own timing disagrees with the engine");
    for (const DeviceMetrics& d : check.devices) {
      BUBBLESIM_CHECK(
          d.peak_activation_memory <= limit[static_cast<std::size_t>(d.device)] + 1e-9,
          "the V greedy exceeded its memory limit on device " + std::to_string(d.device));
    }
    return std::move(best->schedule);
  }

 private:
  const VShapeKind& kind_;
};

}  // namespace

void add_v_shape_schedules(ScheduleRegistry& registry) {
  registry.add(std::make_unique<VShape>(kZbV));
  registry.add(std::make_unique<VShape>(kVHalf));
  registry.add(std::make_unique<VShape>(kVMin));
}

}  // namespace bubblesim::sim
