// `bubblesim advise --model FILE.yaml --gpu NAME --gpus N [--mem-budget-gb X]` (docs/advise.md):
// the best schedules, p, m, v and microbatch sizes for a model on N GPUs, and why the others
// lost.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "analysis/app/advise.h"
#include "analysis/calibration.h"
#include "models/cluster.h"
#include "models/gpu_catalogue.h"
#include "sim/cli/commands.h"
#include "sim/cli/progress.h"
#include "sim/cli/ranks.h"
#include "sim/cli/spread.h"
#include "sim/cli/wire.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

// Progress appears only when the search takes longer than this.
constexpr double kProgressDelaySeconds = 1;

std::vector<int> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int> values;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) {
      throw InvalidArgument("option " + option + ": '" + item + "' is not an integer (in '" + text +
                            "')");
    }
    values.push_back(value);
  }
  if (values.empty()) throw InvalidArgument("option " + option + ": expected a list of integers");
  return values;
}

double gb(double bytes) {
  return bytes / 1e9;
}

void write_table(std::ostream& out, const std::vector<app::AdviseCandidate>& rows,
                 double budget_bytes) {
  fmt::print(out,
             "{:>4}  {:<12}  {:>4}  {:>4}  {:>5}  {:>3}  {:>3}  {:>12}  {:>12}  {:>8}  {:>14}  "
             "{:>16}\n",
             "rank", "schedule", "p", "dp", "m", "v", "b", "iteration ms", "all-reduce ms",
             "bubble", "peak mem GB", "samples/GPU/s");
  int rank = 1;
  for (const app::AdviseCandidate& c : rows) {
    fmt::print(out,
               "{:>4}  {:<12}  {:>4}  {:>4}  {:>5}  {:>3}  {:>3}  {:>12.3f}  {:>12.3f}  {:>8.4f}  "
               "{:>7.2f} ({:>3.0f}%)  {:>16.3f}\n",
               rank++, c.schedule, c.pp, c.dp, c.microbatches, c.chunks, c.microbatch_size,
               c.iteration_time_ms, c.allreduce_ms, c.bubble_rate, gb(c.peak_memory_bytes),
               100 * c.peak_memory_bytes / budget_bytes, c.samples_per_gpu_per_s);
  }
}

// Per schedule, why its best configuration lost to the top one.
void write_why(std::ostream& out, const std::vector<app::AdviseCandidate>& ranked,
               double budget_bytes) {
  using app::AdviseOutcome;
  const app::AdviseCandidate* top =
      !ranked.empty() && ranked.front().outcome == AdviseOutcome::kFits ? &ranked.front() : nullptr;
  std::size_t fits = 0, oom = 0, inapplicable = 0;
  const app::AdviseCandidate* closest_oom = nullptr;
  std::vector<std::string> order;  // schedules as first seen in the ranking
  std::map<std::string, std::vector<const app::AdviseCandidate*>> by_schedule;
  for (const app::AdviseCandidate& c : ranked) {
    fits += c.outcome == AdviseOutcome::kFits;
    inapplicable += c.outcome == AdviseOutcome::kNotApplicable;
    if (c.outcome == AdviseOutcome::kOutOfMemory) {
      ++oom;
      if (closest_oom == nullptr) closest_oom = &c;
    }
    if (by_schedule[c.schedule].empty()) order.push_back(c.schedule);
    by_schedule[c.schedule].push_back(&c);
  }
  fmt::print(out,
             "\n{} configurations: {} fit in {:.2f} GB per GPU, {} out of memory, {} not "
             "applicable\n",
             ranked.size(), fits, gb(budget_bytes), oom, inapplicable);
  if (closest_oom != nullptr) {
    fmt::print(out, "closest out of memory: {} needs {:.2f} GB, {:.2f} GB over the budget\n",
               closest_oom->label(), gb(closest_oom->peak_memory_bytes),
               gb(closest_oom->peak_memory_bytes - budget_bytes));
  }
  fmt::print(out, "\nwhy the others lost (each schedule's best configuration):\n");
  for (const std::string& name : order) {
    const std::vector<const app::AdviseCandidate*>& list = by_schedule[name];
    const app::AdviseCandidate& best = *list.front();  // ranked order
    std::size_t n_oom = 0, n_na = 0;
    for (const app::AdviseCandidate* c : list) {
      n_oom += c->outcome == AdviseOutcome::kOutOfMemory;
      n_na += c->outcome == AdviseOutcome::kNotApplicable;
    }
    const std::string counts = fmt::format("{} configurations, {} out of memory, {} not applicable",
                                           list.size(), n_oom, n_na);
    if (best.outcome == AdviseOutcome::kFits) {
      if (&best == top) {
        fmt::print(out, "  {:<12} the top choice ({})\n", name, counts);
        continue;
      }
      const double behind = 100 * (1 - best.samples_per_gpu_per_s / top->samples_per_gpu_per_s);
      std::string why;
      if (best.bubble_rate > top->bubble_rate + 1e-9) {
        why = fmt::format("more bubbles ({:.4f} vs {:.4f})", best.bubble_rate, top->bubble_rate);
      } else if (best.allreduce_ms > top->allreduce_ms + 1e-9) {
        why = fmt::format("longer all-reduce ({:.3f} vs {:.3f} ms)", best.allreduce_ms,
                          top->allreduce_ms);
      } else if (best.samples_per_gpu_per_s == top->samples_per_gpu_per_s) {
        why = best.peak_memory_bytes > top->peak_memory_bytes
                  ? fmt::format("a tie, more memory ({:.2f} vs {:.2f} GB)",
                                gb(best.peak_memory_bytes), gb(top->peak_memory_bytes))
                  : std::string("a tie (same throughput and memory; ranked by search order)");
      } else {
        why = "slower passes or transfers";
      }
      fmt::print(out, "  {:<12} {:.1f}% lower throughput at best ({}): {}; {}\n", name, behind,
                 best.label(), why, counts);
    } else if (best.outcome == AdviseOutcome::kOutOfMemory) {
      fmt::print(out, "  {:<12} out of memory: at least {:.2f} GB ({}), {:.2f} GB over; {}\n", name,
                 gb(best.peak_memory_bytes), best.label(),
                 gb(best.peak_memory_bytes - budget_bytes), counts);
    } else {
      fmt::print(out, "  {:<12} not applicable: {} ({})\n", name, best.reason, best.label());
    }
  }
}

// The hardware of a cluster file as advise models it (one GPU type, one link; docs/advise.md):
// its device count; its slowest device (the lowest dense peak over time factor) with the
// smallest memory of any device, so that a choice that fits and keeps pace there does so on
// every device; and the link between nodes, or inside the node for a one-node cluster.
app::AdviseHardware cluster_hardware(const models::Cluster& cluster) {
  app::AdviseHardware hw;
  hw.gpus = cluster.num_devices();
  const auto rate = [&](std::size_t i) {
    return cluster.gpus[i].dense_bf16_tflops / cluster.time_factor[i];
  };
  std::size_t slowest = 0;
  for (std::size_t d = 1; d < cluster.gpus.size(); ++d) {
    if (rate(d) < rate(slowest)) slowest = d;
  }
  hw.gpu = cluster.gpus[slowest];
  if (cluster.time_factor[slowest] != 1) {
    hw.gpu.name += " slowed x" + format_number(cluster.time_factor[slowest]);
    hw.gpu.dense_bf16_tflops /= cluster.time_factor[slowest];
  }
  for (const models::GpuSpec& g : cluster.gpus) {
    hw.gpu.memory_gb = std::min(hw.gpu.memory_gb, g.memory_gb);
    hw.gpu.memory_bandwidth_gbps = std::min(hw.gpu.memory_bandwidth_gbps, g.memory_bandwidth_gbps);
  }
  const bool one_node = std::all_of(cluster.node.begin(), cluster.node.end(),
                                    [&](int n) { return n == cluster.node.front(); });
  const models::LinkSpec& link = one_node ? cluster.intra_node : cluster.inter_node;
  hw.link_bandwidth_gbps = link.bandwidth_gb_per_s;
  hw.link_latency_ms = link.latency_us / 1e3;
  return hw;
}

// What every rank prepares from the command line.
struct AdviseSetup {
  app::AdviseSearch search;
  std::string cluster_name;
  std::string calibration;  // --calibration's file, "" for none
  int top = 5;
  int jobs = 0;
  Progress::Mode mode = Progress::Mode::kNone;
  double rank_timeout_s = 600;
  std::vector<app::AdviseCandidate> candidates;  // advise_candidates' order
  std::string fingerprint;                       // of the candidates, for the ranks
};

// Parses the options, reads the model or cluster and lists the candidates; nothing after
// printing --help to `out`.
std::optional<AdviseSetup> prepare_advise(const std::vector<std::string>& args, std::ostream& out,
                                          std::ostream& err,
                                          const sim::ScheduleRegistry& registry) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("model", po::value<std::string>(), "transformer description (YAML, models/examples/)")
    ("gpu", po::value<std::string>()->default_value("A100-80GB"),
     ("GPU type: " + models::gpu_preset_names()).c_str())
    ("gpus", po::value<int>()->default_value(8), "GPUs N: p divides N, the rest is data parallel")
    ("cluster", po::value<std::string>(),
     "cluster file (docs/cluster-format.md) instead of --gpu, --gpus and the link options: its "
     "device count, its slowest GPU and smallest memory, its link between nodes")
    ("mem-budget-gb", po::value<double>(), "memory per GPU in GB (10^9 bytes); default the GPU's")
    ("global-batch", po::value<int>(),
     "samples per iteration over all pipelines, G (default 3 x N x the model's microbatch_size)")
    ("microbatch-sizes", po::value<std::string>()->default_value("1,2,3,4,6,8"),
     "microbatch sizes b to try (those with dp*b dividing G)")
    ("chunks", po::value<std::string>()->default_value("1,2,4"),
     "chunks per device v to try, for schedules that take -v")
    ("schedules", po::value<std::string>()->default_value("all"),
     "'all' or a comma-separated list of schedule names")
    ("efficiency", po::value<double>()->default_value(models::kDefaultEfficiency, "0.45"),
     "fraction of the GPU's dense BF16 peak the passes reach, in (0, 1]")
    ("calibration", po::value<std::string>(),
     "CAL.yaml from 'bubblesim calibrate': its op overheads and p2p mode, and its efficiency "
     "unless --efficiency is given")
    ("link-gbps", po::value<double>()->default_value(50),
     "GB/s between stages and for the data-parallel all-reduce (50: a 400 Gb/s link)")
    ("link-latency-ms", po::value<double>()->default_value(0.01), "latency of one hop, ms")
    ("no-improve", po::bool_switch(),
     "the generators' schedules without the local search that improves zb-1p, zb-2p, zb-auto "
     "and the V schedules: about twice as fast; their schedules up to a few % longer (5.6% at "
     "most for the 1.5B model on 8 GPUs)")
    ("top", po::value<int>()->default_value(5), "how many choices to list")
    ("jobs,j", po::value<int>()->default_value(0, "all cores"),
     "configurations simulated at once (per MPI rank)")
    ("rank-timeout", po::value<double>()->default_value(600),
     "under MPI: seconds a rank may hold a batch (or take to start) without a word before the "
     "job ends as failed")
    ("progress", po::value<std::string>()->default_value("auto"),
     "on standard error when the search takes over 1 s: bar, lines, none, auto");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(
          args, desc, vm, out,
          "usage: bubblesim advise --model FILE.yaml [--gpu NAME --gpus N | --cluster FILE] "
          "[--mem-budget-gb X] [--global-batch G] [--microbatch-sizes LIST] "
          "[--chunks LIST] [--schedules LIST] [--no-improve] [--top K]\n\n"
          "Simulates every schedule, pipeline size p (a divisor of N; N/p data-parallel "
          "pipelines), microbatch size and chunk count for the model, and lists the "
          "highest predicted throughputs that fit in memory, then why the others "
          "lost. Exit status 2 when nothing fits. Under mpirun or srun the ranks share the "
          "simulations and rank 0 prints.")) {
    return std::nullopt;
  }
  AdviseSetup setup;
  if (vm.count("model") == 0) throw InvalidArgument("option --model: give a model file");
  app::AdviseSearch& search = setup.search;
  search.model = models::load_transformer(vm["model"].as<std::string>());
  app::AdviseHardware& hw = search.hardware;
  std::string& cluster_name = setup.cluster_name;
  if (vm.count("cluster") != 0) {
    for (const char* option : {"gpu", "gpus", "link-gbps", "link-latency-ms"}) {
      if (!vm[option].defaulted()) {
        throw InvalidArgument(std::string("option --") + option +
                              ": the cluster file gives it; leave out one of the two");
      }
    }
    const models::Cluster cluster = models::load_cluster(vm["cluster"].as<std::string>());
    hw = cluster_hardware(cluster);
    cluster_name = cluster.name;
  } else {
    hw.gpu = models::find_gpu(vm["gpu"].as<std::string>());
    hw.gpus = vm["gpus"].as<int>();
    hw.link_bandwidth_gbps = vm["link-gbps"].as<double>();
    hw.link_latency_ms = vm["link-latency-ms"].as<double>();
    // A slower link makes the smallest transfer take longer than a simulated time may.
    if (!(hw.link_bandwidth_gbps >= 1e-6 && hw.link_bandwidth_gbps <= 1e9)) {
      throw InvalidArgument("option --link-gbps: expected 1e-6 to 1e9 GB/s, got " +
                            format_number(hw.link_bandwidth_gbps));
    }
  }
  if (hw.gpus < 1 || hw.gpus > 65536) {
    throw InvalidArgument("option --gpus: expected 1 to 65536 GPUs, got " +
                          std::to_string(hw.gpus));
  }
  hw.memory_budget_bytes = hw.gpu.memory_gb * 1e9;
  if (vm.count("mem-budget-gb") != 0) {
    const double budget = vm["mem-budget-gb"].as<double>();
    if (!(budget > 0 && budget < 1e9)) {
      throw InvalidArgument("option --mem-budget-gb: expected a positive number of GB, got " +
                            format_number(budget));
    }
    hw.memory_budget_bytes = budget * 1e9;
  }
  hw.efficiency = vm["efficiency"].as<double>();
  std::string& calibration = setup.calibration;
  if (vm.count("calibration") != 0) {
    calibration = vm["calibration"].as<std::string>();
    const analysis::Calibration c = analysis::load_calibration(calibration);
    hw.overheads = c.overheads;
    hw.p2p = c.p2p;
    if (c.efficiency > 0 && vm["efficiency"].defaulted()) hw.efficiency = c.efficiency;
  }
  if (!(hw.efficiency > 0 && hw.efficiency <= 1)) {
    throw InvalidArgument("option --efficiency: expected a fraction in (0, 1], got " +
                          format_number(hw.efficiency));
  }
  search.global_batch = vm.count("global-batch") != 0 ? vm["global-batch"].as<int>()
                                                      : 3 * hw.gpus * search.model.microbatch_size;
  search.microbatch_sizes =
      parse_int_list("--microbatch-sizes", vm["microbatch-sizes"].as<std::string>());
  search.chunks = parse_int_list("--chunks", vm["chunks"].as<std::string>());
  const std::string schedules = vm["schedules"].as<std::string>();
  if (schedules != "all") {
    std::istringstream names(schedules);
    for (std::string name; std::getline(names, name, ',');)
      search.schedules.push_back(name);
  }
  search.improve = !vm["no-improve"].as<bool>();
  const int top = setup.top = vm["top"].as<int>();
  if (top < 1) throw InvalidArgument("option --top: expected at least 1");
  setup.jobs = read_jobs(vm);
  setup.mode = progress_mode(vm["progress"].as<std::string>(), err);
  setup.rank_timeout_s = vm["rank-timeout"].as<double>();
  if (!(setup.rank_timeout_s > 0)) {
    throw InvalidArgument("option --rank-timeout: expected a positive number of seconds");
  }
  setup.candidates = app::advise_candidates(search, registry);
  if (setup.candidates.empty()) {
    throw InvalidArgument(fmt::format(
        "option --global-batch: {} samples split over no dp x b of the --microbatch-sizes "
        "(dp = N / p for each divisor p of {}); give a global batch they divide",
        search.global_batch, hw.gpus));
  }
  std::string labels = search.improve ? "" : "no-improve\n";
  for (const app::AdviseCandidate& c : setup.candidates)
    labels += c.label() + "\n";
  setup.fingerprint = fmt::format("{:016x}", std::hash<std::string>{}(labels));
  return setup;
}

// The results of evaluated candidates as bytes (wire.h), and back into `candidates`.
void write_results(WireWriter& w, const app::AdviseCandidate& c) {
  w.number<std::int32_t>(static_cast<std::int32_t>(c.outcome));
  w.text(c.reason);
  for (const double x : {c.iteration_time_ms, c.allreduce_ms, c.bubble_rate, c.peak_memory_bytes,
                         c.static_memory_bytes, c.samples_per_gpu_per_s}) {
    w.number(x);
  }
}

void read_results(WireReader& r, app::AdviseCandidate& c) {
  c.outcome = static_cast<app::AdviseOutcome>(r.number<std::int32_t>());
  c.reason = r.text();
  for (double* x : {&c.iteration_time_ms, &c.allreduce_ms, &c.bubble_rate, &c.peak_memory_bytes,
                    &c.static_memory_bytes, &c.samples_per_gpu_per_s}) {
    *x = r.number<double>();
  }
}

// Evaluates the candidates `items` with the cores of `arena`: their results as bytes.
std::string evaluate_batch(const std::vector<std::size_t>& items, const AdviseSetup& setup,
                           const sim::ScheduleRegistry& registry, tbb::task_arena& arena) {
  std::vector<app::AdviseCandidate> batch(items.size());
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, items.size()),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t k = range.begin(); k != range.end(); ++k) {
                          batch[k] = setup.candidates[items[k]];
                          app::evaluate_candidate(batch[k], setup.search,
                                                  registry.get(batch[k].schedule));
                        }
                      });
  });
  WireWriter w;
  w.reserve(batch.size() * 128);
  for (const app::AdviseCandidate& c : batch)
    write_results(w, c);
  return w.take();
}

// A rank other than 0: prepares as rank 0 does, then evaluates the batches it is given.
int advise_worker(Ranks& ranks, const std::vector<std::string>& args, std::ostream& err) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::ostringstream ignored;
  return run_worker<AdviseSetup>(
      ranks, err, "bubblesim advise", [&] { return prepare_advise(args, ignored, err, registry); },
      [&](const AdviseSetup& setup, tbb::task_arena& arena, const std::vector<std::size_t>& items) {
        return evaluate_batch(items, setup, registry, arena);
      });
}

}  // namespace

int cmd_advise(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::unique_ptr<Ranks> ranks = make_ranks();
  if (ranks->rank() != 0) return advise_worker(*ranks, args, err);
  const bool distributed = ranks->size() > 1;
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::optional<AdviseSetup> setup;
  try {
    setup = prepare_advise(args, out, err, registry);
  } catch (...) {
    if (distributed) quit_workers(*ranks, 0);  // the job's status is rank 0's (spread.h)
    throw;
  }
  if (!setup) {
    if (distributed) quit_workers(*ranks, 0);
    return 0;
  }
  const app::AdviseSearch& search = setup->search;
  const app::AdviseHardware& hw = search.hardware;
  const std::string& cluster_name = setup->cluster_name;
  const int top = setup->top;
  const std::size_t total = setup->candidates.size();
  Progress progress(err, setup->mode, "bubblesim advise", "configurations", total, 0,
                    kProgressDelaySeconds);
  std::vector<app::AdviseCandidate> ranked;
  if (!distributed) {
    ranked = app::advise(search, registry, setup->jobs,
                         [&](std::size_t done, std::size_t) { progress.update(done); });
  } else {
    tbb::task_arena arena(setup->jobs == 0 ? tbb::task_arena::automatic : setup->jobs);
    SpreadOptions options;
    options.rank_timeout_s = setup->rank_timeout_s;
    options.threads =
        start_workers(*ranks, setup->fingerprint, arena.max_concurrency(), setup->rank_timeout_s);
    std::vector<std::size_t> items(total);
    for (std::size_t i = 0; i < total; ++i)
      items[i] = i;
    ranked = setup->candidates;
    try {
      const SpreadOutcome outcome = coordinate(
          *ranks, items,
          [&](const std::vector<std::size_t>& batch) {
            return evaluate_batch(batch, *setup, registry, arena);
          },
          [&](const std::vector<std::size_t>& batch, const std::string& results) {
            WireReader r(results);
            for (const std::size_t i : batch)
              read_results(r, ranked[i]);
            BUBBLESIM_CHECK(r.done(), "a batch's results hold more candidates than asked");
          },
          [&](std::size_t done) { progress.update(done); }, options);
      BUBBLESIM_CHECK(outcome.stop_signal != 0 || outcome.done == total,
                      "candidates left unevaluated");
      if (outcome.stop_signal != 0) throw Error("stopped by a signal before the search ended");
    } catch (const std::exception& e) {
      std::string why = e.what();
      std::replace(why.begin(), why.end(), '\n', ' ');
      fmt::print(err, "bubblesim advise: error: {}\n", why);
      err.flush();
      ranks->abort(1);
      return 1;
    }
    app::rank_candidates(ranked);
  }
  progress.update(total, true);

  fmt::print(out,
             "{} on {}{} x {} ({:.2f} GB budget per GPU, efficiency {}), global batch {} "
             "samples, links {} GB/s\n",
             search.model.name, cluster_name.empty() ? "" : "cluster " + cluster_name + " as ",
             hw.gpus, hw.gpu.name, gb(hw.memory_budget_bytes), format_number(hw.efficiency),
             search.global_batch, format_number(hw.link_bandwidth_gbps));
  if (const std::string& calibration = setup->calibration; !calibration.empty()) {
    fmt::print(out, "calibration {}: op overhead {} ms before every pass, p2p {}\n", calibration,
               describe_op_overheads(hw.overheads), p2p_name(hw.p2p));
  }
  std::vector<app::AdviseCandidate> best;
  for (const app::AdviseCandidate& c : ranked) {
    if (c.outcome == app::AdviseOutcome::kFits && best.size() < static_cast<std::size_t>(top))
      best.push_back(c);
  }
  if (!best.empty()) {
    fmt::print(out, "\ntop {} that fit:\n", best.size());
    write_table(out, best, hw.memory_budget_bytes);
  }
  write_why(out, ranked, hw.memory_budget_bytes);
  if (best.empty()) {
    const app::AdviseCandidate* closest = nullptr;
    for (const app::AdviseCandidate& c : ranked) {
      if (c.outcome == app::AdviseOutcome::kOutOfMemory) {
        closest = &c;
        break;
      }
    }
    err << "bubblesim advise: error: no configuration fits in "
        << fmt::format("{:.2f}", gb(hw.memory_budget_bytes)) << " GB per GPU"
        << (closest != nullptr ? fmt::format(" (the smallest, {}, needs {:.2f} GB)",
                                             closest->label(), gb(closest->peak_memory_bytes))
                               : std::string())
        << '\n';
    return 2;
  }
  return 0;
}

}  // namespace bubblesim::cli
