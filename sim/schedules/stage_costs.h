// The per-stage cost table of the greedy schedulers (zb-auto, the V schedules): each stage's
// op times, transfers and activation deltas, read once from the cost model instead of once per
// decision.
//
// Contract: the table takes an op's cost to depend on its kind and stage, not on its
// microbatch (microbatch 0 stands for all; true of PerDeviceCostModel). A generator that
// times or sizes a schedule from the table must check its result against the cost model
// (zb-auto checks the memory of its result, the V generator every op's time and delta).
#pragma once

#include <vector>

#include "sim/cost_model.h"

namespace bubblesim::sim {

struct StageCosts {
  TimeNs f_ns = 0, b_ns = 0, w_ns = 0;
  TimeNs f_out_ns = 0;  // from the end of F until the microbatch's next op (the next stage's
                        // F; on the last stage, its own B) has its input: 0 on one device
  TimeNs b_out_ns = 0;  // from the end of B until the previous stage's B has its input
  double f_delta = 0, b_delta = 0, w_delta = 0;  // activation memory

  bool operator==(const StageCosts&) const = default;

  TimeNs duration_ns(OpKind kind) const {
    return kind == OpKind::F ? f_ns : kind == OpKind::B ? b_ns : w_ns;
  }
  double delta(OpKind kind) const {
    return kind == OpKind::F ? f_delta : kind == OpKind::B ? b_delta : w_delta;
  }
};

// One entry per stage s, on device stage_device[s]; an op of stage s has the chunk of s among
// its device's stages (the count of earlier stages on the same device).
std::vector<StageCosts> stage_costs(const std::vector<int>& stage_device, const CostModel& costs);

}  // namespace bubblesim::sim
