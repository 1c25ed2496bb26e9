// The summary of one run (app::run, analysis/app/run.h) and the metrics derived from it:
// iteration time, peak memory, throughput, MFU, out of memory. The command line renders these;
// the sweep table and the results file's attributes hold them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/app/scenario.h"
#include "analysis/run_record.h"
#include "models/collectives.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/schedule_registry.h"

namespace bubblesim::analysis::app {

// What the exact mode found, for the report.
struct ExactSummary {
  bool proven_optimal = false;
  double span_ms = 0;       // the engine's longest device span of the returned schedule
  double heuristic_ms = 0;  // the same for the heuristic's schedule (the warm start)
  double bound_ms = 0;      // the solver's lower bound
  double gap = 0;           // (span - bound) / span
  double solve_s = 0;       // solver time
  double time_limit_s = 0;  // the time the solver was given
};

// Mean and quantiles of samples (traces/statistics.h: linear between the sorted values).
struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
Distribution distribution(std::vector<double> values);

// A Monte Carlo run: the run repeated `samples` times, each op's duration drawn from its
// stage's profile samples (traces::SampledCostModel) by a generator seeded with `seed`, the
// schedule fixed.
struct MonteCarloSummary {
  int samples = 0;
  std::uint64_t seed = 0;
  Distribution iteration_time_ms;
  Distribution bubble_rate;
};

struct RunSummary {
  std::string schedule;
  MemoryUnit memory_unit = MemoryUnit::kGiven;  // of metrics' activation memory (Scenario)
  sim::ScheduleParams params;
  sim::Metrics metrics;
  // Model parameters each device holds, in DeepSeek's convention (../shared/reference/
  // zero-bubble.md §6): as a multiple of a 1F1B device's in a pipeline with as many stages per
  // microbatch, which for equal stages is the number of stages a device holds (2 for dualpipe,
  // dualpipe-v and the V schedules, v for 1f1b-i). `model_copies` is how many copies of the
  // model the schedule keeps (Schedule::num_stages() / route_stages(): 2 for dualpipe), so each
  // device holds model_copies / pp of the model's parameters.
  double parameters_per_device = 1;
  int model_copies = 1;
  std::optional<ExactSummary> exact;                // with the exact mode
  sim::InputRule input_rule = sim::InputRule::All;  // the paper's evaluator: PaperEvaluator
  sim::P2pMode p2p = sim::P2pMode::Async;
  sim::OpOverheads overheads;
  std::string calibration;  // the calibration file, "" without
  // With a model: each device's static memory in bytes (Scenario); the device's peak memory
  // is that plus its activation peak.
  std::vector<double> static_memory_bytes;
  int samples_per_microbatch = 0;  // with a model: throughput in samples per GPU per second
  std::optional<analysis::RunRecord> record;  // when kept: everything the results file keeps
  std::string profile;                        // the profile's file; "" without
  std::optional<MonteCarloSummary> monte_carlo;
  // With a cluster, dp or optimizer sync (Scenario::replicated): the iteration with the
  // gradient all-reduce and the optimizer step; `metrics` then cover all dp*pp logical devices.
  std::optional<models::IterationTime> iteration;
  int dp = 1;
  std::string allreduce;                 // "ring" or "tree", with `iteration`
  std::string optimizer_sync;            // "none", "allreduce", "post-validation", with `iteration`
  std::vector<int> physical_device;      // per device, with a cluster
  std::vector<std::string> device_gpus;  // per device, with `iteration`
  std::vector<double> capacity_bytes;    // per device, with `iteration` and a model
  double flops_per_iteration = 0;        // with a model and `iteration`: for mfu
  double peak_flops_total = 0;           // with `iteration`: all devices' dense peak, FLOP/s
};

// The iteration time of a run: RunSummary::iteration's when there is one, else the pipeline's.
sim::TimeNs iteration_time_ns(const RunSummary& run);
// With a model: device d's peak of static plus activation memory, in bytes, and the largest.
double peak_memory_bytes(const RunSummary& run, const sim::DeviceMetrics& d);
double max_peak_memory_bytes(const RunSummary& run);
// With a model: samples per second over the iteration, all replicas together, and per GPU.
double throughput_samples_per_s(const RunSummary& run);
double samples_per_gpu_per_s(const RunSummary& run);
// With a model and `iteration`: model FLOPs over the devices' dense peak in the iteration.
double mfu(const RunSummary& run);
// With a model and `iteration`: bytes over device d's memory (<= 0 when it fits), and whether
// any device is over.
double over_capacity_bytes(const RunSummary& run, const sim::DeviceMetrics& d);
bool oom(const RunSummary& run);

// Sets parameters_per_device and model_copies from the schedule (of one pipeline replica).
void set_parameter_fields(RunSummary& run, const sim::Schedule& schedule);

// A field of the summary beyond the fixed ones (schedule, sizes, times, bubble, peak).
struct SummaryField {
  const char* key;
  std::variant<int, double, bool, std::string> value;
};
// Those fields, in the JSON summary's order, where the run has them: one list for the JSON
// (DESIGN.md §4) and for the results file's attributes.
std::vector<SummaryField> summary_fields(const RunSummary& run);

// Completes `record`, the run's record for the results file, with the summary's fields beyond
// the record's fixed ones (RunRecord::extra_numbers and extra_texts), and makes its iteration
// time the summary's (with the all-reduce and optimizer step when there are some).
void add_summary_fields(analysis::RunRecord& record, const RunSummary& run);

}  // namespace bubblesim::analysis::app
