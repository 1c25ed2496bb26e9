// Repeated building blocks for the V schedules (the controllable-memory paper's construction,
// laid out here from the real costs as well as at unit costs; v_shape.h): candidates that
// compete with the V greedy's (v_greedy.h) in v_shape.cpp.
//
// Guarantees: every schedule returned holds every op once and runs without deadlock (a block's
// own times respect every input, shifted by whole periods), keeps each device within its limit
// (checked in closed form on the steady state, or on the repeated order itself), and comes with
// its largest device span as the engine times it with `model`. Complexity: each function's
// budget in simulated ops (a few million; the unit-cost kinds only up to kUnitCostOps ops).
#pragma once

#include <cstddef>
#include <vector>

#include "sim/cost_model.h"
#include "sim/device_events.h"
#include "sim/schedules/splice.h"
#include "sim/schedules/stage_costs.h"

namespace bubblesim::sim {

// Pipelines of more ops skip the unit-cost candidates (the block and the order of unit
// costs): their edges weigh little beside m periods, where the real-cost block does as well,
// and their engine runs would take p = 32, m = 256 past its time budget.
inline constexpr std::size_t kUnitCostOps = 30'000;

// The table with every op taking one unit (kUnitNs of v_blocks.cpp) and free transfers; the
// memory deltas kept.
std::vector<StageCosts> unit_costs(std::vector<StageCosts> costs);

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
//  3. the unit-cost blocks of 2 squeezed at unit costs (squeeze), within kSqueezeOps;
//  4. in place of 2 and 3 for pipelines of more ops, below 1F1B's memory (device 0's limit
//     holds fewer than 2p chunk-0 forwards: V-Half, V-Min), one unit-cost block chosen
//     without timing each at m: of the layouts with waits of at most one step after the ops of
//     each chain (0-2 at the V's top) that fit, those that keep the shortest period under the
//     real costs (the maximum cycle ratio of the repeated order's constraints) are run with a
//     few microbatches, within a budget; of the one whose span extrapolated to m is shortest
//     and the real-cost block at the shortest period that fits, likewise extrapolated, the
//     shorter alone is timed at m. At
//     p = 32, m = 256 with transfers V-Half's other candidates end 2-3% above what its building
//     block keeps at any m (docs/validation.md).
// Of kinds 1 and 2 the kKeptPerKind shortest (distinct spans), of 3 and 4 the shortest; a kind
// is missing when no layout fits (or the calling oneTBB task group is cancelled: it stops
// timing blocks then, as does turn_blocks). Returned squeezed first, then unit-cost (2 or 4), then
// real-cost.
std::vector<SpanRanked> v_blocks(int p, int m, const std::vector<StageCosts>& costs,
                                 const std::vector<double>& limit, const CostModel& model);

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
std::vector<SpanRanked> turn_blocks(int p, int m, const std::vector<StageCosts>& costs,
                                    const std::vector<double>& limit, const CostModel& model);

// The unit-cost layouts of v_blocks (2.) and of turn_blocks that fit, each order once, squeezed
// as the controllable-memory paper does (VBlock::backfilled in v_blocks.cpp: the repeated
// block's ops in the order of their start, each as early as its input, its device and the
// memory allow, at unit costs) and timed with `model`, at most kBackfillRuns of them within
// kBackfillOps simulated ops: the kKeptPerKind shortest, shortest first. Only for pipelines of
// at most kUnitCostOps ops. They reach the authors' V-Min at unit costs where p is a multiple
// of 3 (6m + 4p - 7, with a wait at the V's top), which the squeezing of v_blocks (3.) misses by
// a step, and on the realistic V-Min rows of the reference set the authors' cost or less
// (docs/validation.md).
std::vector<SpanRanked> backfilled_blocks(int p, int m, const std::vector<StageCosts>& costs,
                                          const std::vector<double>& limit, const CostModel& model);

}  // namespace bubblesim::sim
