// The exact mode of the automatic zero-bubble and the V schedulers: the zero-bubble paper's
// integer linear program, solved with CBC (Debian's coinor-libcbc-dev), warm-started from a
// heuristic schedule. Built only where CBC is found (CMake option
// BUBBLESIM_WITH_CBC=AUTO|ON|OFF); available() says whether this build has it.
//
// The program, for a line of stages 0..S-1 placed on devices in any way (one stage per device
// as zb-auto, two in a V as zb-v, v-half and v-min) and m microbatches:
//  - a start time per pass (F, B, W of every stage and microbatch); the passes of one class
//    (kind and stage) run their microbatches in increasing order (microbatches are
//    interchangeable, so this loses no schedule's value);
//  - dependencies with T_comm between devices (F(s) -> F(s+1), B(s+1) -> B(s), F -> B on the
//    last stage, B -> W);
//  - one pass at a time per device: a binary per pair of a device's passes whose order the
//    above leaves open, with big-M disjunctions (M from the warm start's span);
//  - memory: after every pass that allocates, the sum of the deltas of the passes ordered
//    before it stays within the device's limit;
//  - each device's first pass (the F of its lowest stage) starts as soon as it can, so the
//    objective, the longest device span (first pass start to last W end), is the value the
//    engine gives the order: the engine starts every pass as early as the order allows, which
//    only shortens spans.
// The returned order is the solver's best, simulated by the engine; never worse than the warm
// start. The binaries grow with the square of m per pair of a device's classes: beyond small
// p * m the solver returns the warm start with a bound and a gap.
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

// Solves the program for `warm_start`'s placement and m with `costs` and one activation-memory
// limit per device. Preconditions: `warm_start` has no routes or overlapped pairs, runs split
// backward passes (B and W, no BW), and fits `limit`; where it runs a class's microbatches out
// of order, CBC drops the warm start (the result is then the solver's, or the warm start).
// Throws InvalidArgument when p * m exceeds kMaxStagesTimesMicrobatches or this build has no
// solver.
ExactResult solve_zero_bubble_ilp(const Schedule& warm_start, const CostModel& costs,
                                  const std::vector<double>& limit, const ExactOptions& options);

}  // namespace bubblesim::sim::exact
