// Splicing schedules: one schedule's beginning joined to another's end.
//
// Different schedules of one pipeline are good in different phases: one keeps the last device
// fed in the warm-up, another runs a tighter steady state and cool-down. Their splice can beat
// both (V-Half at p = 16, m = 33, F 948, B 1033, W 685 per chunk: the best of 17 candidates
// ends at 225,038, the 6th's first 40% joined to the best's rest at 223,035, where the zero-
// bubble authors' scheduler ends at 223,298). A crossover, as in a genetic search, over any
// per-device orders of the same placement: it knows nothing of the schedule that made them.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

// Per device, the ops of `first` that start before `cut_ns` in `first_timeline` (its run), in
// its order, then the device's other ops in `second`'s order. Every op stays on its device,
// once. The result may deadlock or exceed a memory limit. Preconditions: `first` and `second`
// hold the same ops on each device (the same placement, stages and microbatches) and
// `first_timeline` is the engine's run of `first`.
Schedule splice(const Schedule& first, const Timeline& first_timeline, const Schedule& second,
                TimeNs cut_ns);

// A schedule and its largest device span.
using SpanRanked = std::pair<Schedule, TimeNs>;

// Splices of the shortest schedule of `ranked` (shortest first, each span the engine's) with
// each other one, both ways round, cut at kSpliceCuts times (1/20 to 19/20 of the first's span),
// the other schedules in rank order; each splice within `memory_limit` (per device, empty for
// none) is timed by the engine (try_run_validated: one that deadlocks is dropped). The shortest
// splice shorter than the shortest schedule goes to the front of `ranked`, and the next round
// splices it in turn, at most kSpliceRounds rounds. Stops when the simulated ops reach
// `budget_ops` (each splice costs the schedule's op count). Never makes the front longer.
inline constexpr int kSpliceCuts = 19;
inline constexpr int kSpliceRounds = 4;
void splice_best(std::vector<SpanRanked>& ranked, const CostModel& costs,
                 const std::vector<double>& memory_limit, std::size_t budget_ops);

}  // namespace bubblesim::sim
