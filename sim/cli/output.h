// Rendering of run summaries: the tables people read and the JSON of DESIGN.md §4.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/run_record.h"
#include "models/collectives.h"
#include "sim/cli/options.h"
#include "sim/metrics.h"
#include "traces/profile.h"

namespace bubblesim::cli {

// What the exact mode (--exact) found, for the report.
struct ExactSummary {
  bool proven_optimal = false;
  double span_ms = 0;       // the engine's longest device span of the returned schedule
  double heuristic_ms = 0;  // the same for the heuristic's schedule (the warm start)
  double bound_ms = 0;      // the solver's lower bound
  double gap = 0;           // (span - bound) / span
  double solve_s = 0;       // solver time
  double time_limit_s = 0;  // --time-limit
};

// Quantiles interpolate linearly between the sorted values (numpy's default).
struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
Distribution distribution(std::vector<double> values);

// --samples N --seed S: the run repeated N times, each op's duration drawn from its stage's
// profile samples (traces::SampledCostModel), the schedule fixed.
struct MonteCarloSummary {
  int samples = 0;
  std::uint64_t seed = 0;
  Distribution iteration_time_ms;
  Distribution bubble_rate;
};

struct RunSummary {
  std::string schedule;
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
  std::optional<ExactSummary> exact;                // with --exact
  sim::InputRule input_rule = sim::InputRule::All;  // --paper-evaluator: PaperEvaluator
  sim::P2pMode p2p = sim::P2pMode::Async;           // --p2p
  sim::OpOverheads overheads;                       // --op-overhead
  std::string calibration;                          // --calibration's file, "" without
  // With --model: each device's static memory in bytes (RunInputs); the device's peak memory
  // is that plus its activation peak.
  std::vector<double> static_memory_bytes;
  int samples_per_microbatch = 0;  // with --model: throughput in samples per GPU per second
  std::optional<analysis::RunRecord> record;  // with --out: everything the results file keeps
  std::string profile;                        // --profile's file; "" without
  std::optional<MonteCarloSummary> monte_carlo;
  // With --cluster, --dp or --optimizer-sync (RunInputs::replicated): the iteration with the
  // gradient all-reduce and the optimizer step; `metrics` then cover all dp*pp logical devices.
  std::optional<models::IterationTime> iteration;
  int dp = 1;
  std::string allreduce;                 // "ring" or "tree", with `iteration`
  std::string optimizer_sync;            // "none", "allreduce", "post-validation", with `iteration`
  std::vector<int> physical_device;      // per device, with --cluster
  std::vector<std::string> device_gpus;  // per device, with `iteration`
  std::vector<double> capacity_bytes;    // per device, with `iteration` and --model
  double flops_per_iteration = 0;        // with --model and `iteration`: for mfu
  double peak_flops_total = 0;           // with `iteration`: all devices' dense peak, FLOP/s
};

// The iteration time of a run: RunSummary::iteration's when there is one, else the pipeline's.
sim::TimeNs iteration_time_ns(const RunSummary& run);
// With --model: the largest device peak of static plus activation memory, in bytes.
double max_peak_memory_bytes(const RunSummary& run);
// With --model: samples per second per GPU over the iteration, all replicas together.
double samples_per_gpu_per_s(const RunSummary& run);

// One point of a --mem-limit-sweep: the limit as a multiple of p M_B, and the run.
struct SweepPoint {
  double limit_factor = 0;
  RunSummary run;
};

// Completes `record`, the run's record for the results file, with the JSON summary's scalar
// fields beyond the record's fixed ones (RunRecord::extra_numbers and extra_texts), and makes
// its iteration time the JSON's (with the all-reduce and optimizer step when there are some).
void add_summary_fields(analysis::RunRecord& record, const RunSummary& run);

// Sets the two fields above from the schedule (of one pipeline replica).
void set_parameter_fields(RunSummary& run, const sim::Schedule& schedule);

// One JSON object (DESIGN.md §4) for a run, with `parameters_per_device` and
// `model_share_per_device` (model_copies / pp) added.
void write_json(std::ostream& out, const RunSummary& run);
// A JSON array of such objects.
void write_json(std::ostream& out, const std::vector<RunSummary>& runs);

// The inputs in one line: "p=8 m=24 | F 18.522 B 18.086 W 9.337 comm 0.601 ms | M_B 1 M_W 0.5 |
// F&B overlap 0", and a second line for the default example.
std::string describe_inputs(const RunInputs& in);

// One schedule: summary and a per-device table.
void write_simulate_table(std::ostream& out, const RunInputs& in, const RunSummary& run);
// A memory sweep: one row per limit (bubble rate, spans, peak), and the same as JSON: the
// first point's summary fields without "devices", plus "points": [{"mem_limit_factor",
// "mem_limit", "iteration_time_ms", "max_device_span_ms", "bubble_rate",
// "peak_activation_memory"}, ...].
void write_sweep_table(std::ostream& out, const RunInputs& in,
                       const std::vector<SweepPoint>& points);
void write_sweep_json(std::ostream& out, const std::vector<SweepPoint>& points);

// Several schedules side by side, the best value of each column marked with '*'.
void write_compare_table(std::ostream& out, const RunInputs& in,
                         const std::vector<RunSummary>& runs);

// An imported profile (`bubblesim import`): a line of totals, a table of stage x pass (count,
// total kernel ms, median, p10, p90 of the kernel time, median GPU span), the NCCL kernels by
// collective and the devices.
void write_profile_table(std::ostream& out, const traces::Profile& profile);
// The stage x pass table as a JSON array of {"stage" (null when the labels carry none),
// "pass" ("F", "B", "W", "BW"), "count", "total_kernel_ms", "median_ms", "p10_ms", "p90_ms",
// "median_span_ms"}.
void write_profile_json(std::ostream& out, const traces::Profile& profile);

}  // namespace bubblesim::cli
