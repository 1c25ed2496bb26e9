#include "analysis/run_record.h"

#include <cmath>

namespace bubblesim::analysis {

RunRecord make_run_record(RunRecord header, const sim::Schedule& schedule,
                          const sim::CostModel& costs, const sim::SimulationResult& result,
                          std::span<const sim::TransferEvent> transfers) {
  RunRecord run = std::move(header);
  const sim::Metrics& m = result.metrics;
  run.summary = {sim::ns_to_ms(m.iteration_time_ns), sim::ns_to_ms(m.max_device_span_ns),
                 m.bubble_rate, m.peak_activation_memory};

  run.ops.reserve(schedule.num_ops());
  run.memory.reserve(schedule.num_ops());
  for (int d = 0; d < schedule.num_devices(); ++d) {
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
    const auto& timings = result.timeline.device_ops[static_cast<std::size_t>(d)];
    BUBBLESIM_CHECK(ops.size() == timings.size(), "the timeline is not the schedule's");
    // Summed in schedule order, as sim::activation_peaks does, so the peaks agree exactly.
    double held = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const sim::Op& op = ops[i];
      const sim::OpTiming& t = timings[i];
      run.ops.push_back({d, op.stage, op.chunk, op.microbatch, op.kind, t.start_ns, t.end_ns});
      const double delta = costs.activation_delta(op, d);
      held += delta;
      run.memory.push_back({d, delta < 0 ? t.end_ns : t.start_ns, held});
    }
  }

  run.transfers.reserve(transfers.size());
  for (const sim::TransferEvent& t : transfers)
    run.transfers.push_back(
        {t.src_device, t.dst_device, std::llround(t.bytes), t.start_ns, t.end_ns});

  run.devices.reserve(m.devices.size());
  for (const sim::DeviceMetrics& d : m.devices) {
    run.devices.push_back({d.device, sim::ns_to_ms(d.span_ns), sim::ns_to_ms(d.busy_ns),
                           d.bubble_rate, d.peak_activation_memory});
  }
  return run;
}

}  // namespace bubblesim::analysis
