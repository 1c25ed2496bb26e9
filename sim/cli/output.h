// Rendering of run summaries: the tables people read and the JSON of DESIGN.md §4.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/app/run.h"
#include "analysis/app/run_summary.h"
#include "sim/cli/options.h"
#include "sim/metrics.h"
#include "traces/profile.h"

namespace bubblesim::cli {

// The run summaries and derived metrics of the application layer.
using app::distribution;
using app::Distribution;
using app::ExactSummary;
using app::iteration_time_ns;
using app::max_peak_memory_bytes;
using app::MonteCarloSummary;
using app::RunSummary;
using app::samples_per_gpu_per_s;

using app::SweepPoint;

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
