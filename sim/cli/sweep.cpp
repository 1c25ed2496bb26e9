// `bubblesim sweep STUDY.yaml --out FILE.h5` (docs/sweeps.md): every configuration of a study,
// simulated in parallel with oneTBB (and across MPI ranks under mpirun or srun: spread.h),
// written as /sweep/table in batches through the atomic writer so that Ctrl-C, SIGTERM or
// --limit leaves a valid file that a rerun resumes.
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
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "analysis/app/run.h"
#include "analysis/calibration.h"
#include "analysis/results_file.h"
#include "analysis/study.h"
#include "sim/cli/commands.h"
#include "sim/cli/progress.h"
#include "sim/cli/ranks.h"
#include "sim/cli/spread.h"
#include "sim/cli/stop_signals.h"
#include "sim/cli/wire.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

using Clock = std::chrono::steady_clock;

// Rows are written every 5 s while the sweep runs (and when it stops), or, once the table is
// large, after kWriteCostFactor times as long as the last write took: each write rewrites the
// whole table (atomic writer), and must not take more than ~5% of the run (a million rows take
// seconds to write).
constexpr double kWriteEverySeconds = 5;
constexpr double kWriteCostFactor = 20;

// A resumed table whose rows' indices no longer match the study is matched by key up to this
// many configurations (beyond, --restart).
constexpr std::size_t kMaxKeyedResume = 2'000'000;

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

// Simulates configuration `c` (its settings as analysis/app/scenario.h reads a study; a chunks
// setting applies only to schedules that take chunks, as in compare); with a `record_as` name
// the run keeps its record for the results file.
RunSummary simulate_settings(const analysis::StudyConfiguration& c, const app::Scenario& in,
                             const sim::ScheduleRegistry& registry,
                             const std::string& record_as = "",
                             const std::string& command_line = "") {
  const sim::ScheduleGenerator& generator = registry.get(c.find("schedule")->value);
  app::RunRequest request;
  request.generator = &generator;
  request.params = params_for(in, generator, true);
  request.keep_record = !record_as.empty();
  request.record_name = record_as;
  request.command_line = command_line;
  return app::run(in, request);
}

// Simulates configuration `index` (simulate_settings). Never throws: a configuration that
// cannot run is a row with status "error".
analysis::SweepRow simulate_configuration(const analysis::StudyConfiguration& c, int index,
                                          const sim::ScheduleRegistry& registry) {
  analysis::SweepRow row = row_from_settings(c, index);
  try {
    const app::ScenarioSettings settings = app::settings_from_study(c);
    const app::Scenario in = app::make_scenario(settings);
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
    if (!row.model.empty()) row.gpu = settings.gpu.value_or(app::kDefaultGpu);
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
    // The settings reach the library as values (no option parser, so no Boost message that a
    // '%' in a value could hang): the message is the error's own, on one line.
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    row.error = what;
  }
  return row;
}

// The `count` completed rows with the shortest iteration (ties: the earlier row), simulated
// again with their records, as runs "sweep-best-1", "sweep-best-2", ... of the results file.
std::vector<analysis::RunRecord> best_runs(const std::map<std::size_t, analysis::SweepRow>& rows,
                                           const analysis::Study& study, std::size_t count,
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
    const app::Scenario in = app::make_scenario(app::settings_from_study(c));
    RunSummary run =
        simulate_settings(c, in, registry, "sweep-best-" + std::to_string(k + 1), command_line);
    records.push_back(std::move(*run.record));
  }
  return records;
}

// An option that stands for a fixed setting of the study (--calibration, --no-improve): set
// unless the study fixes it itself; a configuration or axis that names it overrides it.
void set_unless_fixed(analysis::Study& study, const std::string& key, const std::string& value) {
  const std::vector<std::string>& keys = analysis::study_keys();
  const auto index =
      static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
  BUBBLESIM_CHECK(index < keys.size(), "'" + key + "' is a study key");
  study.fixed.try_emplace(index, analysis::StudySetting{key, value, 0});
}

// --shard K/N: the configurations whose index is K-1 modulo N (interleaved, so that every
// shard gets a fair share of each axis's costly end). n = 0: the whole study.
struct Shard {
  int k = 0, n = 0;
  bool has(std::size_t index) const {
    return n == 0 || index % static_cast<std::size_t>(n) == static_cast<std::size_t>(k - 1);
  }
};

Shard parse_shard(const std::string& text) {
  Shard shard;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> shard.k >> slash >> shard.n) || slash != '/' || !in.eof() || shard.n < 1 ||
      shard.n > 1'000'000 || shard.k < 1 || shard.k > shard.n) {
    throw InvalidArgument(
        "option --shard: expected K/N with 1 <= K <= N (the K-th of N parts), "
        "got '" +
        text + "'");
  }
  return shard;
}

void write_row(WireWriter& w, const analysis::SweepRow& row) {
  w.number(row.index);
  w.text(row.key);
  w.text(row.schedule);
  w.number(row.pp);
  w.number(row.microbatches);
  w.number(row.chunks);
  for (const double x :
       {row.f_ms, row.b_ms, row.w_ms, row.comm_ms, row.m_b, row.m_w, row.mem_limit}) {
    w.number(x);
  }
  w.text(row.model);
  w.text(row.gpu);
  for (const double x : {row.iteration_time_ms, row.max_device_span_ms, row.bubble_rate,
                         row.peak_activation_memory}) {
    w.number(x);
  }
  w.text(row.cluster);
  w.number(row.dp);
  w.number(row.peak_memory_bytes);
  w.number(row.samples_per_gpu_per_s);
  w.text(row.status);
  w.text(row.error);
}

analysis::SweepRow read_row(WireReader& r) {
  analysis::SweepRow row;
  row.index = r.number<std::int32_t>();
  row.key = r.text();
  row.schedule = r.text();
  row.pp = r.number<std::int32_t>();
  row.microbatches = r.number<std::int32_t>();
  row.chunks = r.number<std::int32_t>();
  for (double* x :
       {&row.f_ms, &row.b_ms, &row.w_ms, &row.comm_ms, &row.m_b, &row.m_w, &row.mem_limit}) {
    *x = r.number<double>();
  }
  row.model = r.text();
  row.gpu = r.text();
  for (double* x : {&row.iteration_time_ms, &row.max_device_span_ms, &row.bubble_rate,
                    &row.peak_activation_memory}) {
    *x = r.number<double>();
  }
  row.cluster = r.text();
  row.dp = r.number<std::int32_t>();
  row.peak_memory_bytes = r.number<double>();
  row.samples_per_gpu_per_s = r.number<double>();
  row.status = r.text();
  row.error = r.text();
  return row;
}

// What every rank prepares from the command line: the options and the study.
struct SweepSetup {
  std::string out_path;
  int jobs = 0;
  std::optional<long long> limit;
  bool restart = false;
  int keep_best = 0;
  Progress::Mode mode = Progress::Mode::kNone;
  Shard shard;
  double rank_timeout_s = 600;
  analysis::Study study;
  std::string fingerprint;
};

// Parses the options and reads the study (checking its schedules against `registry`); returns
// nothing after printing --help to `out`.
std::optional<SweepSetup> prepare_sweep(const std::vector<std::string>& args, std::ostream& out,
                                        std::ostream& err, const sim::ScheduleRegistry& registry) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("study", po::value<std::string>(), "the study file (YAML, positional; docs/sweeps.md)")
    ("out", po::value<std::string>(),
     "HDF5 results file that receives /sweep/table (created if missing; its runs are kept)")
    ("jobs,j", po::value<int>()->default_value(0, "all cores"),
     "configurations simulated at once (per MPI rank)")
    ("limit", po::value<long long>(),
     "simulate at most this many configurations not yet in the table, then stop as Ctrl-C "
     "would (rerun to continue)")
    ("restart", po::bool_switch(),
     "discard the file's sweep table instead of resuming from it")
    ("keep-best", po::value<int>()->default_value(0),
     "once every configuration is done, also keep the full runs (ops, transfers, memory) of "
     "the N fastest as /runs/sweep-best-1..N (replacing runs of those names)")
    ("shard", po::value<std::string>(),
     "K/N: only the configurations whose index is K-1 modulo N (the K-th of N parts, for array "
     "jobs); join the files with `bubblesim merge`")
    ("rank-timeout", po::value<double>()->default_value(600),
     "under MPI: seconds a rank may hold a batch (or take to start) without a word before the "
     "job ends as failed")
    ("calibration", po::value<std::string>(),
     "CAL.yaml from 'bubblesim calibrate', applied to every configuration that does not name "
     "its own (a setting 'calibration')")
    ("no-improve", po::bool_switch(),
     "the generators' schedules without the schedule improver (zb-auto and the V schedules), "
     "for every configuration that does not name its own (a setting 'improve: on')")
    ("progress", po::value<std::string>()->default_value("auto"),
     "on standard error: bar (redrawn), lines (one every 5 s), none; auto: bar on a terminal, "
     "else lines");
  // clang-format on
  po::variables_map vm;
  if (!(parse_command(args, desc, vm, out,
                      "usage: bubblesim sweep STUDY.yaml --out FILE.h5 [-j N] [--limit N] "
                      "[--restart] [--keep-best N] [--shard K/N] [--progress "
                      "auto|bar|lines|none]\n"
                      "       mpirun -n RANKS bubblesim sweep STUDY.yaml --out FILE.h5 ...\n\n"
                      "Simulates every configuration of a study in parallel and writes one row "
                      "per configuration (inputs, metrics, status) to /sweep/table. Ctrl-C or "
                      "SIGTERM stops cleanly; rerunning the same command resumes. Under mpirun "
                      "or srun the ranks share the work and rank 0 writes the file.",
                      "study"))) {
    return std::nullopt;
  }
  if (vm.count("study") == 0) throw InvalidArgument("give a study file (see --help)");
  SweepSetup setup;
  if (vm.count("out") == 0 || vm["out"].as<std::string>().empty()) {
    throw InvalidArgument("option --out: give the HDF5 file that receives the table");
  }
  setup.out_path = vm["out"].as<std::string>();
  setup.jobs = read_jobs(vm);
  if (vm.count("limit") != 0) {
    setup.limit = vm["limit"].as<long long>();
    if (*setup.limit < 0) throw InvalidArgument("option --limit: expected a count >= 0");
  }
  setup.restart = vm["restart"].as<bool>();
  setup.keep_best = vm["keep-best"].as<int>();
  if (setup.keep_best < 0) throw InvalidArgument("option --keep-best: expected a count >= 0");
  if (vm.count("shard") != 0) setup.shard = parse_shard(vm["shard"].as<std::string>());
  setup.rank_timeout_s = vm["rank-timeout"].as<double>();
  if (!(setup.rank_timeout_s > 0)) {
    throw InvalidArgument("option --rank-timeout: expected a positive number of seconds");
  }
  setup.mode = progress_mode(vm["progress"].as<std::string>(), err);

  // Everything is checked before anything is simulated or written.
  setup.study = analysis::load_study(vm["study"].as<std::string>());
  if (vm.count("calibration") != 0) {
    const std::string cal = vm["calibration"].as<std::string>();
    (void)analysis::load_calibration(cal);  // checked before anything runs
    const std::string absolute = std::filesystem::absolute(cal).lexically_normal().string();
    set_unless_fixed(setup.study, "calibration", absolute);
  }
  if (vm["no-improve"].as<bool>()) set_unless_fixed(setup.study, "improve", "off");
  for (const analysis::StudySetting& s : setup.study.values_of("schedule")) {
    try {
      registry.get(s.value);
    } catch (const InvalidArgument& e) {
      throw analysis::StudyError(setup.study.path + ":" + std::to_string(s.line) +
                                 ": key 'schedule': " + e.what());
    }
  }
  setup.fingerprint = analysis::study_fingerprint(setup.study);
  return setup;
}

// Simulates the configurations `items` of the study with the cores of `arena`: their rows as
// bytes (write_row).
std::string simulate_batch(const std::vector<std::size_t>& items, const analysis::Study& study,
                           const sim::ScheduleRegistry& registry, tbb::task_arena& arena) {
  std::vector<analysis::SweepRow> batch(items.size());
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, items.size()),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t k = range.begin(); k != range.end(); ++k) {
                          batch[k] = simulate_configuration(study.configuration(items[k]),
                                                            static_cast<int>(items[k]), registry);
                        }
                      });
  });
  WireWriter w;
  // ~250 bytes and the key per row; reserved, as growing a large message costs more than
  // writing it.
  w.reserve(batch.size() * (256 + (batch.empty() ? 0 : batch.front().key.size())));
  for (const analysis::SweepRow& row : batch)
    write_row(w, row);
  return w.take();
}

// A rank other than 0: prepares as rank 0 does, reports, then simulates the batches it is
// given. Prints nothing (rank 0 reports for the job).
int sweep_worker(Ranks& ranks, const std::vector<std::string>& args, std::ostream& err) {
  const StopSignals signals;
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::ostringstream ignored;
  return run_worker<SweepSetup>(
      ranks, err, "bubblesim sweep", [&] { return prepare_sweep(args, ignored, err, registry); },
      [&](const SweepSetup& setup, tbb::task_arena& arena, const std::vector<std::size_t>& items) {
        return simulate_batch(items, setup.study, registry, arena);
      });
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args, const std::string& command_line,
              std::ostream& out, std::ostream& err) {
  const std::unique_ptr<Ranks> ranks = make_ranks();
  if (ranks->rank() != 0) return sweep_worker(*ranks, args, err);
  const bool distributed = ranks->size() > 1;
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  // Rank 0 prepares everything before the workers start; if anything fails they are told to
  // end, and the one error line comes from here.
  std::optional<SweepSetup> prepared;
  // Configurations are built when simulated (analysis::Study), and only the rows present are
  // held: --limit N costs N configurations however large the study.
  std::map<std::size_t, analysis::SweepRow> rows;
  std::vector<std::size_t> pending;
  std::size_t in_shard = 0, done_before = 0;
  bool stopped_by_limit = false;
  try {
    prepared = prepare_sweep(args, out, err, registry);
    if (!prepared) {
      if (distributed) quit_workers(*ranks, 0);
      return 0;
    }
    const SweepSetup& s = *prepared;
    const std::size_t total = s.study.size();
    std::error_code ec;
    if (std::filesystem::exists(s.out_path, ec)) {
      const analysis::ResultsReader reader(s.out_path);
      if (!s.restart && reader.has_sweep_table()) {
        // A row is found by its stored index; by its key where the study's order changed (a
        // key map of every configuration, so only for studies of a size that allows it).
        std::optional<std::unordered_map<std::string, std::size_t>> index_of;
        for (analysis::SweepRow& row : reader.read_sweep_table()) {
          std::optional<std::size_t> at;
          if (row.index >= 0 && static_cast<std::size_t>(row.index) < total &&
              s.study.configuration(static_cast<std::size_t>(row.index)).key() == row.key) {
            at = static_cast<std::size_t>(row.index);
          } else if (total <= kMaxKeyedResume) {
            if (!index_of) {
              index_of.emplace();
              for (std::size_t i = 0; i < total; ++i)
                index_of->emplace(s.study.configuration(i).key(), i);
            }
            const auto it = index_of->find(row.key);
            if (it != index_of->end()) at = it->second;
          }
          if (!at) {
            throw InvalidArgument(s.out_path + ": its sweep table has a row of another study ('" +
                                  row.key + "'); give --restart to replace the table");
          }
          row.index = static_cast<std::int32_t>(*at);
          if (rows.count(*at) == 0 && s.shard.has(*at)) ++done_before;
          rows[*at] = std::move(row);
        }
      }
    }
    // The configurations to simulate now: those of the shard not in the table, in order, at
    // most --limit (only their numbers are listed).
    const std::size_t cap =
        s.limit ? static_cast<std::size_t>(*s.limit) : std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < total; ++i) {
      if (!s.shard.has(i)) continue;
      ++in_shard;
      if (rows.count(i) != 0) continue;
      if (pending.size() < cap) {
        pending.push_back(i);
      } else {
        stopped_by_limit = true;
      }
    }
  } catch (...) {
    if (distributed) quit_workers(*ranks, 0);  // the job's status is rank 0's (spread.h)
    throw;
  }
  const SweepSetup& setup = *prepared;
  const std::size_t total = setup.study.size();

  const analysis::WriterInfo writer{BUBBLESIM_VERSION, command_line};
  const analysis::SweepInfo info{setup.fingerprint, static_cast<std::int32_t>(total), setup.shard.k,
                                 setup.shard.n};
  const auto write = [&] {
    std::vector<analysis::SweepRow> table;
    table.reserve(rows.size());
    for (const auto& [i, row] : rows)
      table.push_back(row);
    analysis::write_sweep_table(setup.out_path, table, writer, info);
  };
  const auto count_present = [&] {
    std::size_t present = 0;
    for (const auto& [i, row] : rows)
      present += setup.shard.has(i);
    return present;
  };

  const StopSignals signals;
  tbb::task_arena arena(setup.jobs == 0 ? tbb::task_arena::automatic : setup.jobs);
  Progress progress(err, setup.mode, "bubblesim sweep", "configurations", in_shard, done_before);
  std::size_t done_now = 0;
  auto last_write = Clock::now();
  double write_every_s = kWriteEverySeconds;
  const auto write_now_and_then = [&] {
    if (std::chrono::duration<double>(Clock::now() - last_write).count() >= write_every_s) {
      const auto start = Clock::now();
      write();
      last_write = Clock::now();
      write_every_s =
          std::max(kWriteEverySeconds,
                   kWriteCostFactor * std::chrono::duration<double>(last_write - start).count());
    }
  };
  int stop_signal = 0;
  if (!distributed) {
    // Batches small enough for a responsive progress bar and Ctrl-C; each batch is spread over
    // the cores by parallel_for.
    const std::size_t batch = std::max<std::size_t>(16, 4 * arena.max_concurrency());
    for (std::size_t from = 0; from < pending.size(); from += batch) {
      if ((stop_signal = StopSignals::stop_signal()) != 0) break;
      const std::size_t to = std::min(pending.size(), from + batch);
      std::vector<analysis::SweepRow> simulated(to - from);
      arena.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(from, to),
                          [&](const tbb::blocked_range<std::size_t>& range) {
                            for (std::size_t k = range.begin(); k != range.end(); ++k) {
                              const std::size_t i = pending[k];
                              simulated[k - from] = simulate_configuration(
                                  setup.study.configuration(i), static_cast<int>(i), registry);
                            }
                          });
      });
      for (std::size_t k = from; k < to; ++k)
        rows[pending[k]] = std::move(simulated[k - from]);
      done_now = to;
      progress.update(done_now);
      write_now_and_then();
    }
    // A signal that came after the last configuration stopped nothing: the sweep is complete.
    if (stop_signal == 0 && done_now < pending.size()) stop_signal = StopSignals::stop_signal();
  } else {
    bool saved_at_signal = false;
    SpreadOptions options;
    options.rank_timeout_s = setup.rank_timeout_s;
    options.threads =
        start_workers(*ranks, setup.fingerprint, arena.max_concurrency(), setup.rank_timeout_s);
    try {
      const SpreadOutcome outcome = coordinate(
          *ranks, pending,
          [&](const std::vector<std::size_t>& items) {
            return simulate_batch(items, setup.study, registry, arena);
          },
          [&](const std::vector<std::size_t>& items, const std::string& results) {
            WireReader r(results);
            for (const std::size_t i : items) {
              analysis::SweepRow row = read_row(r);
              BUBBLESIM_CHECK(row.index == static_cast<std::int32_t>(i), "row of another batch");
              rows[i] = std::move(row);
            }
            BUBBLESIM_CHECK(r.done(), "a batch's results hold more rows than asked");
          },
          [&](std::size_t done) {
            done_now = done;
            progress.update(done_now);
            // At a signal, the rows so far are saved at once: when a rank died, mpirun sends
            // SIGCONT, then SIGTERM 1 s later, and may kill rank 0 soon after, before the
            // batches under way come back.
            if (StopSignals::take_save_request() ||
                (!saved_at_signal && StopSignals::stop_signal() != 0)) {
              write();
              last_write = Clock::now();
              saved_at_signal = StopSignals::stop_signal() != 0;
            }
            write_now_and_then();
          },
          options);
      done_now = outcome.done;
      // As above: a signal after the last configuration stopped nothing.
      stop_signal = done_now < pending.size() ? outcome.stop_signal : 0;
    } catch (const std::exception& e) {
      // A rank failed or went silent: the others wait for answers that will not come. Keep
      // the finished rows, say why, and end the job.
      progress.update(done_now, true);
      std::string why = e.what();
      std::replace(why.begin(), why.end(), '\n', ' ');
      try {
        write();
        fmt::print(err,
                   "bubblesim sweep: error: {}; {} keeps the {} finished rows: rerun to "
                   "resume\n",
                   why, setup.out_path, count_present());
      } catch (const std::exception& w) {
        fmt::print(err, "bubblesim sweep: error: {}; and cannot write {}: {}\n", why,
                   setup.out_path, w.what());
      }
      err.flush();
      ranks->abort(1);
      return 1;
    }
  }
  progress.update(done_now, true);
  write();

  std::size_t failed = 0;
  for (const auto& [i, row] : rows)
    failed += setup.shard.has(i) && row.status != "ok";
  const std::size_t present = count_present();
  // Under mpirun a signal tears down the forwarding of standard output before the ranks end:
  // the summary of a stopped job goes to standard error, flushed at once.
  std::ostream& summary = distributed && stop_signal != 0 ? err : out;
  fmt::print(
      summary,
      "{}: /sweep/table holds {} of {} configurations ({}{} simulated now{}, {} from the "
      "file; {} failed, see their 'error')\n",
      setup.out_path, present, in_shard,
      setup.shard.n == 0
          ? ""
          : fmt::format("shard {}/{} of a study of {}; ", setup.shard.k, setup.shard.n, total),
      done_now, distributed ? fmt::format(" by {} ranks", ranks->size()) : "", done_before, failed);
  if (stop_signal != 0 || stopped_by_limit) {
    fmt::print(summary, "stopped by {}: rerun the same command to simulate the {} left\n",
               stop_signal != 0 ? StopSignals::name(stop_signal) : "--limit", in_shard - present);
    summary.flush();
    return stop_signal != 0 ? 128 + stop_signal : 0;
  }
  if (setup.keep_best > 0) {
    const std::vector<analysis::RunRecord> best = best_runs(
        rows, setup.study, static_cast<std::size_t>(setup.keep_best), registry, command_line);
    analysis::write_runs(setup.out_path, best, writer, true);
    fmt::print(out,
               "kept the full runs of the {} fastest configurations as /runs/sweep-best-1..{}\n",
               best.size(), best.size());
  }
  return 0;
}

}  // namespace bubblesim::cli
