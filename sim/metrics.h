// Metrics of a simulated run and activation-memory accounting (DESIGN.md §3).
#pragma once

#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

struct DeviceMetrics {
  int device = 0;
  TimeNs span_ns = 0;      // first op start to last op end on this device (0 without ops)
  TimeNs busy_ns = 0;      // sum of its compute slots' durations (an overlapped pair once)
  double bubble_rate = 0;  // 1 - busy / span (0 without ops)
  double peak_activation_memory = 0;  // highest activation memory held, unit of the cost model
};

struct Metrics {
  TimeNs iteration_time_ns = 0;   // first op start to last op end, anywhere
  TimeNs max_device_span_ns = 0;  // largest device span (the zero-bubble paper's "cost")
  // 1 - sum of busy / (devices * max_device_span): with uniform costs this is the paper's
  // (cost - m (T_F + T_B + T_W)) / cost.
  double bubble_rate = 0;
  double peak_activation_memory = 0;  // largest device peak
  std::vector<DeviceMetrics> devices;
};

// Peak activation memory of every device: the largest prefix sum (starting from 0) of the
// deltas of its ops in schedule order. Compute slots on one device never overlap, so the order
// alone decides the peak; in an overlapped pair the forward's allocation counts before the
// backward's release (the pair holds both while it runs).
std::vector<double> activation_peaks(const Schedule& schedule, const CostModel& costs);

// The same for one device's ops (`ops` in its order, run on `device`).
double activation_peak(const std::vector<Op>& ops, int device, const CostModel& costs);

// Precondition: `timeline` is the result of running `schedule` (same shape).
Metrics compute_metrics(const Schedule& schedule, const Timeline& timeline, const CostModel& costs);

}  // namespace bubblesim::sim
