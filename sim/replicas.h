// Data parallelism as one schedule: N pipeline replicas side by side, so that one engine run
// times them together (and, with a network, their transfers share its links).
#pragma once

#include <vector>

#include "sim/schedule.h"

namespace bubblesim::sim {

// The replicas as one schedule. Replica r's devices become r*D .. r*D + D - 1, its stages
// r*S .. r*S + S - 1 and its microbatches r*m .. r*m + m - 1 (D, S, m: the replicas' devices,
// stages and microbatches, which must agree); each of its microbatches runs its own replica's
// stages (Schedule::routes, shifted from the replica's own routes where it has them).
// Precondition (checked): at least one replica, all of the same shape.
Schedule combine_replicas(const std::vector<Schedule>& replicas);

}  // namespace bubblesim::sim
