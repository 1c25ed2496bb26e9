#include "analysis/app/run_summary.h"

#include <algorithm>
#include <type_traits>

#include "analysis/app/scenario.h"
#include "analysis/throughput.h"
#include "traces/statistics.h"

namespace bubblesim::analysis::app {

sim::TimeNs iteration_time_ns(const RunSummary& run) {
  return run.iteration ? run.iteration->iteration_ns : run.metrics.iteration_time_ns;
}

double peak_memory_bytes(const RunSummary& run, const sim::DeviceMetrics& d) {
  return run.static_memory_bytes[static_cast<std::size_t>(d.device)] + d.peak_activation_memory;
}

double max_peak_memory_bytes(const RunSummary& run) {
  double peak = 0;
  for (const sim::DeviceMetrics& d : run.metrics.devices)
    peak = std::max(peak, peak_memory_bytes(run, d));
  return peak;
}

namespace {

// The samples of one iteration, all replicas together.
double samples_per_iteration(const RunSummary& run) {
  return static_cast<double>(run.dp) * run.params.microbatches * run.samples_per_microbatch;
}

}  // namespace

double throughput_samples_per_s(const RunSummary& run) {
  return per_gpu_per_s(samples_per_iteration(run), 1, sim::ns_to_ms(iteration_time_ns(run)));
}

double samples_per_gpu_per_s(const RunSummary& run) {
  return per_gpu_per_s(samples_per_iteration(run), static_cast<double>(run.dp) * run.params.pp,
                       sim::ns_to_ms(iteration_time_ns(run)));
}

double mfu(const RunSummary& run) {
  return run.flops_per_iteration / (sim::ns_to_ms(iteration_time_ns(run)) / 1e3) /
         run.peak_flops_total;
}

double over_capacity_bytes(const RunSummary& run, const sim::DeviceMetrics& d) {
  return peak_memory_bytes(run, d) - run.capacity_bytes[static_cast<std::size_t>(d.device)];
}

bool oom(const RunSummary& run) {
  if (run.capacity_bytes.empty()) return false;
  return std::any_of(run.metrics.devices.begin(), run.metrics.devices.end(),
                     [&](const sim::DeviceMetrics& d) { return over_capacity_bytes(run, d) > 0; });
}

void set_parameter_fields(RunSummary& run, const sim::Schedule& schedule) {
  run.parameters_per_device = static_cast<double>(schedule.num_stages()) / schedule.num_devices();
  const int route = schedule.route_stages();
  run.model_copies = route > 0 ? schedule.num_stages() / route : 1;
}

std::vector<SummaryField> summary_fields(const RunSummary& run) {
  std::vector<SummaryField> fields = {
      {"parameters_per_device", run.parameters_per_device},
      {"model_share_per_device", static_cast<double>(run.model_copies) / run.params.pp}};
  if (run.input_rule == sim::InputRule::PaperEvaluator)
    fields.push_back({"input_rule", std::string("paper-evaluator")});
  // Only where given, so that runs without them print exactly what they did before.
  if (run.overheads != sim::OpOverheads{}) {
    fields.push_back({"op_overhead_f_ms", sim::ns_to_ms(run.overheads.f_ns)});
    fields.push_back({"op_overhead_b_ms", sim::ns_to_ms(run.overheads.b_ns)});
    fields.push_back({"op_overhead_w_ms", sim::ns_to_ms(run.overheads.w_ns)});
  }
  if (run.p2p != sim::P2pMode::Async) fields.push_back({"p2p", std::string(p2p_name(run.p2p))});
  if (!run.calibration.empty()) fields.push_back({"calibration", run.calibration});
  if (!run.static_memory_bytes.empty())
    fields.push_back({"peak_memory_bytes", max_peak_memory_bytes(run)});
  if (run.samples_per_microbatch > 0) {
    fields.push_back({"samples_per_gpu_per_s", samples_per_gpu_per_s(run)});
    fields.push_back({"throughput_samples_per_s", throughput_samples_per_s(run)});
  }
  if (!run.iteration) return fields;
  const models::IterationTime& it = *run.iteration;
  fields.push_back({"dp", run.dp});
  fields.push_back({"pipeline_time_ms", sim::ns_to_ms(it.pipeline_ns)});
  fields.push_back({"dp_allreduce_ms", sim::ns_to_ms(it.dp_allreduce_ns)});
  fields.push_back({"optimizer_ms", sim::ns_to_ms(it.optimizer_ns)});
  fields.push_back({"optimizer_sync_ms", sim::ns_to_ms(it.sync_ns)});
  fields.push_back({"optimizer_sync", run.optimizer_sync});
  fields.push_back({"allreduce", run.allreduce});
  if (run.samples_per_microbatch > 0) fields.push_back({"mfu", mfu(run)});
  if (!run.capacity_bytes.empty()) fields.push_back({"oom", oom(run)});
  return fields;
}

void add_summary_fields(analysis::RunRecord& record, const RunSummary& run) {
  record.summary.iteration_time_ms = sim::ns_to_ms(iteration_time_ns(run));
  for (const SummaryField& f : summary_fields(run)) {
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::string>) {
            record.extra_texts.emplace_back(f.key, value);
          } else {
            record.extra_numbers.emplace_back(f.key, static_cast<double>(value));
          }
        },
        f.value);
  }
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const auto quantile = [&](double q) { return traces::quantile_of_sorted(values, q); };
  double total = 0;
  for (const double v : values)
    total += v;
  d.mean = total / static_cast<double>(values.size());
  d.p50 = quantile(0.5);
  d.p90 = quantile(0.9);
  d.p99 = quantile(0.99);
  return d;
}

}  // namespace bubblesim::analysis::app
