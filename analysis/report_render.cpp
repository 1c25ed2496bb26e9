#include "analysis/report_render.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "analysis/svg.h"
#include "analysis/throughput.h"

namespace bubblesim::analysis {

namespace {

constexpr int kLeft = 70;        // room for the row labels and the y axis
constexpr int kTop = 10;         // above the plot
constexpr int kRight = 20;       // after the plot
constexpr int kRowHeight = 22;   // one device row of a timeline
constexpr int kRowGap = 4;       // between rows
constexpr int kAxisHeight = 34;  // ticks, their labels and the axis title
constexpr int kCurveHeight = 180;
constexpr int kSweepWidth = 640;
constexpr int kSweepHeight = 360;
constexpr int kLegendWidth = 150;
constexpr std::size_t kMaxPointTitles = 2000;   // sweep points with a tooltip
constexpr std::size_t kMaxSweepPoints = 20000;  // sweep points drawn besides the front

int device_count(const RunRecord& run) {
  int devices = run.parameters.pp;
  for (const OpRecord& op : run.ops)
    devices = std::max(devices, op.device + 1);
  for (const MemoryRecord& m : run.memory)
    devices = std::max(devices, m.device + 1);
  return devices;
}

sim::TimeNs end_time(const RunRecord& run) {
  sim::TimeNs end = 0;
  for (const OpRecord& op : run.ops)
    end = std::max(end, op.end_ns);
  for (const TransferRecord& t : run.transfers)
    end = std::max(end, t.end_ns);
  for (const MemoryRecord& m : run.memory)
    end = std::max(end, m.time_ns);
  return std::max<sim::TimeNs>(end, 1);
}

double row_top(int device) {
  return kTop + device * (kRowHeight + kRowGap);
}

void box(std::string& svg, sim::OpKind kind, double x0, double x1, int device,
         const std::string& extra_class) {
  const auto k = static_cast<std::size_t>(kind);
  svg += fmt::format(
      "<rect class=\"op {}{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
      "fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\">",
      kind_name(kind), extra_class, x0, row_top(device), std::max(x1 - x0, 0.0), kRowHeight,
      kOpColours[k]);
}

// Every op a box, with its microbatch number when it fits.
void exact_boxes(std::string& svg, const RunRecord& run, const Scale& x) {
  for (const OpRecord& op : run.ops) {
    const double x0 = x(static_cast<double>(op.start_ns));
    const double x1 = x(static_cast<double>(op.end_ns));
    box(svg, op.kind, x0, x1, op.device, op.chunk % 2 == 1 ? " odd-chunk" : "");
    svg += fmt::format("<title>{} stage {} chunk {} microbatch {}: {:.3f} to {:.3f} ms</title>",
                       kind_name(op.kind), op.stage, op.chunk, op.microbatch, op.start_ns / 1e6,
                       op.end_ns / 1e6);
    svg += "</rect>\n";
    const std::string number = std::to_string(op.microbatch);
    if (x1 - x0 >= 6.0 * static_cast<double>(number.size()) + 2) {
      svg += fmt::format(
          "<text class=\"mb\" x=\"{:.2f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\" "
          "pointer-events=\"none\">{}</text>\n",
          (x0 + x1) / 2, row_top(op.device) + kRowHeight / 2.0 + 4, number);
    }
  }
}

// The aggregated drawing of report_render.h's kDefaultMaxBoxes rule.
void aggregated_boxes(std::string& svg, const RunRecord& run, const Scale& x, int devices,
                      int columns) {
  const double column_ns = (x.d1 - x.d0) / columns;
  std::vector<std::vector<const OpRecord*>> by_device(static_cast<std::size_t>(devices));
  for (const OpRecord& op : run.ops)
    by_device[static_cast<std::size_t>(op.device)].push_back(&op);
  std::vector<std::array<double, 4>> busy(static_cast<std::size_t>(columns));
  for (int d = 0; d < devices; ++d) {
    std::fill(busy.begin(), busy.end(), std::array<double, 4>{});
    for (const OpRecord* op : by_device[static_cast<std::size_t>(d)]) {
      const double s = static_cast<double>(op->start_ns), e = static_cast<double>(op->end_ns);
      const int c0 = std::clamp(static_cast<int>(s / column_ns), 0, columns - 1);
      const int c1 = std::clamp(static_cast<int>(e / column_ns), 0, columns - 1);
      for (int c = c0; c <= c1; ++c) {
        const double overlap = std::min(e, (c + 1) * column_ns) - std::max(s, c * column_ns);
        if (overlap > 0)
          busy[static_cast<std::size_t>(c)][static_cast<std::size_t>(op->kind)] += overlap;
      }
    }
    const auto column_kind = [&](int c) {
      const std::array<double, 4>& b = busy[static_cast<std::size_t>(c)];
      const auto top = std::max_element(b.begin(), b.end());
      const double total = b[0] + b[1] + b[2] + b[3];
      return total >= column_ns / 2 ? static_cast<int>(top - b.begin()) : -1;
    };
    for (int c = 0; c < columns;) {
      const int kind = column_kind(c);
      int end = c + 1;
      while (end < columns && column_kind(end) == kind)
        ++end;
      if (kind >= 0) {
        box(svg, static_cast<sim::OpKind>(kind), x.p0 + c, x.p0 + end, d, " aggregated");
        svg += "</rect>\n";
      }
      c = end;
    }
  }
}

}  // namespace

std::string timeline_svg(const RunRecord& run, const RenderOptions& options) {
  const int devices = device_count(run);
  const bool aggregated = run.ops.size() > options.max_boxes;
  const int width = kLeft + options.width_px + kRight;
  const double rows_bottom = row_top(devices) - kRowGap;
  const bool transfers_left_out = options.transfers && run.transfers.size() > options.max_boxes;
  const int captions = (aggregated ? 1 : 0) + (transfers_left_out ? 1 : 0);
  const int height = static_cast<int>(rows_bottom) + kAxisHeight + 16 * captions;
  const Scale x{0, static_cast<double>(end_time(run)), kLeft,
                static_cast<double>(kLeft + options.width_px)};
  std::string svg =
      svg_open(aggregated ? "timeline aggregated" : "timeline", width, height,
               fmt::format(" data-run=\"{}\" data-ops=\"{}\"", escape(run.name), run.ops.size()));
  svg += "<style>.odd-chunk{filter:brightness(0.85)}</style>\n";
  for (int d = 0; d < devices; ++d) {
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">device {}</text>\n",
                       kLeft - 6, row_top(d) + kRowHeight / 2.0 + 4, d);
    svg += fmt::format(
        "<rect class=\"idle\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" "
        "fill=\"{}\"/>\n",
        kLeft, row_top(d), options.width_px, kRowHeight, kIdleColour);
  }
  if (aggregated) {
    aggregated_boxes(svg, run, x, devices, options.width_px);
  } else {
    exact_boxes(svg, run, x);
  }
  if (options.transfers && !transfers_left_out) {
    for (const TransferRecord& t : run.transfers) {
      svg += fmt::format(
          "<line class=\"transfer\" x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" "
          "stroke=\"#333\" stroke-opacity=\"0.45\" stroke-width=\"0.8\"/>\n",
          x(static_cast<double>(t.start_ns)), row_top(t.src_device) + kRowHeight / 2.0,
          x(static_cast<double>(t.end_ns)), row_top(t.dst_device) + kRowHeight / 2.0);
    }
  }
  x_axis(svg, Scale{0, x.d1 / 1e6, x.p0, x.p1}, rows_bottom + 2, "time (ms)");
  if (aggregated) {
    svg += fmt::format(
        "<text class=\"caption\" x=\"{}\" y=\"{}\">{} ops, more than {}: drawn "
        "aggregated, one colour per 1 px column (the kind busy longest in it)"
        "</text>\n",
        kLeft, height - 4 - (transfers_left_out ? 16 : 0), run.ops.size(), options.max_boxes);
  }
  if (transfers_left_out) {
    svg += fmt::format(
        "<text class=\"caption\" x=\"{}\" y=\"{}\">{} transfers, more than {}: "
        "not drawn</text>\n",
        kLeft, height - 4, run.transfers.size(), options.max_boxes);
  }
  svg += "</svg>\n";
  return svg;
}

std::string memory_svg(const RunRecord& run, const RenderOptions& options) {
  const int devices = device_count(run);
  const int width = kLeft + options.width_px + kRight + kLegendWidth;
  const int height = kTop + kCurveHeight + kAxisHeight;
  double peak = 0;
  for (const MemoryRecord& m : run.memory)
    peak = std::max(peak, m.activation_memory);
  const Scale x{0, static_cast<double>(end_time(run)), kLeft,
                static_cast<double>(kLeft + options.width_px)};
  const Scale y{0, peak > 0 ? peak * 1.05 : 1, static_cast<double>(kTop + kCurveHeight),
                static_cast<double>(kTop)};
  std::vector<std::vector<const MemoryRecord*>> by_device(static_cast<std::size_t>(devices));
  for (const MemoryRecord& m : run.memory)
    by_device[static_cast<std::size_t>(m.device)].push_back(&m);
  bool aggregated = false;
  for (const auto& rows : by_device)
    aggregated = aggregated || rows.size() > options.max_boxes;
  std::string svg = svg_open(aggregated ? "memory aggregated" : "memory", width, height,
                             fmt::format(" data-run=\"{}\"", escape(run.name)));
  for (int d = 0; d < devices; ++d) {
    const auto& rows = by_device[static_cast<std::size_t>(d)];
    const char* colour = kPalette[static_cast<std::size_t>(d) % kPalette.size()];
    std::string points = fmt::format("{:.2f},{:.2f}", x.p0, y(0));
    double last = 0;
    if (rows.size() <= options.max_boxes) {
      for (const MemoryRecord* m : rows) {
        const double px = x(static_cast<double>(m->time_ns));
        points +=
            fmt::format(" {:.2f},{:.2f} {:.2f},{:.2f}", px, y(last), px, y(m->activation_memory));
        last = m->activation_memory;
      }
    } else {
      for (std::size_t k = 0; k < rows.size();) {
        const int column = static_cast<int>(x(static_cast<double>(rows[k]->time_ns)));
        double high = -std::numeric_limits<double>::infinity();
        for (; k < rows.size() &&
               static_cast<int>(x(static_cast<double>(rows[k]->time_ns))) == column;
             ++k) {
          high = std::max(high, rows[k]->activation_memory);
          last = rows[k]->activation_memory;
        }
        points += fmt::format(" {},{:.2f} {},{:.2f}", column, y(high), column, y(last));
      }
    }
    points += fmt::format(" {:.2f},{:.2f}", x.p1, y(last));
    svg += fmt::format(
        "<polyline class=\"memory\" data-device=\"{}\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
        d, colour, points);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">device {}</text>\n",
                       kLeft + options.width_px + kRight, kTop + 12 + 14 * d, colour, d);
  }
  y_axis(svg, y, kLeft, "activation memory");
  x_axis(svg, Scale{0, x.d1 / 1e6, x.p0, x.p1}, kTop + kCurveHeight, "time (ms)");
  svg += "</svg>\n";
  return svg;
}

std::string sweep_svg(const std::vector<SweepRow>& rows, SweepPlot plot) {
  const bool bubble = plot == SweepPlot::kBubbleVsMemory;
  const auto value = [&](const SweepRow& r) {
    return bubble ? r.bubble_rate : per_gpu_per_s(r.microbatches, r.pp, r.iteration_time_ms);
  };
  const std::vector<std::size_t> ok = ok_rows(rows);
  const std::vector<std::size_t> front =
      bubble ? sweep_front_bubble(rows) : sweep_front_throughput(rows);
  double x_max = 0, y_max = 0;
  for (const std::size_t i : ok) {
    x_max = std::max(x_max, rows[i].peak_activation_memory);
    y_max = std::max(y_max, value(rows[i]));
  }
  const int width = kLeft + kSweepWidth + kRight + kLegendWidth;
  const int height = kTop + kSweepHeight + kAxisHeight;
  const Scale x{0, x_max > 0 ? x_max * 1.05 : 1, kLeft, static_cast<double>(kLeft + kSweepWidth)};
  const Scale y{0, y_max > 0 ? y_max * 1.05 : 1, static_cast<double>(kTop + kSweepHeight),
                static_cast<double>(kTop)};
  std::string svg =
      svg_open("sweep", width, height,
               fmt::format(" data-plot=\"{}\" data-points=\"{}\" data-pareto=\"{}\"",
                           bubble ? "bubble" : "throughput", ok.size(), front.size()));
  std::map<std::string, std::size_t> schedule_colour;
  for (const std::size_t i : ok)
    schedule_colour.emplace(rows[i].schedule, 0);
  std::size_t next = 0;
  for (auto& [name, colour] : schedule_colour)
    colour = next++ % kPalette.size();
  // The front as a staircase through its points, in memory order.
  std::vector<std::size_t> ordered = front;
  std::sort(ordered.begin(), ordered.end(), [&](std::size_t a, std::size_t b) {
    return rows[a].peak_activation_memory < rows[b].peak_activation_memory;
  });
  std::string staircase;
  for (std::size_t k = 0; k < ordered.size(); ++k) {
    const double px = x(rows[ordered[k]].peak_activation_memory);
    const double py = y(value(rows[ordered[k]]));
    if (k > 0) staircase += fmt::format(" {:.2f},{:.2f}", px, y(value(rows[ordered[k - 1]])));
    staircase += fmt::format(" {:.2f},{:.2f}", px, py);
  }
  if (!staircase.empty()) {
    svg += fmt::format(
        "<polyline class=\"front\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.2\" points=\"{}\"/>\n",
        kFrontColour, staircase.substr(1));
  }
  std::vector<bool> on_front(rows.size(), false);
  for (const std::size_t i : front)
    on_front[i] = true;
  // Beyond kMaxSweepPoints rows, every front row and every k-th other row.
  const std::size_t every =
      std::max<std::size_t>(1, (ok.size() + kMaxSweepPoints - 1) / kMaxSweepPoints);
  std::size_t others = 0;
  for (const std::size_t i : ok) {
    if (!on_front[i] && others++ % every != 0) continue;
    const SweepRow& r = rows[i];
    const char* colour = kPalette[schedule_colour[r.schedule]];
    svg += fmt::format(
        "<circle class=\"{}\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\" fill=\"{}\" "
        "fill-opacity=\"0.75\"{}>",
        on_front[i] ? "point pareto" : "point", x(r.peak_activation_memory), y(value(r)),
        on_front[i] ? 5 : 3, colour,
        on_front[i] ? fmt::format(" stroke=\"{}\" stroke-width=\"2\"", kFrontColour) : "");
    if (ok.size() <= kMaxPointTitles) {
      svg += fmt::format("<title>row {}: {}</title>", r.index, escape(r.key));
    }
    svg += "</circle>\n";
  }
  std::size_t line = 0;
  for (const auto& [name, colour] : schedule_colour) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">&#9679; {}</text>\n",
                       kLeft + kSweepWidth + kRight, kTop + 12 + 14 * line++, kPalette[colour],
                       escape(name));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">&#9675; Pareto front</text>\n",
                     kLeft + kSweepWidth + kRight, kTop + 12 + 14 * line, kFrontColour);
  if (every > 1) {
    svg += fmt::format(
        "<text class=\"caption\" x=\"{}\" y=\"{}\">{} rows: the front and every "
        "{}-th other row drawn</text>\n",
        kLeft + 10, kTop + 12, ok.size(), every);
  }
  y_axis(svg, y, kLeft, bubble ? "bubble rate" : "microbatches per GPU per second");
  x_axis(svg, x, kTop + kSweepHeight, "peak activation memory");
  svg += "</svg>\n";
  return svg;
}

}  // namespace bubblesim::analysis
