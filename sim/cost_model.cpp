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
  }
}

PerDeviceCostModel PerDeviceCostModel::uniform(const DeviceCosts& costs, int num_devices) {
  return PerDeviceCostModel(std::vector<DeviceCosts>(static_cast<std::size_t>(num_devices), costs));
}

TimeNs PerDeviceCostModel::duration_ns(const Op& op, int device) const {
  const DeviceCosts& c = at(device);
  switch (op.kind) {
    case OpKind::F:
      return c.f_ns;
    case OpKind::B:
      return c.b_ns;
    case OpKind::W:
      return c.w_ns;
    case OpKind::BW:
      return c.b_ns + c.w_ns;
  }
  return 0;
}

TimeNs PerDeviceCostModel::transfer_ns(int src_device, int /*dst_device*/) const {
  return at(src_device).comm_ns;
}

double PerDeviceCostModel::activation_delta(const Op& op, int device) const {
  const DeviceCosts& c = at(device);
  switch (op.kind) {
    case OpKind::F:
      return c.m_b;
    case OpKind::B:
      return c.m_w - c.m_b;
    case OpKind::W:
      return -c.m_w;
    case OpKind::BW:
      return -c.m_b;
  }
  return 0;
}

}  // namespace bubblesim::sim
