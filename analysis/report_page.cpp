// The report page and files of analysis/report_render.h: the self-contained HTML page (tables,
// the plots of report_render.cpp inlined) and the SVG files, written atomically.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "analysis/report_render.h"
#include "analysis/svg.h"
#include "analysis/throughput.h"
#include "sim/output_file.h"

namespace bubblesim::analysis {

namespace {

constexpr const char* kCss = R"(body{font-family:sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.best{font-weight:bold}.note{color:#555;font-size:12px}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #aaa;font-size:12px}
svg{display:block;margin:4px 0;max-width:100%;height:auto}
)";

std::string cell(const std::string& text, bool left = false, bool best = false) {
  return fmt::format("<td class=\"{}{}\">{}</td>", left ? "l" : "", best ? " best" : "",
                     escape(text));
}

std::string runs_table(const ReportData& data) {
  double best_time = std::numeric_limits<double>::infinity(), best_bubble = best_time,
         best_memory = best_time, best_throughput = 0;
  const auto throughput = [](const RunRecord& r) {
    return per_gpu_per_s(r.parameters.microbatches, r.parameters.pp, r.summary.iteration_time_ms);
  };
  for (const RunRecord& r : data.runs) {
    best_time = std::min(best_time, r.summary.iteration_time_ms);
    best_bubble = std::min(best_bubble, r.summary.bubble_rate);
    best_memory = std::min(best_memory, r.summary.peak_activation_memory);
    best_throughput = std::max(best_throughput, throughput(r));
  }
  std::string html =
      "<table class=\"runs\"><tr><th class=\"l\">run</th><th class=\"l\">schedule</th><th>p</th>"
      "<th>m</th><th>v</th><th>iteration (ms)</th><th>bubble rate</th><th>peak activation "
      "memory</th><th>microbatches/GPU/s</th><th>ops</th><th>transfers</th></tr>\n";
  for (const RunRecord& r : data.runs) {
    const RunSummaryMetrics& s = r.summary;
    html +=
        "<tr>" + cell(r.name, true) + cell(r.parameters.schedule, true) +
        cell(std::to_string(r.parameters.pp)) + cell(std::to_string(r.parameters.microbatches)) +
        cell(std::to_string(r.parameters.chunks)) +
        cell(fmt::format("{:.3f}", s.iteration_time_ms), false, s.iteration_time_ms == best_time) +
        cell(fmt::format("{:.4f}", s.bubble_rate), false, s.bubble_rate == best_bubble) +
        cell(fmt::format("{:.4g}", s.peak_activation_memory), false,
             s.peak_activation_memory == best_memory) +
        cell(fmt::format("{:.3f}", throughput(r)), false, throughput(r) == best_throughput) +
        cell(std::to_string(r.ops.size())) + cell(std::to_string(r.transfers.size())) + "</tr>\n";
  }
  html +=
      "</table>\n<p class=\"note\">Bold: best of the column. Memory in each run's activation "
      "unit (the unit of m_b). Microbatches per GPU per second: m / (p &times; iteration "
      "time).</p>\n";
  return html;
}

std::string sweep_table(const ReportData& data, const std::vector<std::size_t>& which) {
  std::string html =
      "<table class=\"pareto\"><tr><th>row</th><th class=\"l\">schedule</th><th>p</th><th>m</th>"
      "<th>v</th><th>mem limit</th><th>peak memory</th><th>bubble rate</th><th>iteration "
      "(ms)</th><th>microbatches/GPU/s</th></tr>\n";
  for (const std::size_t i : which) {
    const SweepRow& r = data.sweep[i];
    html += "<tr>" + cell(std::to_string(r.index)) + cell(r.schedule, true) +
            cell(std::to_string(r.pp)) + cell(std::to_string(r.microbatches)) +
            cell(std::to_string(r.chunks)) + cell(fmt::format("{:g}", r.mem_limit)) +
            cell(fmt::format("{:.4g}", r.peak_activation_memory)) +
            cell(fmt::format("{:.4f}", r.bubble_rate)) +
            cell(fmt::format("{:.3f}", r.iteration_time_ms)) +
            cell(fmt::format("{:.3f}", per_gpu_per_s(r.microbatches, r.pp, r.iteration_time_ms))) +
            "</tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace

std::string report_html(const ReportData& data, const RenderOptions& options) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
      "bubblesim report: " +
      escape(data.path) + "</title>\n<style>\n" + kCss + "</style></head><body>\n";
  html += "<h1>bubblesim report: " + escape(data.path) + "</h1>\n";
  html += fmt::format(
      "<p class=\"note\">format_version {}; last written by bubblesim {}: <code>{}</code></p>\n",
      data.format_version, escape(data.writer.bubblesim_version), escape(data.writer.command_line));
  html += "<h2>Runs</h2>\n";
  html += data.runs.empty() ? std::string("<p>No runs.</p>\n") : runs_table(data);
  if (!data.runs.empty()) {
    html += "<p class=\"legend\">";
    for (const sim::OpKind kind :
         {sim::OpKind::F, sim::OpKind::B, sim::OpKind::W, sim::OpKind::BW}) {
      html += fmt::format("<span style=\"background:{}\">{}</span>",
                          kOpColours[static_cast<std::size_t>(kind)], kind_name(kind));
    }
    html += fmt::format(
        "<span style=\"background:{}\">idle</span> numbers: microbatch; darker "
        "boxes: odd model chunks</p>\n",
        kIdleColour);
  }
  for (const RunRecord& run : data.runs) {
    html += fmt::format(
        "<section class=\"run\">\n<h2>{}: {} p={} m={} v={}, bubble rate {:.4f}, iteration "
        "{:.3f} ms</h2>\n",
        escape(run.name), escape(run.parameters.schedule), run.parameters.pp,
        run.parameters.microbatches, run.parameters.chunks, run.summary.bubble_rate,
        run.summary.iteration_time_ms);
    html += timeline_svg(run, options);
    html += memory_svg(run, options);
    html += "</section>\n";
  }
  if (data.has_sweep) {
    const std::vector<std::size_t> ok = ok_rows(data.sweep);
    html += fmt::format(
        "<section class=\"sweep\">\n<h2>Sweep table: {} configurations, {} ok, {} failed</h2>\n",
        data.sweep.size(), ok.size(), data.sweep.size() - ok.size());
    html += sweep_svg(data.sweep, SweepPlot::kBubbleVsMemory);
    html += "<p>Pareto front, peak memory against bubble rate:</p>\n" +
            sweep_table(data, sweep_front_bubble(data.sweep));
    html += sweep_svg(data.sweep, SweepPlot::kThroughputVsMemory);
    html += "<p>Pareto front, peak memory against throughput:</p>\n" +
            sweep_table(data, sweep_front_throughput(data.sweep));
    html += "</section>\n";
  }
  html += "</body></html>\n";
  return html;
}

void write_text_file(sim::OutputFile& out, const std::string& text) {
  std::ofstream file(out.temporary(), std::ios::binary | std::ios::trunc);
  if (file) file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.flush();
  if (!file) throw Error(out.path() + ": cannot write the file (" + std::strerror(errno) + ")");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  sim::OutputFile out(path);
  write_text_file(out, text);
  out.commit();
}

std::vector<std::string> write_svg_files(const std::string& dir, const ReportData& data,
                                         const RenderOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error(dir + ": cannot create the folder for --svg (" +
                (ec ? ec.message() : std::string("not a folder")) + ")");
  }
  const auto file_name = [](std::string name) {
    for (char& c : name) {
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
      if (!plain) c = '_';
    }
    return name;
  };
  std::vector<std::pair<std::string, std::string>> files;
  const std::filesystem::path folder(dir);
  std::set<std::string> used;
  for (const RunRecord& run : data.runs) {
    // Two names that differ only in replaced characters get distinct files: NAME, NAME-2, ...
    std::string stem = file_name(run.name);
    for (int n = 2; !used.insert(stem).second; ++n)
      stem = file_name(run.name) + "-" + std::to_string(n);
    files.emplace_back((folder / (stem + ".timeline.svg")).string(), timeline_svg(run, options));
    files.emplace_back((folder / (stem + ".memory.svg")).string(), memory_svg(run, options));
  }
  if (data.has_sweep) {
    files.emplace_back((folder / "sweep-bubble.svg").string(),
                       sweep_svg(data.sweep, SweepPlot::kBubbleVsMemory));
    files.emplace_back((folder / "sweep-throughput.svg").string(),
                       sweep_svg(data.sweep, SweepPlot::kThroughputVsMemory));
  }
  std::vector<std::string> paths;
  for (const auto& [path, text] : files) {
    write_file_atomically(path, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + text);
    paths.push_back(path);
  }
  return paths;
}

}  // namespace bubblesim::analysis
