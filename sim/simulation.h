// One call from a schedule and a cost model to a timeline and its metrics.
#pragma once

#include <span>

#include "sim/engine.h"
#include "sim/metrics.h"

namespace bubblesim::sim {

struct SimulationResult {
  Timeline timeline;
  Metrics metrics;
};

// Validates and runs `schedule` with `costs` (see Engine::run for the errors it throws),
// reporting every event to `observers` (borrowed for the call; none by default), with transfers
// over `network` when one is given (Engine::set_network) and the inputs waited for by `rule`
// (Engine::set_input_rule), and transfers using the compute streams as `p2p` says
// (Engine::set_p2p).
SimulationResult simulate(const Schedule& schedule, const CostModel& costs,
                          std::span<EngineObserver* const> observers = {},
                          const Network* network = nullptr, InputRule rule = InputRule::All,
                          P2pMode p2p = P2pMode::Async);

}  // namespace bubblesim::sim
