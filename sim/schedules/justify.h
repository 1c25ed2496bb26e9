// Forward-backward justification: a classic improvement pass of list scheduling (the
// "forward-backward improvement" of resource-constrained project scheduling), applied to
// the per-device orders of any schedule.
//
// One round, from a timed schedule (the engine's timeline):
//  1. Backward: every op, latest end first, is placed as late as it can end on its device
//     (before its consumers, less the transfer time, and before the schedule's end),
//     filling the free intervals of the device left by the ops already placed. This packs
//     the schedule to the right and says how late each op may start.
//  2. Forward: every op, earliest latest-start first (among the ops whose input is placed),
//     is placed as early as it can start on its device (after its input arrives) in any
//     free interval that keeps the device's activation memory within its limit at every
//     point after it (an F whose memory does not fit anywhere waits until a B or W of its
//     device frees some). Each device's new order is its ops sorted by these start times.
// Both passes are O(ops * ops per device). The result is a valid order (every op after its
// input: the forward times respect every input and transfer, and the devices' intervals do
// not overlap), within the memory limits; it need not be better: the caller times it.
#pragma once

#include <optional>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

// One round of justification of `schedule`, whose engine timeline is `timeline`. Nothing when
// the forward pass cannot place every op within the memory limits (per device, in the unit of
// the cost model's activation deltas; empty for none).
// Precondition: `schedule` is valid, has no overlapped pairs, and `timeline` is its timing
// under `costs` (asynchronous transfers).
std::optional<Schedule> justify(const Schedule& schedule, const Timeline& timeline,
                                const CostModel& costs, const std::vector<double>& memory_limit);

}  // namespace bubblesim::sim
