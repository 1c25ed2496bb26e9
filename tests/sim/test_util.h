// Helpers shared by the sim tests.
#pragma once

#include "sim/cost_model.h"
#include "sim/schedule_registry.h"
#include "sim/schedules/handcrafted.h"
#include "sim/simulation.h"

namespace bubblesim::sim::testing {

inline ScheduleRegistry handcrafted_registry() {
  ScheduleRegistry registry;
  add_handcrafted_schedules(registry);
  return registry;
}

// Uniform costs in ms.
inline PerDeviceCostModel uniform_costs(int devices, double f_ms, double b_ms, double w_ms,
                                        double comm_ms, double m_b = 1.0, double m_w = 0.5) {
  return PerDeviceCostModel::uniform(
      DeviceCosts{ms_to_ns(f_ms), ms_to_ns(b_ms), ms_to_ns(w_ms), ms_to_ns(comm_ms), m_b, m_w},
      devices);
}

inline Schedule generate(const std::string& name, int p, int m) {
  return handcrafted_registry().get(name).generate(ScheduleParams{p, m, 1});
}

}  // namespace bubblesim::sim::testing
