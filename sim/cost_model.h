// Cost models: how long each op takes, how long a transfer takes, and how much activation
// memory each op allocates or frees. The engine and the graph ask a CostModel; they never know
// where the numbers come from (uniform inputs, per-device lists, later traces and models).
#pragma once

#include <string>
#include <vector>

#include "sim/error.h"

#include "sim/op.h"

namespace bubblesim::sim {

class CostModel {
 public:
  virtual ~CostModel() = default;

  // Compute time of `op` on `device`, in ns, >= 0.
  virtual TimeNs duration_ns(const Op& op, int device) const = 0;

  // Compute time of a forward and a backward run overlapped as one compute slot on `device`
  // (Schedule::overlapped_pairs), in ns. This default gains nothing from the overlap: the two
  // durations added up.
  virtual TimeNs overlapped_ns(const Op& forward, const Op& backward, int device) const {
    return duration_ns(forward, device) + duration_ns(backward, device);
  }

  // Time from the end of an op on `src_device` until its output is usable on `dst_device`
  // (src_device != dst_device), in ns, >= 0. A transfer does not occupy either compute stream.
  virtual TimeNs transfer_ns(int src_device, int dst_device) const = 0;

  // Bytes of the output of `producer` that `src_device` sends to `dst_device`: what a transfer
  // carries over a sim::Network (engine.h). Only runs with a network ask; this default is 0
  // (then a transfer takes its route's latency alone).
  virtual double transfer_bytes(const Op& /*producer*/, int /*src_device*/,
                                int /*dst_device*/) const {
    return 0;
  }

  // Change of activation memory on `device` when `op` runs, in the unit of the model's inputs
  // (zero-bubble paper: F +M_B, B +(M_W - M_B), W -M_W, BW -M_B).
  virtual double activation_delta(const Op& op, int device) const = 0;
};

// The overlap model of an F&B pair: passes of `a_ns` and `b_ns` run together in
// max(a, b) + (1 - e) min(a, b), rounded to the nanosecond: a share e of the shorter pass is
// hidden behind the longer one. e = 0: no gain, the sum (two compute-bound passes sharing one
// GPU); e = 1: the shorter pass is hidden entirely. Precondition: 0 <= e <= 1.
TimeNs overlapped_pair_ns(TimeNs a_ns, TimeNs b_ns, double efficiency);

// A fixed cost before every pass on a device: kernel launch and host time between passes,
// in ns, each >= 0. It does not shrink with the chunk (a chunk pass pays all of it). A fused
// BW is one pass and pays b_ns. All 0 (the default) leaves every duration as it was.
struct OpOverheads {
  TimeNs f_ns = 0;
  TimeNs b_ns = 0;
  TimeNs w_ns = 0;
  friend bool operator==(const OpOverheads&, const OpOverheads&) = default;
};

// The overhead that a pass of `kind` pays.
inline TimeNs overhead_ns(const OpOverheads& o, OpKind kind) {
  switch (kind) {
    case OpKind::F:
      return o.f_ns;
    case OpKind::W:
      return o.w_ns;
    case OpKind::B:
    case OpKind::BW:
      return o.b_ns;
  }
  return 0;
}

// The costs of one device for one microbatch of its share of the model.
struct DeviceCosts {
  TimeNs f_ns = 0;                // forward
  TimeNs b_ns = 0;                // input gradient (BW takes b_ns + w_ns)
  TimeNs w_ns = 0;                // weight gradient
  TimeNs comm_ns = 0;             // one hop of an activation or gradient *sent by* this device
  double m_b = 1.0;               // activation memory F allocates (M_B)
  double m_w = 0.5;               // memory B keeps for W (M_W)
  double overlap_efficiency = 0;  // e of overlapped_pair_ns for this device's F&B pairs, 0..1
  double comm_bytes = 0;          // bytes of one hop sent by this device, when a network times it
  OpOverheads overheads = {};     // added to every pass's duration, whole (not split by chunk)
};

// Costs given per device: a list with one DeviceCosts per device, or one value for all.
// The entry describes the device's whole share of the model; with `chunks_per_device` = v
// chunks on a device (DESIGN.md §4), each chunk pass takes 1/v of the time (rounded to the
// nanosecond) and allocates or frees 1/v of the memory; every pass then pays the device's
// OpOverheads whole.
class PerDeviceCostModel final : public CostModel {
 public:
  explicit PerDeviceCostModel(std::vector<DeviceCosts> devices, int chunks_per_device = 1);
  static PerDeviceCostModel uniform(const DeviceCosts& costs, int num_devices,
                                    int chunks_per_device = 1);

  // Table look-ups: these run once per op in the engine's inner loop.
  TimeNs duration_ns(const Op& op, int device) const override {
    return durations_[checked(device) * kNumOpKinds + static_cast<std::size_t>(op.kind)];
  }
  // overlapped_pair_ns of the two durations with the device's overlap_efficiency.
  TimeNs overlapped_ns(const Op& forward, const Op& backward, int device) const override {
    return overlapped_pair_ns(duration_ns(forward, device), duration_ns(backward, device),
                              devices_[checked(device)].overlap_efficiency);
  }
  TimeNs transfer_ns(int src_device, int /*dst_device*/) const override {
    return devices_[checked(src_device)].comm_ns;
  }
  double transfer_bytes(const Op& /*producer*/, int src_device, int /*dst_device*/) const override {
    return devices_[checked(src_device)].comm_bytes;
  }
  double activation_delta(const Op& op, int device) const override {
    return deltas_[checked(device) * kNumOpKinds + static_cast<std::size_t>(op.kind)];
  }

  const std::vector<DeviceCosts>& devices() const { return devices_; }

 private:
  std::size_t checked(int device) const {
    const auto d = static_cast<std::size_t>(device);
    if (d >= devices_.size()) [[unlikely]]
      throw_no_costs(device);
    return d;
  }
  [[noreturn]] void throw_no_costs(int device) const;

  std::vector<DeviceCosts> devices_;
  std::vector<TimeNs> durations_;  // [device * kNumOpKinds + kind]
  std::vector<double> deltas_;     // same index
};

}  // namespace bubblesim::sim
