// Rendering of run summaries: the tables people read and the JSON of DESIGN.md §4.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/run_record.h"
#include "sim/cli/options.h"
#include "sim/metrics.h"

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

struct RunSummary {
  std::string schedule;
  sim::ScheduleParams params;
  sim::Metrics metrics;
  std::optional<ExactSummary> exact;          // with --exact
  std::optional<analysis::RunRecord> record;  // with --out: everything the results file keeps
};

// One point of a --mem-limit-sweep: the limit as a multiple of p M_B, and the run.
struct SweepPoint {
  double limit_factor = 0;
  RunSummary run;
};

// One JSON object (DESIGN.md §4) for a run.
void write_json(std::ostream& out, const RunSummary& run);
// A JSON array of such objects.
void write_json(std::ostream& out, const std::vector<RunSummary>& runs);

// The inputs in one line: "p=8 m=24 v=1 | F 18.522 B 18.086 W 9.337 comm 0.601 ms | ...".
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

}  // namespace bubblesim::cli
