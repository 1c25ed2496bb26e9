// `bubblesim sweep STUDY.yaml --out FILE.h5` (docs/sweeps.md): every configuration of a study,
// simulated in parallel with oneTBB, written as /sweep/table in batches through the atomic
// writer so that Ctrl-C or --limit leaves a valid file that a rerun resumes.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <unordered_map>

#include "analysis/results_file.h"
#include "analysis/study.h"
#include "sim/cli/commands.h"
#include "sim/cli/progress.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

using Clock = std::chrono::steady_clock;

// Rows are written at least this often while the sweep runs (and when it stops).
constexpr double kWriteEverySeconds = 5;

// A resumed table whose rows' indices no longer match the study is matched by key up to this
// many configurations (beyond, --restart).
constexpr std::size_t kMaxKeyedResume = 2'000'000;

// Set by SIGINT. A signal handler can only reach static storage: this is the one mutable
// global, and only SigintGuard's handler writes it.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  // A second Ctrl-C ends the program at once (the file then holds the last batch written).
  std::signal(SIGINT, SIG_DFL);
}

// Installs on_sigint for its lifetime and restores the previous handler after.
class SigintGuard {
 public:
  SigintGuard() : previous_(std::signal(SIGINT, on_sigint)) { g_interrupted.store(false); }
  ~SigintGuard() { std::signal(SIGINT, previous_); }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  void (*previous_)(int);
};

// The table's inputs of a configuration as the study gives them, for a row whose run failed
// before its inputs were read.
analysis::SweepRow row_from_settings(const analysis::StudyConfiguration& c, int index) {
  analysis::SweepRow row;
  row.index = index;
  row.key = c.key();
  const auto text = [&](const char* key) {
    const analysis::StudySetting* s = c.find(key);
    return s != nullptr ? s->value : std::string();
  };
  const auto number = [&](const char* key) {
    const std::string t = text(key);
    try {
      return t.empty() ? 0.0 : std::stod(t.substr(0, t.find(',')));
    } catch (const std::exception&) {
      return 0.0;
    }
  };
  row.schedule = text("schedule");
  row.pp = static_cast<std::int32_t>(number("pp"));
  row.microbatches = static_cast<std::int32_t>(number("microbatches"));
  row.chunks = static_cast<std::int32_t>(number("chunks"));
  row.f_ms = number("f");
  row.b_ms = number("b");
  row.w_ms = number("w");
  row.comm_ms = number("comm");
  row.m_b = number("m-b");
  row.m_w = number("m-w");
  row.mem_limit = number("mem-limit");
  row.model = text("model");
  row.gpu = text("gpu");
  row.cluster = text("cluster");
  row.dp = std::max(1, static_cast<std::int32_t>(number("dp")));
  return row;
}

// The options of `bubblesim simulate` that configuration `c` stands for.
po::variables_map configuration_options(const analysis::StudyConfiguration& c,
                                        const po::options_description& run_options) {
  std::vector<std::string> args;
  for (const analysis::StudySetting& s : c.settings) {
    if (s.key == "schedule") continue;
    // In a study, mem-limit 0 names the schedule's default (an axis [0, inf]: default or none);
    // the option itself refuses an explicit 0.
    if (s.key == "mem-limit" && std::strtod(s.value.c_str(), nullptr) == 0) continue;
    args.push_back("--" + s.key);
    args.push_back(s.value);
  }
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(run_options).run(), vm);
  po::notify(vm);
  return vm;
}

// Simulates configuration `c` as `bubblesim simulate` would with its settings as options (a
// chunks setting applies only to schedules that take chunks, as in compare); with a
// `record_as` name the run keeps its record for the results file.
RunSummary simulate_settings(const analysis::StudyConfiguration& c, const RunInputs& in,
                             const sim::ScheduleRegistry& registry,
                             const std::string& record_as = "",
                             const std::string& command_line = "") {
  const sim::ScheduleGenerator& generator = registry.get(c.find("schedule")->value);
  return simulate_generated(generator, params_for(in, generator, true), in, record_as,
                            command_line);
}

// Simulates configuration `index` (simulate_settings). Never throws: a configuration that
// cannot run is a row with status "error".
analysis::SweepRow simulate_configuration(const analysis::StudyConfiguration& c, int index,
                                          const po::options_description& run_options,
                                          const sim::ScheduleRegistry& registry) {
  analysis::SweepRow row = row_from_settings(c, index);
  try {
    const po::variables_map vm = configuration_options(c, run_options);
    const RunInputs in = read_run_inputs(vm);
    const RunSummary run = simulate_settings(c, in, registry);
    const sim::DeviceCosts& d0 = in.device_costs.front();
    row.pp = run.params.pp;
    row.microbatches = run.params.microbatches;
    row.chunks = run.params.chunks;
    row.f_ms = sim::ns_to_ms(d0.f_ns);
    row.b_ms = sim::ns_to_ms(d0.b_ns);
    row.w_ms = sim::ns_to_ms(d0.w_ns);
    row.comm_ms = sim::ns_to_ms(d0.comm_ns);
    row.m_b = d0.m_b;
    row.m_w = d0.m_w;
    row.mem_limit = in.mem_limit;
    if (!row.model.empty()) row.gpu = vm["gpu"].as<std::string>();
    row.iteration_time_ms = sim::ns_to_ms(iteration_time_ns(run));
    row.max_device_span_ms = sim::ns_to_ms(run.metrics.max_device_span_ns);
    row.bubble_rate = run.metrics.bubble_rate;
    row.peak_activation_memory = run.metrics.peak_activation_memory;
    row.dp = run.dp;
    if (!run.static_memory_bytes.empty()) {
      row.peak_memory_bytes = max_peak_memory_bytes(run);
      row.samples_per_gpu_per_s = samples_per_gpu_per_s(run);
    }
    row.status = "ok";
  } catch (const std::exception& e) {
    row.status = "error";
    std::vector<std::string> values;
    for (const analysis::StudySetting& s : c.settings)
      values.push_back(s.value);
    std::string what = program_options_message(e, values);
    std::replace(what.begin(), what.end(), '\n', ' ');
    row.error = what;
  }
  return row;
}

// The `count` completed rows with the shortest iteration (ties: the earlier row), simulated
// again with their records, as runs "sweep-best-1", "sweep-best-2", ... of the results file.
std::vector<analysis::RunRecord> best_runs(const std::map<std::size_t, analysis::SweepRow>& rows,
                                           const analysis::Study& study, std::size_t count,
                                           const po::options_description& run_options,
                                           const sim::ScheduleRegistry& registry,
                                           const std::string& command_line) {
  std::vector<const analysis::SweepRow*> ok;
  for (const auto& [i, row] : rows) {
    if (row.status == "ok") ok.push_back(&row);
  }
  count = std::min(count, ok.size());
  std::partial_sort(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(count), ok.end(),
                    [](const analysis::SweepRow* a, const analysis::SweepRow* b) {
                      return a->iteration_time_ms != b->iteration_time_ms
                                 ? a->iteration_time_ms < b->iteration_time_ms
                                 : a->index < b->index;
                    });
  std::vector<analysis::RunRecord> records;
  for (std::size_t k = 0; k < count; ++k) {
    const analysis::StudyConfiguration c =
        study.configuration(static_cast<std::size_t>(ok[k]->index));
    const RunInputs in = read_run_inputs(configuration_options(c, run_options));
    RunSummary run =
        simulate_settings(c, in, registry, "sweep-best-" + std::to_string(k + 1), command_line);
    records.push_back(std::move(*run.record));
  }
  return records;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args, const std::string& command_line,
              std::ostream& out, std::ostream& err) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("study", po::value<std::string>(), "the study file (YAML, positional; docs/sweeps.md)")
    ("out", po::value<std::string>(),
     "HDF5 results file that receives /sweep/table (created if missing; its runs are kept)")
    ("jobs,j", po::value<int>()->default_value(0, "all cores"), "configurations simulated at once")
    ("limit", po::value<long long>(),
     "simulate at most this many configurations not yet in the table, then stop as Ctrl-C "
     "would (rerun to continue)")
    ("restart", po::bool_switch(),
     "discard the file's sweep table instead of resuming from it")
    ("keep-best", po::value<int>()->default_value(0),
     "once every configuration is done, also keep the full runs (ops, transfers, memory) of "
     "the N fastest as /runs/sweep-best-1..N (replacing runs of those names)")
    ("progress", po::value<std::string>()->default_value("auto"),
     "on standard error: bar (redrawn), lines (one every 5 s), none; auto: bar on a terminal, "
     "else lines");
  // clang-format on
  po::variables_map vm;
  if (!(parse_command(args, desc, vm, out,
                      "usage: bubblesim sweep STUDY.yaml --out FILE.h5 [-j N] [--limit N] "
                      "[--restart] [--keep-best N] [--progress auto|bar|lines|none]\n\n"
                      "Simulates every configuration of a study in parallel and writes one row "
                      "per configuration (inputs, metrics, status) to /sweep/table. Ctrl-C stops "
                      "cleanly; rerunning the same command resumes.",
                      "study"))) {
    return 0;
  }
  if (vm.count("study") == 0) throw InvalidArgument("give a study file (see --help)");
  if (vm.count("out") == 0 || vm["out"].as<std::string>().empty()) {
    throw InvalidArgument("option --out: give the HDF5 file that receives the table");
  }
  const std::string out_path = vm["out"].as<std::string>();
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 0 || jobs > 4096) {
    throw InvalidArgument("option -j/--jobs: expected 0 (all cores) to 4096, got " +
                          std::to_string(jobs));
  }
  std::optional<long long> limit;
  if (vm.count("limit") != 0) {
    limit = vm["limit"].as<long long>();
    if (*limit < 0) throw InvalidArgument("option --limit: expected a count >= 0");
  }
  const int keep_best = vm["keep-best"].as<int>();
  if (keep_best < 0) throw InvalidArgument("option --keep-best: expected a count >= 0");
  const Progress::Mode mode = progress_mode(vm["progress"].as<std::string>(), err);

  // Everything is checked before anything is simulated or written.
  const analysis::Study study = analysis::load_study(vm["study"].as<std::string>());
  const sim::ScheduleRegistry registry = make_schedule_registry();
  for (const analysis::StudySetting& s : study.values_of("schedule")) {
    try {
      registry.get(s.value);
    } catch (const InvalidArgument& e) {
      throw analysis::StudyError(study.path + ":" + std::to_string(s.line) +
                                 ": key 'schedule': " + e.what());
    }
  }
  // Configurations are built when simulated (analysis::Study), and only the rows present are
  // held: --limit N costs N configurations however large the study.
  const std::size_t total = study.size();
  std::map<std::size_t, analysis::SweepRow> rows;
  std::size_t done_before = 0;
  std::error_code ec;
  if (std::filesystem::exists(out_path, ec)) {
    const analysis::ResultsReader reader(out_path);
    if (!vm["restart"].as<bool>() && reader.has_sweep_table()) {
      // A row is found by its stored index; by its key where the study's order changed (a
      // key map of every configuration, so only for studies of a size that allows it).
      std::optional<std::unordered_map<std::string, std::size_t>> index_of;
      for (analysis::SweepRow& row : reader.read_sweep_table()) {
        std::optional<std::size_t> at;
        if (row.index >= 0 && static_cast<std::size_t>(row.index) < total &&
            study.configuration(static_cast<std::size_t>(row.index)).key() == row.key) {
          at = static_cast<std::size_t>(row.index);
        } else if (total <= kMaxKeyedResume) {
          if (!index_of) {
            index_of.emplace();
            for (std::size_t i = 0; i < total; ++i)
              index_of->emplace(study.configuration(i).key(), i);
          }
          const auto it = index_of->find(row.key);
          if (it != index_of->end()) at = it->second;
        }
        if (!at) {
          throw InvalidArgument(out_path + ": its sweep table has a row of another study ('" +
                                row.key + "'); give --restart to replace the table");
        }
        row.index = static_cast<std::int32_t>(*at);
        done_before += rows.count(*at) == 0;
        rows[*at] = std::move(row);
      }
    }
  }
  // The configurations to simulate now: those not in the table, in order, at most --limit.
  const std::size_t missing = total - rows.size();
  const bool stopped_by_limit = limit && static_cast<std::size_t>(*limit) < missing;
  const std::size_t to_run = stopped_by_limit ? static_cast<std::size_t>(*limit) : missing;
  std::size_t cursor = 0;  // the next configuration that may be pending
  const auto next_pending = [&](std::size_t count) {
    std::vector<std::size_t> batch;
    for (; batch.size() < count && cursor < total; ++cursor) {
      if (rows.count(cursor) == 0) batch.push_back(cursor);
    }
    return batch;
  };

  const analysis::WriterInfo writer{BUBBLESIM_VERSION, command_line};
  const auto write = [&] {
    std::vector<analysis::SweepRow> table;
    table.reserve(rows.size());
    for (const auto& [i, row] : rows)
      table.push_back(row);
    analysis::write_sweep_table(out_path, table, writer);
  };

  po::options_description run_options;
  add_run_options(run_options);
  const SigintGuard sigint;
  tbb::task_arena arena(jobs == 0 ? tbb::task_arena::automatic : jobs);
  Progress progress(err, mode, "bubblesim sweep", "configurations", total, done_before);
  // Batches small enough for a responsive progress bar and Ctrl-C; each batch is spread over
  // the cores by parallel_for.
  const std::size_t batch = std::max<std::size_t>(16, 4 * arena.max_concurrency());
  std::size_t done_now = 0;
  auto last_write = Clock::now();
  bool interrupted = false;
  while (done_now < to_run) {
    if (g_interrupted.load()) {
      interrupted = true;
      break;
    }
    const std::vector<std::size_t> pending = next_pending(std::min(batch, to_run - done_now));
    if (pending.empty()) break;
    std::vector<analysis::SweepRow> simulated(pending.size());
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, pending.size()),
                        [&](const tbb::blocked_range<std::size_t>& range) {
                          for (std::size_t k = range.begin(); k != range.end(); ++k) {
                            const std::size_t i = pending[k];
                            simulated[k] = simulate_configuration(
                                study.configuration(i), static_cast<int>(i), run_options, registry);
                          }
                        });
    });
    for (std::size_t k = 0; k < pending.size(); ++k)
      rows[pending[k]] = std::move(simulated[k]);
    done_now += pending.size();
    progress.update(done_now);
    if (std::chrono::duration<double>(Clock::now() - last_write).count() >= kWriteEverySeconds) {
      write();
      last_write = Clock::now();
    }
  }
  interrupted = interrupted || g_interrupted.load();
  progress.update(done_now, true);
  write();

  std::size_t failed = 0;
  const std::size_t present = rows.size();
  for (const auto& [i, row] : rows)
    failed += row.status != "ok";
  fmt::print(out,
             "{}: /sweep/table holds {} of {} configurations ({} simulated now, {} from the "
             "file; {} failed, see their 'error')\n",
             out_path, present, total, done_now, done_before, failed);
  if (interrupted || stopped_by_limit) {
    fmt::print(out, "stopped {}: rerun the same command to simulate the {} left\n",
               interrupted ? "by Ctrl-C" : "by --limit", total - present);
    return interrupted ? 130 : 0;
  }
  if (keep_best > 0) {
    const std::vector<analysis::RunRecord> best = best_runs(
        rows, study, static_cast<std::size_t>(keep_best), run_options, registry, command_line);
    analysis::write_runs(out_path, best, writer, true);
    fmt::print(out,
               "kept the full runs of the {} fastest configurations as /runs/sweep-best-1..{}\n",
               best.size(), best.size());
  }
  return 0;
}

}  // namespace bubblesim::cli
