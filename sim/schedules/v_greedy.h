// The V greedy (v_shape.h gives its rules and its search): builds a V-shaped schedule (2p
// stages, device d holding stages d and 2p-1-d) by simulating as it goes under a per-device
// activation-memory limit, and searches its yes/no choices and its caps on the chunk-0
// microbatches in flight for the shortest result. v_shape.cpp builds zb-v, v-half and v-min
// on it, beside the repeated building blocks of v_blocks.h.
//
// Guarantees: every schedule returned holds every op once and runs without deadlock (the greedy
// places an op only once its input is placed), keeps each device within its limit at every
// point of its order, and is timed from `costs`, one cost per stage and kind (not per
// microbatch). It optimises the largest device span, then the peak, then the spans summed over
// the devices. Complexity: budgets in simulated ops bound the search (v_shape.h: thousands of
// runs for small pipelines, one or two at p = 32, m = 256); the per-device refinement's runs
// use the cores of the calling oneTBB arena, with the result of one run after another.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "sim/op.h"
#include "sim/schedule.h"
#include "sim/schedules/stage_costs.h"

namespace bubblesim::sim {

struct VGreedyResult {
  Schedule schedule;       // the shortest run found
  TimeNs max_span_ns = 0;  // its largest device span, as the greedy timed it
  bool no_bubble = false;  // every device busy for the whole span: nothing is shorter
  // The runs that were the best before it, the latest last (at most 6), with their spans:
  // starts for the multi-start improver.
  std::vector<std::pair<Schedule, TimeNs>> runners_up;
  std::size_t ops_placed = 0;  // by all the search's runs: what its budgets count
};

struct VGreedyOptions {
  bool descend_decisions = true;  // the search's phase 3 (v_shape.h), within its budget
  // For tests: each trial of phase 3 that resumes from a copy of a run's state (and may stop
  // where it rejoins that run) also runs from the start, and a difference in its schedule,
  // span, summed span or peak throws (LogicError).
  bool check_resumes = false;
};

// The search of v_shape.h over the greedy's choices. `costs`: one entry per stage (2p; stage s
// on device min(s, 2p-1-s)); `limit`: one per device, in the unit of the costs' deltas.
// Nothing when every run exceeded the limit. Where the calling oneTBB task group is cancelled
// the search stops at its next run with what it has (v_shape.cpp drops it then).
std::optional<VGreedyResult> v_greedy_search(int p, int m, const std::vector<StageCosts>& costs,
                                             const std::vector<double>& limit,
                                             const VGreedyOptions& options = {});

}  // namespace bubblesim::sim
