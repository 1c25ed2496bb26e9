#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/error.h"

namespace bubblesim::sim {

TimeNs overlapped_pair_ns(TimeNs a_ns, TimeNs b_ns, double efficiency) {
  BUBBLESIM_CHECK(efficiency >= 0 && efficiency <= 1, "overlap efficiency out of [0, 1]");
  const TimeNs shorter = std::min(a_ns, b_ns);
  return std::max(a_ns, b_ns) +
         static_cast<TimeNs>(std::llround((1.0 - efficiency) * static_cast<double>(shorter)));
}

PerDeviceCostModel::PerDeviceCostModel(std::vector<DeviceCosts> devices, int chunks_per_device)
    : devices_(std::move(devices)) {
  BUBBLESIM_CHECK(!devices_.empty(), "a cost model needs at least one device");
  BUBBLESIM_CHECK(chunks_per_device >= 1, "chunks per device must be >= 1");
  const TimeNs v = chunks_per_device;
  auto chunk_ns = [v](TimeNs ns) { return (ns + v / 2) / v; };
  for (const DeviceCosts& c : devices_) {
    BUBBLESIM_CHECK(c.f_ns >= 0 && c.b_ns >= 0 && c.w_ns >= 0 && c.comm_ns >= 0,
                    "negative duration");
    const OpOverheads& o = c.overheads;
    BUBBLESIM_CHECK(o.f_ns >= 0 && o.b_ns >= 0 && o.w_ns >= 0, "negative overhead");
    BUBBLESIM_CHECK(c.overlap_efficiency >= 0 && c.overlap_efficiency <= 1,
                    "overlap efficiency out of [0, 1]");
    const TimeNs f = chunk_ns(c.f_ns), b = chunk_ns(c.b_ns), w = chunk_ns(c.w_ns);
    const double m_b = c.m_b / static_cast<double>(v), m_w = c.m_w / static_cast<double>(v);
    // Indexed by OpKind: F, B, W, BW.
    durations_.insert(durations_.end(), {f + o.f_ns, b + o.b_ns, w + o.w_ns, b + w + o.b_ns});
    deltas_.insert(deltas_.end(), {m_b, m_w - m_b, -m_w, -m_b});
  }
}

PerDeviceCostModel PerDeviceCostModel::uniform(const DeviceCosts& costs, int num_devices,
                                               int chunks_per_device) {
  return PerDeviceCostModel(std::vector<DeviceCosts>(static_cast<std::size_t>(num_devices), costs),
                            chunks_per_device);
}

void PerDeviceCostModel::throw_no_costs(int device) const {
  throw_internal_error("device < devices", __FILE__, __LINE__,
                       "device " + std::to_string(device) + " has no costs (the model has " +
                           std::to_string(devices_.size()) + ")");
}

}  // namespace bubblesim::sim
