// Reports of a results file (`bubblesim report FILE.h5`, docs/reports.md): the runs side by side
// and the sweep table's summary as text or JSON, from the HDF5 file alone. The pictures (SVG,
// HTML) are in report_render.h.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/results_file.h"
#include "analysis/run_record.h"

namespace bubblesim::analysis {

// Everything a report shows, read from one results file.
struct ReportData {
  std::string path;
  int format_version = 0;
  WriterInfo writer;
  std::vector<RunRecord> runs;  // by name
  bool has_sweep = false;
  std::vector<SweepRow> sweep;  // /sweep/table in file order
};

// Reads every run and the sweep table of the results file at `path`. Throws ResultsFileError
// (naming the file) for a missing, foreign, truncated or unknown-version file.
ReportData load_report(const std::string& path);

// The Pareto front of `points` (x, y), both to be minimised: the indices, ascending, of the
// points no other point dominates (no other is <= in both and < in one). Equal points are
// all on the front.
std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points);

// The sweep rows with status "ok", as indices into `rows`.
std::vector<std::size_t> ok_rows(const std::vector<SweepRow>& rows);

// The Pareto fronts the report marks, as indices into `rows` (rows with status "ok" only):
// peak activation memory against bubble rate (both minimised), and against throughput
// (microbatches per GPU per second, maximised).
std::vector<std::size_t> sweep_front_bubble(const std::vector<SweepRow>& rows);
std::vector<std::size_t> sweep_front_throughput(const std::vector<SweepRow>& rows);

// The report as text: the runs side by side (schedule, p, m, v, iteration time, bubble rate,
// peak activation memory, throughput, ops; the best of each metric marked '*'), then the sweep
// table's summary (rows, failures, best configurations, the Pareto fronts).
void write_report_text(std::ostream& out, const ReportData& data);

// The same as one JSON object: {"file", "format_version", "runs": [{"name", "schedule", "pp",
// "microbatches", "chunks", "iteration_time_ms", "max_device_span_ms", "bubble_rate",
// "peak_activation_memory", "microbatches_per_gpu_per_s", "ops", "transfers"}, ...], "sweep":
// null or {"rows", "ok", "errors", "pareto_bubble_vs_memory": [row index...],
// "pareto_throughput_vs_memory": [row index...]}} (row index: the row's `index` field).
void write_report_json(std::ostream& out, const ReportData& data);

}  // namespace bubblesim::analysis
