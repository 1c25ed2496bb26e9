#include "sim/simulation.h"

namespace bubblesim::sim {

SimulationResult simulate(const Schedule& schedule, const CostModel& costs,
                          std::span<EngineObserver* const> observers) {
  Engine engine(schedule, costs);
  for (EngineObserver* observer : observers)
    engine.add_observer(*observer);
  SimulationResult result;
  result.timeline = engine.run();
  result.metrics = compute_metrics(schedule, result.timeline, costs);
  return result;
}

}  // namespace bubblesim::sim
