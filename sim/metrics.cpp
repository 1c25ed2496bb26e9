#include "sim/metrics.h"

#include <algorithm>
#include <limits>

namespace bubblesim::sim {

double activation_peak(const std::vector<Op>& ops, int device, const CostModel& costs) {
  double held = 0;
  double peak = 0;
  for (const Op& op : ops) {
    held += costs.activation_delta(op, device);
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<double> activation_peaks(const Schedule& schedule, const CostModel& costs) {
  std::vector<double> peaks;
  for (int d = 0; d < schedule.num_devices(); ++d) {
    peaks.push_back(activation_peak(schedule.device_ops[static_cast<std::size_t>(d)], d, costs));
  }
  return peaks;
}

Metrics compute_metrics(const Schedule& schedule, const Timeline& timeline,
                        const CostModel& costs) {
  BUBBLESIM_CHECK(timeline.device_ops.size() == schedule.device_ops.size(),
                  "timeline and schedule differ in devices");
  Metrics m;
  const std::vector<double> peaks = activation_peaks(schedule, costs);
  TimeNs first_start = std::numeric_limits<TimeNs>::max();
  TimeNs last_end = 0;
  double total_busy_ns = 0;  // over the devices: may pass 2^63
  for (std::size_t d = 0; d < timeline.device_ops.size(); ++d) {
    const auto& ops = timeline.device_ops[d];
    DeviceMetrics dm;
    dm.device = static_cast<int>(d);
    dm.peak_activation_memory = peaks[d];
    // A pair's second op runs inside the first's time and is not counted again: summing
    // it first and subtracting it after could pass 2^63 ns where the device's time fits.
    std::vector<bool> second_of_pair(ops.size(), false);
    for (const std::size_t i : schedule.pairs_of(static_cast<int>(d)))
      second_of_pair[i + 1] = true;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!second_of_pair[i]) dm.busy_ns += ops[i].end_ns - ops[i].start_ns;
    }
    if (!ops.empty()) {
      dm.span_ns = timeline.span_ns(d);
      first_start = std::min(first_start, ops.front().start_ns);
      last_end = std::max(last_end, ops.back().end_ns);
    }
    if (dm.span_ns > 0) {
      dm.bubble_rate = 1.0 - static_cast<double>(dm.busy_ns) / static_cast<double>(dm.span_ns);
    }
    total_busy_ns += static_cast<double>(dm.busy_ns);
    m.max_device_span_ns = std::max(m.max_device_span_ns, dm.span_ns);
    m.peak_activation_memory = std::max(m.peak_activation_memory, dm.peak_activation_memory);
    m.devices.push_back(dm);
  }
  if (last_end > 0) m.iteration_time_ns = last_end - first_start;
  if (m.max_device_span_ns > 0) {
    m.bubble_rate = 1.0 - total_busy_ns / (static_cast<double>(m.devices.size()) *
                                           static_cast<double>(m.max_device_span_ns));
  }
  return m;
}

}  // namespace bubblesim::sim
