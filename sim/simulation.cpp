#include "sim/simulation.h"

namespace bubblesim::sim {

SimulationResult simulate(const Schedule& schedule, const CostModel& costs,
                          std::span<EngineObserver* const> observers, const Network* network,
                          InputRule rule, P2pMode p2p) {
  Engine engine(schedule, costs);
  if (network != nullptr) engine.set_network(*network);
  engine.set_input_rule(rule);
  engine.set_p2p(p2p);
  for (EngineObserver* observer : observers)
    engine.add_observer(*observer);
  SimulationResult result;
  result.timeline = engine.run();
  result.metrics = compute_metrics(schedule, result.timeline, costs);
  return result;
}

}  // namespace bubblesim::sim
