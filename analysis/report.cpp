#include "analysis/report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "analysis/throughput.h"

namespace bubblesim::analysis {

namespace {

// Pareto rows listed in the text report; the rest are counted.
constexpr std::size_t kMaxFrontRowsShown = 20;

double run_throughput(const RunRecord& run) {
  return per_gpu_per_s(run.parameters.microbatches, run.parameters.pp,
                       run.summary.iteration_time_ms);
}

double row_throughput(const SweepRow& row) {
  return per_gpu_per_s(row.microbatches, row.pp, row.iteration_time_ms);
}

void write_runs_table(std::ostream& out, const ReportData& data) {
  if (data.runs.empty()) {
    fmt::print(out, "no runs\n");
    return;
  }
  std::size_t name_width = 3, schedule_width = 8;
  double best_time = std::numeric_limits<double>::infinity(), best_bubble = best_time,
         best_memory = best_time, best_throughput = 0;
  for (const RunRecord& r : data.runs) {
    name_width = std::max(name_width, r.name.size());
    schedule_width = std::max(schedule_width, r.parameters.schedule.size());
    best_time = std::min(best_time, r.summary.iteration_time_ms);
    best_bubble = std::min(best_bubble, r.summary.bubble_rate);
    best_memory = std::min(best_memory, r.summary.peak_activation_memory);
    best_throughput = std::max(best_throughput, run_throughput(r));
  }
  const auto mark = [](bool best) { return best ? '*' : ' '; };
  fmt::print(out, "{:<{}}  {:<{}}  {:>4}  {:>5}  {:>3}  {:>14}  {:>12}  {:>12}  {:>14}  {:>8}\n",
             "run", name_width, "schedule", schedule_width, "p", "m", "v", "iteration ms",
             "bubble rate", "peak memory", "mb/GPU/s", "ops");
  for (const RunRecord& r : data.runs) {
    const RunSummaryMetrics& s = r.summary;
    const double throughput = run_throughput(r);
    fmt::print(out,
               "{:<{}}  {:<{}}  {:>4}  {:>5}  {:>3}  {:>13.3f}{}  {:>11.4f}{}  {:>11.4g}{}  "
               "{:>13.3f}{}  {:>8}\n",
               r.name, name_width, r.parameters.schedule, schedule_width, r.parameters.pp,
               r.parameters.microbatches, r.parameters.chunks, s.iteration_time_ms,
               mark(s.iteration_time_ms == best_time), s.bubble_rate,
               mark(s.bubble_rate == best_bubble), s.peak_activation_memory,
               mark(s.peak_activation_memory == best_memory), throughput,
               mark(throughput == best_throughput), r.ops.size());
  }
  fmt::print(out,
             "peak memory: activations, in the unit of each run's m_b; mb/GPU/s: microbatches per "
             "GPU per second, m / (p * iteration time); * best of the column\n");
}

void write_sweep_rows(std::ostream& out, const std::vector<SweepRow>& rows,
                      const std::vector<std::size_t>& which) {
  fmt::print(out, "  {:>6}  {:<12}  {:>4}  {:>5}  {:>3}  {:>10}  {:>12}  {:>11}  {:>12}  {:>10}\n",
             "index", "schedule", "p", "m", "v", "mem limit", "peak memory", "bubble rate",
             "iteration ms", "mb/GPU/s");
  for (std::size_t k = 0; k < which.size() && k < kMaxFrontRowsShown; ++k) {
    const SweepRow& r = rows[which[k]];
    fmt::print(out,
               "  {:>6}  {:<12}  {:>4}  {:>5}  {:>3}  {:>10.4g}  {:>12.4g}  {:>11.4f}  {:>12.3f}  "
               "{:>10.3f}\n",
               r.index, r.schedule, r.pp, r.microbatches, r.chunks, r.mem_limit,
               r.peak_activation_memory, r.bubble_rate, r.iteration_time_ms, row_throughput(r));
  }
  if (which.size() > kMaxFrontRowsShown) {
    fmt::print(out, "  ... and {} more (--json lists them all)\n",
               which.size() - kMaxFrontRowsShown);
  }
}

void write_sweep_summary(std::ostream& out, const ReportData& data) {
  const std::vector<std::size_t> ok = ok_rows(data.sweep);
  fmt::print(out, "\nsweep table: {} configurations, {} ok, {} failed\n", data.sweep.size(),
             ok.size(), data.sweep.size() - ok.size());
  if (ok.empty()) return;
  const auto by = [&](auto better) {
    return *std::min_element(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
      return better(data.sweep[a], data.sweep[b]);
    });
  };
  const SweepRow& fastest = data.sweep[by(
      [](const SweepRow& a, const SweepRow& b) { return row_throughput(a) > row_throughput(b); })];
  const SweepRow& fewest = data.sweep[by(
      [](const SweepRow& a, const SweepRow& b) { return a.bubble_rate < b.bubble_rate; })];
  fmt::print(out, "highest throughput: {:.3f} mb/GPU/s, row {}: {}\n", row_throughput(fastest),
             fastest.index, fastest.key);
  fmt::print(out, "lowest bubble rate: {:.4f}, row {}: {}\n", fewest.bubble_rate, fewest.index,
             fewest.key);
  const std::vector<std::size_t> bubble_front = sweep_front_bubble(data.sweep);
  fmt::print(out, "Pareto front, peak memory vs bubble rate ({} rows):\n", bubble_front.size());
  write_sweep_rows(out, data.sweep, bubble_front);
  const std::vector<std::size_t> throughput_front = sweep_front_throughput(data.sweep);
  fmt::print(out, "Pareto front, peak memory vs throughput ({} rows):\n", throughput_front.size());
  write_sweep_rows(out, data.sweep, throughput_front);
}

using JsonWriter = rapidjson::Writer<rapidjson::OStreamWrapper>;

void json_key(JsonWriter& w, const char* key) {
  w.Key(key);
}

void json_string(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

void json_double(JsonWriter& w, const char* key, double value) {
  w.Key(key);
  if (std::isfinite(value)) {
    w.Double(value);
  } else {
    w.Null();  // JSON has no infinity
  }
}

void json_indices(JsonWriter& w, const char* key, const std::vector<SweepRow>& rows,
                  const std::vector<std::size_t>& which) {
  w.Key(key);
  w.StartArray();
  for (const std::size_t i : which)
    w.Int(rows[i].index);
  w.EndArray();
}

}  // namespace

ReportData load_report(const std::string& path) {
  const ResultsReader reader(path);
  ReportData data;
  data.path = path;
  data.format_version = reader.format_version();
  data.writer = reader.writer();
  for (const std::string& name : reader.run_names())
    data.runs.push_back(reader.read_run(name));
  data.has_sweep = reader.has_sweep_table();
  if (data.has_sweep) data.sweep = reader.read_sweep_table();
  return data;
}

std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points) {
  std::vector<std::size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return points[a] < points[b]; });
  // Walk x ascending; within a group of equal x only the smallest y can be on the front, and
  // only when it is strictly below every y seen at smaller x.
  std::vector<std::size_t> front;
  double best_y = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < order.size();) {
    std::size_t end = g;
    while (end < order.size() && points[order[end]].first == points[order[g]].first)
      ++end;
    const double group_min = points[order[g]].second;
    if (group_min < best_y) {
      for (std::size_t k = g; k < end && points[order[k]].second == group_min; ++k)
        front.push_back(order[k]);
      best_y = group_min;
    }
    g = end;
  }
  std::sort(front.begin(), front.end());
  return front;
}

std::vector<std::size_t> ok_rows(const std::vector<SweepRow>& rows) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].status == "ok") ok.push_back(i);
  }
  return ok;
}

namespace {

template <class Y>
std::vector<std::size_t> sweep_front(const std::vector<SweepRow>& rows, Y y) {
  const std::vector<std::size_t> ok = ok_rows(rows);
  std::vector<std::pair<double, double>> points;
  for (const std::size_t i : ok)
    points.emplace_back(rows[i].peak_activation_memory, y(rows[i]));
  std::vector<std::size_t> front;
  for (const std::size_t k : pareto_front(points))
    front.push_back(ok[k]);
  return front;
}

}  // namespace

std::vector<std::size_t> sweep_front_bubble(const std::vector<SweepRow>& rows) {
  return sweep_front(rows, [](const SweepRow& r) { return r.bubble_rate; });
}

std::vector<std::size_t> sweep_front_throughput(const std::vector<SweepRow>& rows) {
  return sweep_front(rows, [](const SweepRow& r) { return -row_throughput(r); });
}

void write_report_text(std::ostream& out, const ReportData& data) {
  fmt::print(out, "{}: bubblesim results (format_version {}), {} run{}{}\n", data.path,
             data.format_version, data.runs.size(), data.runs.size() == 1 ? "" : "s",
             data.has_sweep ? ", a sweep table" : "");
  write_runs_table(out, data);
  if (data.has_sweep) write_sweep_summary(out, data);
}

void write_report_json(std::ostream& out, const ReportData& data) {
  rapidjson::OStreamWrapper stream(out);
  JsonWriter w(stream);
  w.StartObject();
  json_string(w, "file", data.path);
  json_key(w, "format_version");
  w.Int(data.format_version);
  json_key(w, "runs");
  w.StartArray();
  for (const RunRecord& r : data.runs) {
    w.StartObject();
    json_string(w, "name", r.name);
    json_string(w, "schedule", r.parameters.schedule);
    json_key(w, "pp");
    w.Int(r.parameters.pp);
    json_key(w, "microbatches");
    w.Int(r.parameters.microbatches);
    json_key(w, "chunks");
    w.Int(r.parameters.chunks);
    json_double(w, "iteration_time_ms", r.summary.iteration_time_ms);
    json_double(w, "max_device_span_ms", r.summary.max_device_span_ms);
    json_double(w, "bubble_rate", r.summary.bubble_rate);
    json_double(w, "peak_activation_memory", r.summary.peak_activation_memory);
    json_double(w, "microbatches_per_gpu_per_s", run_throughput(r));
    json_key(w, "ops");
    w.Uint64(r.ops.size());
    json_key(w, "transfers");
    w.Uint64(r.transfers.size());
    w.EndObject();
  }
  w.EndArray();
  json_key(w, "sweep");
  if (!data.has_sweep) {
    w.Null();
  } else {
    const std::size_t ok = ok_rows(data.sweep).size();
    w.StartObject();
    json_key(w, "rows");
    w.Uint64(data.sweep.size());
    json_key(w, "ok");
    w.Uint64(ok);
    json_key(w, "errors");
    w.Uint64(data.sweep.size() - ok);
    json_indices(w, "pareto_bubble_vs_memory", data.sweep, sweep_front_bubble(data.sweep));
    json_indices(w, "pareto_throughput_vs_memory", data.sweep, sweep_front_throughput(data.sweep));
    w.EndObject();
  }
  w.EndObject();
  stream.Flush();
  out << '\n';
}

}  // namespace bubblesim::analysis
