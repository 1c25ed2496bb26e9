#include "sim/simulation.h"

namespace bubblesim::sim {

SimulationResult simulate(const Schedule& schedule, const CostModel& costs) {
  SimulationResult result;
  result.timeline = Engine(schedule, costs).run();
  result.metrics = compute_metrics(schedule, result.timeline, costs);
  return result;
}

}  // namespace bubblesim::sim
