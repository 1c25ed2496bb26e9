// One call from a schedule and a cost model to a timeline and its metrics.
#pragma once

#include "sim/engine.h"
#include "sim/metrics.h"

namespace bubblesim::sim {

struct SimulationResult {
  Timeline timeline;
  Metrics metrics;
};

// Validates and runs `schedule` with `costs` (see Engine::run for the errors it throws).
SimulationResult simulate(const Schedule& schedule, const CostModel& costs);

}  // namespace bubblesim::sim
