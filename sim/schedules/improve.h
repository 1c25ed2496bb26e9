// The schedule improver: local search over the per-device order of any valid schedule
// (a generator's or a file's), timed by the engine.
//
// What it optimises: the largest device span (the zero-bubble paper's cost), then the sum of
// the device spans (so that progress off the longest device counts too). It never returns a
// schedule worse than its input by that order, and never lets a device's activation memory
// exceed its limit (a move that would is not tried, unless pending W's moved along with it
// bring the device back within, below).
//
// How: first the W's that held up the op after them, on the devices whose span is below the
// longest, deferred to the end of their device's order as far as that slack and the memory
// limit allow (a round at a time, while it helps); then forward-backward justification
// (justify.h), round after round while it helps;
// then repeatedly time the schedule with the engine (Engine::run_validated), then look at the
// idle gaps of the devices, longest device first and longest gap first, and try the moves
// that could close each gap, keeping the first that makes the schedule better:
//  - a pending W of the device (its B already run before the gap) moved into the gap;
//  - the op that produces the waited-for input moved earlier on its own device (past up to
//    8 ops, never past its own input), or the W that ran shortly before it deferred to just
//    after it or to the end of its device's order;
//  - the waiting op moved after the op that follows it (which may be ready sooner).
// A move that deadlocks is dropped. A forward moved earlier past the W's that freed its memory
// (the device would go over its limit) takes up to 4 of its device's pending W's along, each to
// just before it: a memory-bound device can then start the forward sooner, which no single move
// could. When no move helps and budget is left, iterated local
// search: two random moves of the best schedule (an op shifted by up to 4 places; the first
// of them, an op of the best's critical path that waited for its device, moved earlier), a
// descent from there over the 20 most promising moves of each step, kept where it ends
// better than the best; seeded, so the same input gives the same schedule. The critical path
// runs back from the last op of the longest device, through each op's input where it started
// as the input arrived, else through the op before it on its device. The search stops when the ops
// simulated reach the budget. Each round costs one engine run per move tried (O(ops) each).
#pragma once

#include <cstddef>
#include <vector>

#include "sim/cost_model.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

struct ImproveLimits {
  // Per device, in the unit of the cost model's activation deltas; empty for no limit.
  std::vector<double> memory_limit;
  // Ops the engine may simulate over all the runs (each run costs the schedule's op count);
  // under two runs' worth, the schedule is returned as it is, untimed (before_ns = after_ns
  // = 0).
  std::size_t budget_ops = 0;
  // Whether the local moves run after the forward-backward justification (justify.h).
  bool local_moves = true;
};

struct ImproveResult {
  Schedule schedule;
  TimeNs before_ns = 0;  // largest device span of the input
  TimeNs after_ns = 0;   // and of the result
  std::size_t runs = 0;  // engine runs made
};

// The default budget for a schedule of `schedule_ops` ops, as the generators use it: at most
// 8M simulated ops and 8,000 engine runs; below that, kImproveScale2 / ops^2 up to 12,000
// ops (the runs falling with the cube of the size: about 1.6M ops at 3,000, room for the
// iterated local search on mid-sized pipelines), then kImproveScale / ops (with the square),
// so that large pipelines (p = 32, m = 128 of zb-auto; p = 32, m = 256 of zb-v) get a run or
// none and keep their generation time. The cap on runs keeps tiny pipelines, whose every run
// costs more per op, from spending the whole 8M (a sweep or `advise` generates many).
// (A quarter of these below 12,000 ops until the deadlocking orders stopped costing a
// dependency graph each, Engine::try_run_validated: the same time now buys about 4 times the
// runs; docs/validation.md has what that gained.)
std::size_t improve_budget_ops(std::size_t schedule_ops);

// Precondition: `schedule` is valid (Schedule::validate) and runs without deadlock with
// `costs`, has no overlapped pairs and, with limits, holds within them. Throws what
// Engine::run throws otherwise.
// Takes `schedule` by value: a caller that no longer needs it moves it in (large pipelines get
// no budget, and the schedule comes back as it went in, uncopied).
ImproveResult improve_schedule(Schedule schedule, const CostModel& costs,
                               const ImproveLimits& limits);

// Multi-start: the local search ends in a local optimum that depends on where it starts, and
// the shortest start is often not the one that ends shortest (zb-auto at p = 6, m = 17: the
// shortest of 32 greedy runs ends 1.7% above the best of them all). The first start (the
// caller's best guess) is improved with limits.budget_ops; every other one (duplicates
// dropped) with a screening budget of limits.budget_ops / kScreenShare, and the best of those
// further with limits.budget_ops; the shorter of the two results is returned. Where the
// screening budget does not pay for two engine runs, only the first start is improved. Costs
// at most (starts / kScreenShare + 2) * limits.budget_ops simulated ops; never worse than
// improve_schedule(starts.front()); before_ns is the shortest start's span. The first start's
// search and the screening searches run side by side on the cores of the calling oneTBB arena
// (each is seeded: the result does not depend on the cores). `starts` must not be empty; each
// as for improve_schedule.
inline constexpr std::size_t kScreenShare = 8;
// Whether improve_best_of, at improve_budget_ops(schedule_ops), screens more than the first
// start: where it does not, a generator need not collect further starts.
bool screens_starts(std::size_t schedule_ops);
ImproveResult improve_best_of(std::vector<Schedule> starts, const CostModel& costs,
                              const ImproveLimits& limits);

}  // namespace bubblesim::sim
