// The pictures of a report (`bubblesim report FILE.h5 --html FILE --svg DIR`, docs/reports.md),
// drawn from a results file's records alone as SVG text, and the self-contained HTML page that
// holds them (inline CSS and SVG: no scripts, no fonts or anything else fetched).
//
// The SVG elements carry classes that say what they are, which tests and stylesheets rely on:
//   <svg class="timeline" data-run="NAME" data-ops="N">: one pipeline timeline, one row per
//     device (`<rect class="idle">` the row's background, so bubbles show), each op a
//     `<rect class="op K">` (K = F, B, W or BW; fill kOpColours) with its microbatch number
//     in a `<text class="mb">` when the box is at least 6 px per digit + 2 px wide;
//     `<line class="transfer">` per transfer with RenderOptions::transfers.
//   <svg class="memory" data-run="NAME">: `<polyline class="memory" data-device="D">` per device,
//     the activation memory as a step curve.
//   <svg class="sweep" data-plot="bubble"|"throughput">: `<circle class="point">` per ok sweep
//     row, `<circle class="point pareto">` for the rows on the Pareto front.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/report.h"
#include "sim/op.h"
#include "sim/output_file.h"

namespace bubblesim::analysis {

// Colours of the op kinds (fill), indexed by sim::OpKind: F, B, W, BW.
inline constexpr const char* kOpColours[] = {"#8fb8e8", "#9ad39a", "#f5c26b", "#c7a3de"};

// A timeline with more ops than this (and a memory curve with more rows per device) is drawn
// aggregated, so that a large run does not make a gigantic page: each device row is cut into
// 1 px columns, each column is drawn in the colour of the kind busy longest in it (left idle
// when the device is busy less than half of it), adjacent columns of one kind are merged into one
// box, and boxes carry no microbatch numbers; the memory curve keeps, per column, the highest
// value and the last one. The SVG then has the class "aggregated" and says so in a caption.
// Transfers (RenderOptions::transfers) are drawn only for runs with at most this many, and a
// sweep plot of more than 20000 ok rows draws every front row and every k-th other row
// (k = ceil(rows / 20000)); captions say so.
inline constexpr std::size_t kDefaultMaxBoxes = 5000;

struct RenderOptions {
  bool transfers = false;  // draw every transfer as a line from sender to receiver
  std::size_t max_boxes = kDefaultMaxBoxes;
  int width_px = 1200;  // the plot area of timelines and curves
};

// One run's pipeline timeline, like the zero-bubble paper's figures.
std::string timeline_svg(const RunRecord& run, const RenderOptions& options);

// One run's activation memory over time, one curve per device.
std::string memory_svg(const RunRecord& run, const RenderOptions& options);

enum class SweepPlot { kBubbleVsMemory, kThroughputVsMemory };

// The sweep table's ok rows: peak activation memory (x) against bubble rate or throughput
// (microbatches per GPU per second), coloured by schedule, the Pareto front marked and joined.
std::string sweep_svg(const std::vector<SweepRow>& rows, SweepPlot plot);

// The whole report as one HTML page: the text report's tables, then per run its timeline and
// memory curve, then the sweep plots.
std::string report_html(const ReportData& data, const RenderOptions& options);

// Writes the pictures as standalone SVG files into `dir` (created if missing):
// RUN.timeline.svg and RUN.memory.svg per run (characters other than letters, digits, '.', '-'
// and '_' in RUN become '_', and a name that clashes after that gets "-2", "-3"...),
// sweep-bubble.svg and sweep-throughput.svg with a sweep table.
// Each file is written atomically. Returns the paths written, in that order.
std::vector<std::string> write_svg_files(const std::string& dir, const ReportData& data,
                                         const RenderOptions& options);

// Writes `text` to `path` by the writer rule (sim/output_file.h), so that `path` is either as it
// was or complete. Throws bubblesim::Error naming the file.
void write_file_atomically(const std::string& path, const std::string& text);
// Writes `text` into `out`'s temporary; the caller commits `out`.
void write_text_file(sim::OutputFile& out, const std::string& text);

}  // namespace bubblesim::analysis
