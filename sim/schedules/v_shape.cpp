#include "sim/schedules/v_shape.h"

#include <algorithm>
#include <optional>

#include <tbb/task_group.h>

#include "sim/cost_model.h"
#include "sim/device_events.h"
#include "sim/engine.h"
#include "sim/placement.h"
#include "sim/schedules/improve.h"
#include "sim/schedules/splice.h"
#include "sim/schedules/stage_costs.h"
#include "sim/schedules/v_blocks.h"
#include "sim/schedules/v_greedy.h"

namespace bubblesim::sim {

namespace {

// A schedule and its largest device span.
using Timed = SpanRanked;

// Ops the engine may simulate justifying each candidate: 30 runs at 2,000 ops, none at
// p = 32, m = 256 (49k ops).
constexpr std::size_t kJustifyOps = 1'200'000'000;

// Ops the engine may simulate splicing the candidates (splice.h), for pipelines of at most
// kUnitCostOps ops: about 1,300 splices at 3,000 ops, 130 at 30,000. On the reference sets'
// V-Half and V-Min rows a quarter of it turned 6 rows fewer, four times it none more
// (docs/validation.md).
constexpr std::size_t kSpliceOps = 4'000'000;

// The order the search finds under `search_costs` (the real memory deltas kept, so the order
// holds the limit), timed with the real costs of `model`.
std::optional<Timed> order_found_under(int p, int m, const std::vector<StageCosts>& search_costs,
                                       const std::vector<double>& limit, const CostModel& model) {
  std::optional<VGreedyResult> found = v_greedy_search(p, m, search_costs, limit);
  if (!found) return std::nullopt;
  Schedule schedule = std::move(found->schedule);
  const TimeNs span = Engine(schedule, model).run().max_span_ns();
  return std::pair{std::move(schedule), span};
}

// The order the search finds when every op takes the same time and transfers are free, timed
// with the real costs: an order that does not chase the costs, a candidate beside the
// cost-aware ones.
std::optional<Timed> unit_cost_order(int p, int m, const std::vector<StageCosts>& costs,
                                     const std::vector<double>& limit, const CostModel& model) {
  return order_found_under(p, m, unit_costs(costs), limit, model);
}

// The table halfway between the real costs and unit costs: each op's time halfway to the mean
// time of an op (over the F, B and W of every stage), each transfer halved; the memory deltas
// kept. The search's order under it keeps the shape of the costs but not their every detail.
std::vector<StageCosts> halfway_costs(std::vector<StageCosts> costs) {
  double mean_ns = 0;
  for (const StageCosts& c : costs)
    mean_ns += static_cast<double>(c.f_ns + c.b_ns + c.w_ns) / 3.0;
  mean_ns /= static_cast<double>(costs.size());
  const auto halfway = [mean_ns](TimeNs t) {
    return static_cast<TimeNs>(0.5 * static_cast<double>(t) + 0.5 * mean_ns);
  };
  for (StageCosts& c : costs) {
    c.f_ns = halfway(c.f_ns);
    c.b_ns = halfway(c.b_ns);
    c.w_ns = halfway(c.w_ns);
    c.f_out_ns /= 2;
    c.b_out_ns /= 2;
  }
  return costs;
}

// The candidates beside the greedy's: the building blocks (v_blocks.h) and, for pipelines of
// at most kUnitCostOps ops, the unit-cost order; the blocks with waits at the turns, which
// compete with the result apart from the others (generate), go to `turned`.
std::vector<Timed> other_candidates(int p, int m, const std::vector<StageCosts>& stage_cost,
                                    const std::vector<double>& limit, const CostModel& costs,
                                    std::vector<Timed>& turned) {
  std::vector<Timed> out = v_blocks(p, m, stage_cost, limit, costs);
  if (6 * static_cast<std::size_t>(p) * static_cast<std::size_t>(m) > kUnitCostOps) return out;
  if (std::optional<Timed> order = unit_cost_order(p, m, stage_cost, limit, costs))
    out.push_back(std::move(*order));
  turned = turn_blocks(p, m, stage_cost, limit, costs);
  for (Timed& backfilled : backfilled_blocks(p, m, stage_cost, limit, costs))
    turned.push_back(std::move(backfilled));
  return out;
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
    const std::size_t ops = 6 * static_cast<std::size_t>(p) * static_cast<std::size_t>(m);
    // The greedy search and the other candidates do not depend on each other: they run side
    // by side (the greedy's refinement uses the cores only a batch at a time, and at p = 32,
    // m = 256 it is a single run). Where the greedy finds no bubble nothing is shorter: the
    // others are called off (their own greedy search stops at its next run) and dropped.
    // `apart`: the candidates that compete with the result as they are (below).
    std::vector<Timed> others, apart;
    std::optional<Timed> halfway;
    tbb::task_group beside;
    beside.run([&] { others = other_candidates(p, m, stage_cost, limit, costs, apart); });
    // Where every op takes the same time and transfers are free, the halfway table is the
    // real one and its search the greedy's own: it does not run.
    const std::vector<StageCosts> halfway_table = halfway_costs(stage_cost);
    if (ops <= kUnitCostOps && halfway_table != stage_cost) {
      beside.run([&] { halfway = order_found_under(p, m, halfway_table, limit, costs); });
    }
    std::optional<VGreedyResult> greedy = v_greedy_search(p, m, stage_cost, limit);
    if (greedy && greedy->no_bubble) beside.cancel();
    beside.wait();
    if (halfway) apart.push_back(std::move(*halfway));
    std::vector<Timed> candidates;
    if (greedy) candidates.emplace_back(std::move(greedy->schedule), greedy->max_span_ns);
    // The search's earlier bests: starts worth having where they are justified below.
    if (greedy && params.improve && kJustifyOps / ops >= 2 * ops) {
      for (auto& runner_up : greedy->runners_up)
        candidates.push_back(std::move(runner_up));
    }
    if (greedy && greedy->no_bubble) {
      apart.clear();
    } else {
      for (Timed& other : others)
        candidates.push_back(std::move(other));
    }
    if (candidates.empty()) {
      throw InvalidArgument("schedule '" + std::string(name()) +
                            "': no schedule found within the memory limit " +
                            format_number(limit.front()) + "; try a limit closer to p*M_B");
    }
    for (const Timed& candidate : candidates)
      check(candidate.first, stage_cost, limit, costs);
    for (const Timed& candidate : apart)
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
      for (Timed& candidate : apart)
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
    // The blocks with waits at the turns and the order found under halfway costs compete with
    // the result as they are (justified), so that no result is longer than without them.
    // Spliced with the others the turns' blocks changed which splices the budget buys (V-Half
    // lost 3 of its 36 reference rows); as further starts, which start the improver took on
    // with its whole budget (zb-v, p = 32, m = 100: 594.8 instead of 584.7 ms); the halfway
    // order as a further start turned the same reference rows but took others longer (V-Half
    // at p = 6, m = 11: 0.9891 -> 0.9930 of the authors' cost). Real-cost blocks with waits at
    // the turns turned no reference row.
    std::optional<Timed> best_apart;
    for (Timed& candidate : apart) {
      if (!best_apart || candidate.second < best_apart->second) best_apart = std::move(candidate);
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
    if (best_apart && best_apart->second < result.second) return std::move(best_apart->first);
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
      const double f = costs.activation_delta(Op{OpKind::F, d, 0, 0}, d);
      const double b = costs.activation_delta(Op{OpKind::B, d, 0, 0}, d);
      const double m_b = 2 * f;
      const double l =
          params.mem_limit > 0 ? params.mem_limit : kind_.default_limit(params.pp) * m_b;
      // One microbatch holds both chunks' forwards, then, where a B allocates (M_W > M_B),
      // one B's more before a W frees anything.
      const double need = std::max(m_b, m_b + b);
      if (l + 1e-9 < need) {
        throw SettingError("mem-limit",
                           "schedule '" + std::string(name()) + "': " + format_number(l) +
                               " is below what one microbatch needs on a device, " +
                               format_number(need) + " (M_B = " + format_number(m_b) + ")");
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
