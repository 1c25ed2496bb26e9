// The exact mode of the automatic zero-bubble scheduler: the zero-bubble paper's integer
// linear program, solved with CBC (Debian's coinor-libcbc-dev), warm-started from a heuristic
// schedule. Built only where CBC is found (CMake option BUBBLESIM_WITH_CBC=AUTO|ON|OFF);
// available() says whether this build has it.
//
// The program, for p stages on p devices (one chunk each) and m microbatches:
//  - a start time per pass (F, B, W of every stage and microbatch); each pass of a kind runs
//    its microbatches in increasing order (microbatches are interchangeable, so this loses no
//    schedule's value);
//  - dependencies with T_comm between devices (F(s) -> F(s+1), B(s+1) -> B(s), F -> B on the
//    last stage, B -> W);
//  - one pass at a time per device: a binary per pair of passes whose order the above leaves
//    open, with big-M disjunctions (M from the warm start's span);
//  - memory: after every pass that allocates, the sum of the deltas of the passes ordered
//    before it stays within the device's limit;
//  - the first F of every stage starts as soon as it can (it is always the stage's first
//    pass), so the objective, the longest stage span (first F start to last W end), is the
//    value the engine gives the order: the engine starts every pass as early as the order
//    allows, which only shortens spans.
// The returned order is the solver's best, simulated by the engine; never worse than the warm
// start.
#pragma once

#include <vector>

#include "sim/cost_model.h"
#include "sim/schedule.h"

namespace bubblesim::sim::exact {

// Whether this build has the solver.
bool available();

// Largest p * m the exact mode accepts: beyond it the program has too many binaries to be
// worth starting.
inline constexpr int kMaxStagesTimesMicrobatches = 200;

struct ExactOptions {
  double time_limit_s = 10;  // wall-clock limit of the solver, > 0
};

struct ExactResult {
  Schedule schedule;              // the best order found (the warm start if none is better)
  TimeNs span_ns = 0;             // the engine's longest device span of `schedule`
  TimeNs warm_start_span_ns = 0;  // the same for the warm start
  double objective_ns = 0;        // the solver's value of its best solution
  double bound_ns = 0;            // the solver's lower bound on the longest span
  bool proven_optimal = false;    // bound_ns meets the best value
  double solve_s = 0;             // solver wall-clock time
  // (span_ns - bound_ns) / span_ns, 0 when proven optimal.
  double gap() const;
};

// Solves the program for `warm_start`'s p and m with `costs` and one activation-memory limit
// per device. Preconditions: `warm_start` places stage s on device s, runs split backward
// passes (B and W, no BW) in increasing microbatch order per kind, and fits `limit`.
// Throws InvalidArgument when p * m exceeds kMaxStagesTimesMicrobatches or this build has no
// solver.
ExactResult solve_zero_bubble_ilp(const Schedule& warm_start, const CostModel& costs,
                                  const std::vector<double>& limit, const ExactOptions& options);

}  // namespace bubblesim::sim::exact
