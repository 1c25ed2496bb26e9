#include "analysis/validation.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "sim/cost_model.h"
#include "sim/error.h"
#include "sim/simulation.h"

namespace bubblesim::analysis {

namespace {

constexpr sim::TimeNs kNsPerUnit = 1000;  // the files' integer time unit, taken as a µs

// A row of a CSV file by column name, with the file and line to name in errors.
class CsvRow {
 public:
  CsvRow(const std::filesystem::path& file, int line, const std::vector<std::string>& header,
         const std::string& text)
      : file_(file), line_(line) {
    std::stringstream in(text);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(in, cell, ','))
      cells.push_back(cell);
    if (cells.size() != header.size()) {
      fail("has " + std::to_string(cells.size()) + " fields, expected " +
           std::to_string(header.size()));
    }
    for (std::size_t i = 0; i < header.size(); ++i)
      cells_[header[i]] = cells[i];
  }

  const std::string& text(const std::string& column) const {
    const auto it = cells_.find(column);
    if (it == cells_.end()) fail("has no column '" + column + "'");
    return it->second;
  }
  // Space-separated numbers (one or more); "nan" reads as NaN where `nan_ok`.
  std::vector<double> numbers(const std::string& column, bool nan_ok = false) const {
    std::vector<double> out;
    std::stringstream in(text(column));
    std::string word;
    while (in >> word) {
      if (nan_ok && word == "nan") {
        out.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      double value = 0;
      const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (ec != std::errc() || end != word.data() + word.size() || !std::isfinite(value) ||
          value < 0) {
        fail("column '" + column + "': '" + word + "' is not a number >= 0");
      }
      out.push_back(value);
    }
    if (out.empty()) fail("column '" + column + "' is empty");
    return out;
  }
  double number(const std::string& column, bool nan_ok = false) const {
    const std::vector<double> values = numbers(column, nan_ok);
    if (values.size() != 1) fail("column '" + column + "' must hold one number");
    return values.front();
  }
  int integer(const std::string& column, int lowest, int highest) const {
    const double value = number(column);
    if (value != std::floor(value) || value < lowest || value > highest) {
      fail("column '" + column + "' must be an integer in [" + std::to_string(lowest) + ", " +
           std::to_string(highest) + "]");
    }
    return static_cast<int>(value);
  }
  int line() const { return line_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_.string() + ":" + std::to_string(line_) + ": " + what);
  }

 private:
  std::filesystem::path file_;
  int line_;
  std::map<std::string, std::string> cells_;
};

// Calls `each` with every data row of `file`.
template <typename Each>
void for_each_row(const std::filesystem::path& file, Each each) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot read the reference set");
  std::string text;
  if (!std::getline(in, text)) throw Error(file.string() + ":1: no header");
  if (!text.empty() && text.back() == '\r') text.pop_back();
  std::vector<std::string> header;
  std::stringstream columns(text);
  for (std::string name; std::getline(columns, name, ',');)
    header.push_back(name);
  for (int line = 2; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (!text.empty()) each(CsvRow(file, line, header, text));
  }
}

sim::TimeNs to_ns(double units) {
  return static_cast<sim::TimeNs>(std::llround(units * static_cast<double>(kNsPerUnit)));
}

// One input to run: the costs per device (whole-device shares), the limit and the reference.
struct Input {
  std::string family;
  int line = 0;
  int pp = 0, microbatches = 0, chunks = 1;
  std::vector<sim::DeviceCosts> devices;
  double mem_limit = 0;     // 0: the schedule's default
  double memory_limit = 0;  // the limit that holds (mem_limit, or the default's value)
  double reference_cost = 0;
};

// A row's per-device list: one value for every device, or one per device.
std::vector<double> per_device(const CsvRow& row, const std::string& column, int p) {
  std::vector<double> values = row.numbers(column);
  if (values.size() == 1) values.assign(static_cast<std::size_t>(p), values.front());
  if (values.size() != static_cast<std::size_t>(p)) {
    row.fail("column '" + column + "' has " + std::to_string(values.size()) +
             " values, expected 1 or p = " + std::to_string(p));
  }
  return values;
}

Input zb_auto_input(const CsvRow& row) {
  Input in;
  in.family = row.text("kind");
  in.line = row.line();
  in.pp = row.integer("p", 1, 1024);
  in.microbatches = row.integer("m", 1, 1 << 16);
  const std::vector<double> f = per_device(row, "f", in.pp), b = per_device(row, "b", in.pp),
                            w = per_device(row, "w", in.pp);
  const double comm = row.number("comm"), m_b = row.number("m_b"), m_w = row.number("m_w");
  for (int d = 0; d < in.pp; ++d) {
    const auto i = static_cast<std::size_t>(d);
    in.devices.push_back({to_ns(f[i]), to_ns(b[i]), to_ns(w[i]), to_ns(comm), m_b, m_w});
  }
  in.mem_limit = row.number("mem_limit_factor") * in.pp * m_b;
  in.memory_limit = in.mem_limit;
  in.reference_cost = row.number("ref_cost", true);
  return in;
}

// V rows give one chunk's times and memory; a device's share is twice that (comm is per hop).
Input v_input(const CsvRow& row, const std::string& family, const char* suffix, double m_b_whole,
              double m_w_whole, const char* reference_column) {
  Input in;
  in.family = family;
  in.line = row.line();
  in.pp = row.integer("p", 1, 1024);
  in.microbatches = row.integer("m", 1, 1 << 16);
  in.chunks = 2;
  auto whole = [&](const char* kind) { return to_ns(2 * row.number(std::string(kind) + suffix)); };
  const sim::DeviceCosts costs{whole("f"), whole("b"), whole("w"), to_ns(row.number("comm")),
                               m_b_whole,  m_w_whole};
  in.devices.assign(static_cast<std::size_t>(in.pp), costs);
  in.reference_cost = row.number(reference_column);
  // The schedules' default limits, in whole-stage M_B (sim/schedules/v_shape.h).
  const double whole_stages = family == "zb-v"     ? in.pp
                              : family == "v-half" ? (in.pp + 2) / 2.0
                                                   : static_cast<double>((in.pp + 4) / 3);
  in.memory_limit = whole_stages * m_b_whole;
  return in;
}

ValidationRow run_input(const Input& in, const sim::ScheduleRegistry& registry, bool improve) {
  const sim::PerDeviceCostModel costs(in.devices, in.chunks);
  sim::ScheduleParams params;
  params.pp = in.pp;
  params.microbatches = in.microbatches;
  params.chunks = in.chunks;
  params.costs = &costs;
  params.mem_limit = in.mem_limit;
  params.improve = improve;
  const sim::Schedule schedule = registry.get(in.family).generate(params);
  const sim::Metrics metrics = sim::simulate(schedule, costs).metrics;

  ValidationRow row;
  row.family = in.family;
  row.line = in.line;
  row.pp = in.pp;
  row.microbatches = in.microbatches;
  row.cost = static_cast<double>(metrics.max_device_span_ns) / kNsPerUnit;
  row.reference_cost = in.reference_cost;
  double work_units = 0;
  for (const sim::DeviceCosts& d : in.devices) {
    work_units =
        std::max(work_units, static_cast<double>(in.microbatches) *
                                 static_cast<double>(d.f_ns + d.b_ns + d.w_ns) / kNsPerUnit);
  }
  row.bubble_rate = 1 - work_units / row.cost;
  row.reference_bubble_rate = 1 - work_units / row.reference_cost;
  row.peak_activation = metrics.peak_activation_memory;
  row.memory_limit = in.memory_limit;
  return row;
}

}  // namespace

std::vector<ValidationRow> run_reference_sets(
    const std::filesystem::path& dir, const sim::ScheduleRegistry& registry,
    const std::function<void(std::size_t, std::size_t)>& progress, bool improve, int jobs) {
  std::vector<Input> inputs;
  for_each_row(dir / "zb_auto_visible.csv",
               [&](const CsvRow& row) { inputs.push_back(zb_auto_input(row)); });
  for_each_row(dir / "zbv_visible.csv", [&](const CsvRow& row) {
    // M_B and M_W of a whole stage: both chunks'.
    inputs.push_back(v_input(row, "zb-v", "_chunk", 2 * row.number("m_b_chunk"),
                             2 * row.number("m_w_chunk"), "ref_cost"));
  });
  for_each_row(dir / "v_half_min_visible.csv", [&](const CsvRow& row) {
    const std::string family = row.text("schedule");
    if (family != "v-half" && family != "v-min") row.fail("unknown schedule '" + family + "'");
    // M_B = M_W = 2 per whole stage: the peak reads in chunk units, as the file's.
    inputs.push_back(v_input(row, family, "", 2, 2, "max_stage_span"));
  });
  std::vector<ValidationRow> rows(inputs.size());
  std::mutex progress_mutex;
  std::size_t done = 0;
  tbb::task_arena arena(jobs == 0 ? tbb::task_arena::automatic : jobs);
  arena.execute([&] {
    // One row a task: rows differ in cost by a thousand times.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, inputs.size(), 1),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t k = range.begin(); k != range.end(); ++k) {
                          rows[k] = run_input(inputs[k], registry, improve);
                          const std::lock_guard<std::mutex> lock(progress_mutex);
                          ++done;
                          if (progress) progress(done, inputs.size());
                        }
                      });
  });
  return rows;
}

std::vector<FamilySummary> summarize(const std::vector<ValidationRow>& rows) {
  std::vector<FamilySummary> out;
  for (const ValidationRow& row : rows) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const FamilySummary& s) { return s.family == row.family; });
    if (it == out.end()) {
      out.push_back(FamilySummary{row.family});
      it = std::prev(out.end());
    }
    FamilySummary& s = *it;
    if (row.reference_failed()) {
      ++s.reference_failed;
      s.found_where_reference_failed += std::isfinite(row.cost) ? 1 : 0;
      continue;
    }
    ++s.rows;
    s.at_or_below += row.cost <= row.reference_cost ? 1 : 0;
    s.within_tenth_percent += row.cost <= 1.001 * row.reference_cost ? 1 : 0;
    s.mean_ratio += row.ratio();
    s.worst_ratio = std::max(s.worst_ratio, row.ratio());
    s.mean_bubble_rate += row.bubble_rate;
    s.mean_reference_bubble_rate += row.reference_bubble_rate;
  }
  for (FamilySummary& s : out) {
    if (s.rows == 0) continue;
    s.mean_ratio /= s.rows;
    s.mean_bubble_rate /= s.rows;
    s.mean_reference_bubble_rate /= s.rows;
  }
  return out;
}

}  // namespace bubblesim::analysis
