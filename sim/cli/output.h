// Rendering of run summaries: the tables people read and the JSON of DESIGN.md §4.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/options.h"
#include "sim/metrics.h"

namespace bubblesim::cli {

struct RunSummary {
  std::string schedule;
  sim::ScheduleParams params;
  sim::Metrics metrics;
};

// One JSON object (DESIGN.md §4) for a run.
void write_json(std::ostream& out, const RunSummary& run);
// A JSON array of such objects.
void write_json(std::ostream& out, const std::vector<RunSummary>& runs);

// The inputs in one line: "p=8 m=24 v=1 | F 18.522 B 18.086 W 9.337 comm 0.601 ms | ...".
std::string describe_inputs(const RunInputs& in);

// One schedule: summary and a per-device table.
void write_simulate_table(std::ostream& out, const RunInputs& in, const RunSummary& run);
// Several schedules side by side, the best value of each column marked with '*'.
void write_compare_table(std::ostream& out, const RunInputs& in,
                         const std::vector<RunSummary>& runs);

}  // namespace bubblesim::cli
