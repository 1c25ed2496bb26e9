#include "sim/cost_model.h"

#include <string>

#include "sim/error.h"

namespace bubblesim::sim {

PerDeviceCostModel::PerDeviceCostModel(std::vector<DeviceCosts> devices)
    : devices_(std::move(devices)) {
  BUBBLESIM_CHECK(!devices_.empty(), "a cost model needs at least one device");
  for (const DeviceCosts& c : devices_) {
    BUBBLESIM_CHECK(c.f_ns >= 0 && c.b_ns >= 0 && c.w_ns >= 0 && c.comm_ns >= 0,
                    "negative duration");
    // Indexed by OpKind: F, B, W, BW.
    durations_.insert(durations_.end(), {c.f_ns, c.b_ns, c.w_ns, c.b_ns + c.w_ns});
    deltas_.insert(deltas_.end(), {c.m_b, c.m_w - c.m_b, -c.m_w, -c.m_b});
  }
}

PerDeviceCostModel PerDeviceCostModel::uniform(const DeviceCosts& costs, int num_devices) {
  return PerDeviceCostModel(std::vector<DeviceCosts>(static_cast<std::size_t>(num_devices), costs));
}

void PerDeviceCostModel::throw_no_costs(int device) const {
  throw_internal_error("device < devices", __FILE__, __LINE__,
                       "device " + std::to_string(device) + " has no costs (the model has " +
                           std::to_string(devices_.size()) + ")");
}

}  // namespace bubblesim::sim
