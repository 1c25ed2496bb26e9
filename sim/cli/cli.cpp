#include "sim/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>

#include "analysis/app/run.h"
#include "analysis/profile_file.h"
#include "analysis/results_file.h"
#include "analysis/run_record.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/output.h"
#include "sim/cost_model.h"
#include "sim/output_file.h"
#include "sim/schedules/builtin.h"
#include "sim/simulation.h"
#include "traces/kineto_trace.h"
#include "traces/lowered_timing.h"
#include "traces/perfetto_export.h"
#include "traces/sampled_cost_model.h"
#include "traces/schedule_csv.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    R"(bubblesim - discrete-event simulator for pipeline-parallel training schedules

usage: bubblesim COMMAND [options]

commands:
  schedules   list every schedule with its parameters
  simulate    simulate one schedule (-s NAME) and print its metrics per device
  compare     simulate several schedules (-s all or -s NAME,NAME) side by side
  sweep       simulate every configuration of a study (YAML) into an HDF5 table (also mpirun)
  merge       join the sweep tables of a study's shards (sweep --shard K/N)
  report      tables of a results file's runs and sweep; --html/--svg pictures
  advise      search schedules, p, m, v and microbatch size for a model on N GPUs
  import      read PyTorch profiler (Kineto) traces and print per-pass statistics
  replay      simulate what the traces executed and compare with what they measured
  validate    run the zero-bubble authors' reference sets and compare the schedulers
  calibrate   fit op overheads and the p2p mode to measured runs (--calibration CAL.yaml)
  profile     run a command with the CUPTI profiler injected (bubblesim profile -- CMD...)

Run 'bubblesim COMMAND --help' for the options of a command. With no timing options, simulate
and compare use the zero-bubble paper's 1.5B model at p=8, m=24 (F 18.522, B 18.086, W 9.337,
comm 0.601 ms).
)";

// Ops per second a Monte Carlo run simulates (measured: 1F1B, p = 2, m = 64, 20000 samples).
constexpr double kMonteCarloOpsPerSecond = 2e7;

// A bad-usage exit: the message is printed as one line.
struct Usage {
  std::string message;
};

// Parses `args` (after the command) against `desc`; returns false after printing help.
// Positional arguments go to the option `positional` of `desc` when given, else are an error.
bool parse(const std::vector<std::string>& args, const po::options_description& desc,
           po::variables_map& vm, std::ostream& out, const char* synopsis,
           const char* positional = nullptr) {
  // Collect unwanted positional arguments to name the first in the error.
  po::options_description all(desc);
  if (positional == nullptr) {
    all.add_options()("unexpected", po::value<std::vector<std::string>>());
  }
  po::positional_options_description positionals;
  positionals.add(positional != nullptr ? positional : "unexpected", -1);
  po::store(po::command_line_parser(args).options(all).positional(positionals).run(), vm);
  if (vm.count("unexpected") != 0) {
    throw Usage{"unexpected argument '" + vm["unexpected"].as<std::vector<std::string>>().front() +
                "' (see --help)"};
  }
  if (vm.count("help") != 0) {
    fmt::print(out, "{}\n\n", synopsis);
    out << desc << '\n';
    return false;
  }
  po::notify(vm);
  return true;
}

// What --out records of a run besides the simulation: its name and the command.
struct Recording {
  std::string run_name;
  std::string command_line;
};

// Runs `schedule` (or, with a generator, the schedule it builds) in the inputs' scenario
// (app::run); with `exact_time_limit_s`, improved by the exact mode; with `recording`, keeping
// the run's record for the results file.
RunSummary run_schedule(std::string name, sim::Schedule& schedule,
                        const sim::ScheduleGenerator* generator, sim::ScheduleParams params,
                        const RunInputs& in, std::optional<double> exact_time_limit_s = {},
                        const Recording* recording = nullptr) {
  app::RunRequest request;
  request.generator = generator;
  request.name = std::move(name);
  request.params = params;
  request.exact_time_limit_s = exact_time_limit_s;
  if (recording != nullptr) {
    request.keep_record = true;
    request.record_name = recording->run_name;
    request.command_line = recording->command_line;
  }
  return app::run(in, request, schedule);
}

// Adds the runs' records to the --out file (all or none of them), into `file`'s temporary.
void write_results(sim::OutputFile& file, const RunInputs& in, std::span<RunSummary> runs,
                   const std::string& command_line) {
  std::vector<analysis::RunRecord> records;
  for (RunSummary& run : runs)
    records.push_back(std::move(*run.record));
  try {
    analysis::write_runs(file, records, {BUBBLESIM_VERSION, command_line}, in.overwrite);
  } catch (const analysis::RunExistsError& e) {
    throw analysis::RunExistsError(std::string(e.what()) +
                                   " (give --overwrite to replace it, or --run-name)");
  }
}

// "all" or a comma-separated list of registered names.
std::vector<const sim::ScheduleGenerator*> select(const sim::ScheduleRegistry& registry,
                                                  const std::string& list) {
  if (list == "all") return registry.all();
  std::vector<const sim::ScheduleGenerator*> chosen;
  std::istringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    const sim::ScheduleGenerator* g = &registry.get(name);
    if (std::find(chosen.begin(), chosen.end(), g) != chosen.end()) {
      throw InvalidArgument("option -s/--schedule: '" + name + "' is listed twice");
    }
    chosen.push_back(g);
  }
  if (chosen.empty()) throw InvalidArgument("option -s/--schedule: no schedule named");
  return chosen;
}

int cmd_schedules(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  if (!parse(args, desc, vm, out, "usage: bubblesim schedules\n\nLists every schedule.")) return 0;
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::size_t name_width = 4, parameters_width = 10;  // the headers' lengths
  for (const sim::ScheduleGenerator* g : registry.all()) {
    name_width = std::max(name_width, g->name().size());
    parameters_width = std::max(parameters_width, g->parameters().size());
  }
  const auto row = [&](std::string_view name, std::string_view parameters,
                       std::string_view description) {
    fmt::print(out, "{:<{}}  {:<{}}  {}\n", name, name_width, parameters, parameters_width,
               description);
  };
  row("name", "parameters", "description");
  for (const sim::ScheduleGenerator* g : registry.all()) {
    row(g->name(), g->parameters(), g->description());
  }
  return 0;
}

// The limits of a --mem-limit-sweep, as multiples of p M_B, each simulated with `generator`.
std::vector<SweepPoint> sweep_memory(const sim::ScheduleGenerator& generator, const RunInputs& in,
                                     const std::vector<double>& factors) {
  if (!generator.takes_mem_limit()) {
    throw InvalidArgument("option --mem-limit-sweep: schedule '" + std::string(generator.name()) +
                          "' does not take a memory limit (zb-auto, zb-v, v-half and v-min do)");
  }
  std::vector<SweepPoint> points;
  for (const double factor : factors) {
    sim::ScheduleParams params = params_for(in, generator, false);
    params.mem_limit = factor * in.params.pp * in.device_costs.front().m_b;
    sim::Schedule schedule;
    points.push_back(SweepPoint{
        factor, run_schedule(std::string(generator.name()), schedule, &generator, params, in)});
  }
  return points;
}

int cmd_simulate(const std::vector<std::string>& args, const std::string& command_line,
                 std::ostream& out) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("schedule,s", po::value<std::string>(), "schedule name (see 'bubblesim schedules')")
    ("schedule-file", po::value<std::string>(),
     "simulate the schedule in this PyTorch pipelining CSV file instead (p, m and v come from "
     "the file)")
    ("write-schedule", po::value<std::string>(),
     "also write the simulated schedule to this CSV file")
    ("write-schedule-format", po::value<std::string>()->default_value("compute"),
     "compute: the passes alone; comms: PyTorch's lowered format, also a RECV_F/RECV_B before "
     "each pass whose input comes from another rank and a SEND_F/SEND_B after each pass whose "
     "output goes to another rank")
    ("unshard-ms", po::value<double>()->default_value(0),
     "time each UNSHARD of a lowered --schedule-file holds its rank's stream, ms")
    ("reshard-ms", po::value<double>()->default_value(0), "the same for each RESHARD")
    ("reduce-grad-ms", po::value<double>()->default_value(0), "the same for each REDUCE_GRAD")
    ("csv-naming", po::value<std::string>()->default_value("current"),
     "the letters of --schedule-file: current (PyTorch's F, I, W, B = full backward) or legacy "
     "(F, B = input gradient, W, BW = full backward)")
    ("trace-json", po::value<std::string>(),
     "also write the simulated timeline to this Chrome/Perfetto trace JSON file")
    ("exact", po::bool_switch(),
     "zb-1p, zb-2p, zb-auto, zb-v, v-half, v-min: improve the heuristic's schedule with the "
     "exact ILP (CBC), warm-started from it; reports the optimum, or the best bound and gap "
     "(p*m <= 200)")
    ("time-limit", po::value<double>()->default_value(10), "seconds the --exact solver may take")
    ("mem-limit-sweep", po::value<std::string>(),
     "FROM:TO:STEP: simulate at each memory limit, as multiples of p*M_B, and print the "
     "bubble rate against memory (schedules that take --mem-limit)")
    ("samples", po::value<int>()->default_value(0),
     "with --profile: also run N times, each op's duration drawn from its stage's samples, and "
     "report the mean, p50, p90 and p99 of the iteration time and bubble rate")
    ("allow-long", po::bool_switch(),
     "run --samples requests estimated to take more than an hour (refused otherwise)")
    ("seed", po::value<std::string>()->default_value("1"),
     "seed of the --samples generator (std::mt19937_64): the same seed gives the same results");
  // clang-format on
  add_run_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, out,
             "usage: bubblesim simulate (-s NAME | --schedule-file FILE.csv) [-p P] [-m M] "
             "[--f MS] [--b MS] [--w MS] [--comm MS] [--mem-limit M | --mem-limit-sweep "
             "FROM:TO:STEP] [--exact [--time-limit S]] [--write-schedule FILE.csv] "
             "[--trace-json FILE.json] [--profile PROFILE.h5 [--samples N [--seed S]]] "
             "[--cluster FILE.yaml [--dp N] [--allreduce ring|tree]] [--optimizer-sync "
             "none|allreduce|post-validation] [--json] "
             "[--out FILE.h5 [--run-name NAME] [--overwrite]]\n\n"
             "Simulates one schedule and prints its iteration time, bubble rate and peak "
             "activation memory, per device.")) {
    return 0;
  }
  if ((vm.count("schedule") != 0) == (vm.count("schedule-file") != 0)) {
    throw Usage{"give either -s NAME or --schedule-file FILE (see --help)"};
  }
  const bool exact = vm["exact"].as<bool>();
  const double time_limit_s = vm["time-limit"].as<double>();
  if (!(time_limit_s > 0 && time_limit_s <= 1e6)) {
    throw InvalidArgument("option --time-limit: expected seconds in (0, 1e6], got " +
                          std::to_string(time_limit_s));
  }
  const int samples = vm["samples"].as<int>();
  if (samples < 0 || samples > 1000000) {
    throw InvalidArgument("option --samples: expected 0 to 1000000 runs, got " +
                          std::to_string(samples));
  }
  if (samples > 0 && vm.count("profile") == 0) {
    throw InvalidArgument("option --samples: draws from a profile's samples; give --profile FILE");
  }
  if (!vm["seed"].defaulted() && samples == 0) {
    throw InvalidArgument("option --seed: applies only with --samples N");
  }
  const bool sweep = vm.count("mem-limit-sweep") != 0;
  if (sweep && (exact || !vm["mem-limit"].defaulted() || vm.count("write-schedule") != 0 ||
                vm.count("schedule-file") != 0 || vm.count("trace-json") != 0 ||
                vm.count("out") != 0 || samples > 0)) {
    throw InvalidArgument(
        "option --mem-limit-sweep: takes -s NAME and cannot be combined with --mem-limit, "
        "--exact, --write-schedule, --trace-json, --schedule-file, --out or --samples");
  }
  if (!vm["mem-limit"].defaulted() && vm.count("schedule-file") != 0) {
    throw InvalidArgument(
        "option --mem-limit: applies to the schedules built under a limit (zb-auto, zb-v, "
        "v-half, v-min), not to a --schedule-file");
  }
  if (exact && vm.count("schedule-file") != 0) {
    throw InvalidArgument(
        "option --exact: improves a generated schedule (-s zb-1p, zb-2p, zb-auto, zb-v, "
        "v-half or v-min), not a --schedule-file");
  }
  const std::string naming_name = vm["csv-naming"].as<std::string>();
  const std::string format_name = vm["write-schedule-format"].as<std::string>();
  if (naming_name != "current" && naming_name != "legacy") {
    throw InvalidArgument("option --csv-naming: expected current or legacy, got '" + naming_name +
                          "'");
  }
  if (format_name != "compute" && format_name != "comms") {
    throw InvalidArgument("option --write-schedule-format: expected compute or comms, got '" +
                          format_name + "'");
  }
  if (!vm["csv-naming"].defaulted() && vm.count("schedule-file") == 0) {
    throw InvalidArgument("option --csv-naming: applies to a --schedule-file");
  }
  if (!vm["write-schedule-format"].defaulted() && vm.count("write-schedule") == 0) {
    throw InvalidArgument("option --write-schedule-format: applies with --write-schedule FILE");
  }
  traces::ActionDurations action_durations;
  for (const auto& [option, field] :
       {std::pair{"unshard-ms", &traces::ActionDurations::unshard_ns},
        std::pair{"reshard-ms", &traces::ActionDurations::reshard_ns},
        std::pair{"reduce-grad-ms", &traces::ActionDurations::reduce_grad_ns}}) {
    const double ms = vm[option].as<double>();
    if (!(ms >= 0 && ms <= 1e9)) {
      throw InvalidArgument(std::string("option --") + option +
                            ": expected a time in ms from 0 to 1e9");
    }
    if (!vm[option].defaulted() && vm.count("schedule-file") == 0) {
      throw InvalidArgument(std::string("option --") + option + ": applies to a --schedule-file");
    }
    action_durations.*field = sim::ms_to_ns(ms);
  }
  const traces::CsvNaming naming =
      naming_name == "legacy" ? traces::CsvNaming::Legacy : traces::CsvNaming::Current;
  const traces::CsvFormat format =
      format_name == "comms" ? traces::CsvFormat::Comms : traces::CsvFormat::Compute;
  // The outputs, checked before anything is simulated and committed together at the end: a
  // failure leaves none of them behind (sim/output_file.h).
  std::optional<sim::OutputFile> schedule_file, trace_file, results_file;
  if (vm.count("write-schedule") != 0)
    schedule_file.emplace(vm["write-schedule"].as<std::string>());
  if (vm.count("trace-json") != 0) trace_file.emplace(vm["trace-json"].as<std::string>());
  if (vm.count("out") != 0 && !vm["out"].as<std::string>().empty()) {
    results_file.emplace(vm["out"].as<std::string>());
  }
  if (schedule_file && trace_file) {
    sim::check_distinct_outputs(*schedule_file, "--write-schedule", *trace_file, "--trace-json");
  }
  if (schedule_file && results_file) {
    sim::check_distinct_outputs(*schedule_file, "--write-schedule", *results_file, "--out");
  }
  if (trace_file && results_file) {
    sim::check_distinct_outputs(*trace_file, "--trace-json", *results_file, "--out");
  }
  RunInputs in;
  sim::Schedule schedule;
  RunSummary run;
  Recording recording{"", command_line};
  const auto record = [&](const std::string& default_name) -> const Recording* {
    if (in.out.empty()) return nullptr;
    recording.run_name = in.run_name.empty() ? default_name : in.run_name;
    return &recording;
  };
  if (vm.count("schedule-file") != 0) {
    const std::string path = vm["schedule-file"].as<std::string>();
    const traces::ScheduleFile file = traces::read_schedule_file(path, naming);
    schedule = file.schedule;
    in = read_run_inputs(vm, &schedule);
    if (file.has_actions() && (in.replicated || in.input_rule != sim::InputRule::All ||
                               !in.out.empty() || vm.count("trace-json") != 0 || samples > 0)) {
      throw InvalidArgument(
          "option --schedule-file: a lowered file (SEND/RECV, UNSHARD... actions) cannot be "
          "combined with --cluster, --dp, --optimizer-sync, --paper-evaluator, --out, "
          "--trace-json or --samples yet");
    }
    run = run_schedule(path, schedule, nullptr, in.params, in, std::nullopt,
                       record(std::filesystem::path(path).stem().string()));
    if (file.has_actions()) {
      // The actions where the file puts them (traces/lowered_timing.h), transfers as --p2p says.
      const sim::PerDeviceCostModel costs(in.device_costs, in.params.chunks);
      run.metrics = sim::compute_metrics(
          schedule, traces::simulate_lowered(file, costs, in.p2p, action_durations), costs);
    }
  } else {
    const sim::ScheduleRegistry registry = sim::builtin_schedules();
    const sim::ScheduleGenerator& generator = registry.get(vm["schedule"].as<std::string>());
    in = read_run_inputs(vm);
    if (sweep) {
      const std::vector<SweepPoint> points = sweep_memory(
          generator, in, parse_sweep("--mem-limit-sweep", vm["mem-limit-sweep"].as<std::string>()));
      in.json ? write_sweep_json(out, points) : write_sweep_table(out, in, points);
      return 0;
    }
    run = run_schedule(std::string(generator.name()), schedule, &generator,
                       params_for(in, generator, false), in,
                       exact ? std::optional<double>(time_limit_s) : std::nullopt,
                       record(std::string(generator.name())));
  }
  if (in.replicated && (samples > 0 || (in.dp > 1 && vm.count("write-schedule") != 0))) {
    throw InvalidArgument(
        "options --samples and --write-schedule (with --dp > 1) cannot be combined with "
        "--cluster, --dp or --optimizer-sync");
  }
  if (samples > 0) {
    // An hour's worth of runs is refused unless asked for: the estimate is the ops simulated
    // times a rate measured on the engine (2e7 ops per second on one core, 1F1B, p = 2, m = 64).
    std::size_t ops = 0;
    for (const auto& device : schedule.device_ops)
      ops += device.size();
    const double hours = static_cast<double>(ops) * samples / kMonteCarloOpsPerSecond / 3600;
    if (hours > 1 && !vm["allow-long"].as<bool>()) {
      throw InvalidArgument(fmt::format(
          "option --samples: {} runs of {} ops would take about {:.1f} hours (at about {:.0e} "
          "ops per second); give fewer --samples, or --allow-long to run them anyway",
          samples, ops, hours, kMonteCarloOpsPerSecond));
    }
    run.monte_carlo =
        app::monte_carlo(schedule, in, run.params.chunks, samples,
                    parse_whole_number("--seed", vm["seed"].as<std::string>(), 0, UINT64_MAX));
  }
  if (schedule_file) traces::save_schedule_csv(*schedule_file, schedule, format);
  if (trace_file) {
    // Run again with an observer for the transfers: the plain run needs none, and is faster.
    const sim::PerDeviceCostModel costs(in.replicated ? in.replica_costs : in.device_costs,
                                        run.params.chunks);
    sim::Engine engine(schedule, costs);
    if (in.network) engine.set_network(*in.network);
    engine.set_input_rule(in.input_rule);
    engine.set_p2p(in.p2p);
    sim::TransferLog transfers;
    engine.add_observer(transfers);
    const sim::Timeline timeline = engine.run();
    traces::save_perfetto_trace(*trace_file, schedule, timeline, transfers.transfers(), costs);
  }
  if (!in.out.empty()) write_results(*results_file, in, std::span(&run, 1), command_line);
  for (std::optional<sim::OutputFile>* file : {&schedule_file, &trace_file, &results_file}) {
    if (*file) (*file)->commit();
  }
  if (in.json) {
    write_json(out, run);
  } else {
    write_simulate_table(out, in, run);
  }
  return 0;
}

int cmd_compare(const std::vector<std::string>& args, const std::string& command_line,
                std::ostream& out, std::ostream& err) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")(
      "schedule,s", po::value<std::string>()->default_value("all"),
      "'all' or a comma-separated list of schedule names");
  add_run_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, out,
             "usage: bubblesim compare [-s all|NAME,NAME] [-p P] [-m M] [--f MS] [--b MS] "
             "[--w MS] [--comm MS] [--cluster FILE.yaml [--dp N]] [--json] [--out FILE.h5 "
             "[--run-name PREFIX] [--overwrite]]\n\n"
             "Simulates several schedules on the same inputs "
             "and prints them side by side.")) {
    return 0;
  }
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  const RunInputs in = read_run_inputs(vm);
  const std::string chosen = vm["schedule"].as<std::string>();
  // `-s all` leaves out, with a note, the schedules these parameters do not suit (1f1b-i
  // when m is not a multiple of p, say); a schedule named in the list is an error.
  std::vector<RunSummary> runs;
  for (const sim::ScheduleGenerator* g : select(registry, chosen)) {
    try {
      sim::Schedule schedule;
      const std::string name(g->name());
      const Recording recording{in.run_name.empty() ? name : in.run_name + "." + name,
                                command_line};
      runs.push_back(run_schedule(name, schedule, g, params_for(in, *g, true), in, std::nullopt,
                                  in.out.empty() ? nullptr : &recording));
    } catch (const InvalidArgument& e) {
      if (chosen != "all") throw;
      err << "bubblesim compare: note: " << g->name() << " left out: " << e.what() << '\n';
    }
  }
  if (runs.empty()) throw InvalidArgument("no schedule can run with these parameters");
  if (!in.out.empty()) {
    sim::OutputFile file(in.out);
    write_results(file, in, runs, command_line);
    file.commit();
  }
  if (in.json) {
    write_json(out, runs);
  } else {
    write_compare_table(out, in, runs);
  }
  return 0;
}

int cmd_import(const std::vector<std::string>& args, const std::string& command_line,
               std::ostream& out) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("trace", po::value<std::vector<std::string>>(), "trace files (positional)")
    ("summary", po::bool_switch(), "print the profile as tables (the default)")
    ("json", po::bool_switch(), "print the per-pass statistics as a JSON array instead")
    ("label-regex", po::value<std::string>(),
     "name ranges by this regular expression with named groups pass (F, B, W, BW; I for B) "
     "and optionally stage, microbatch, chunk, instead of PyTorch's PP:<stage><F|I|W|B><mb>")
    ("out", po::value<std::string>(),
     "also write the profile (every pass and NCCL sample, the devices) to this HDF5 profile "
     "file, replacing it (docs/profile-format.md); 'simulate --profile' reads it")
    ("iteration-regex", po::value<std::string>(),
     "ranges whose name matches start an iteration (default: the optimizer step)")
    ("write-schedule", po::value<std::string>(),
     "also write the executed order of the first complete iteration to this PyTorch CSV file");
  // clang-format on
  po::variables_map vm;
  if (!parse(args, desc, vm, out,
             "usage: bubblesim import TRACE... [--summary | --json] [--label-regex REGEX] "
             "[--out PROFILE.h5] [--iteration-regex REGEX] [--write-schedule FILE.csv]\n\n"
             "Reads PyTorch profiler (Kineto) Chrome-trace JSON files, plain or .gz, attributes "
             "their kernels to the pipeline passes' labelled ranges and prints per stage and "
             "pass the kernel time, and the NCCL kernels by collective.",
             "trace")) {
    return 0;
  }
  if (vm.count("trace") == 0) throw Usage{"give one or more trace files (see --help)"};
  if (vm["summary"].as<bool>() && vm["json"].as<bool>()) {
    throw Usage{"give --summary or --json, not both"};
  }
  std::optional<sim::OutputFile> profile_file;  // checked before the traces are read
  if (vm.count("out") != 0) {
    if (vm["out"].as<std::string>().empty()) {
      throw InvalidArgument("option --out: expected a file name");
    }
    profile_file.emplace(vm["out"].as<std::string>());
  }
  std::unique_ptr<traces::RangeLabeller> labeller;
  if (vm.count("label-regex") != 0) {
    labeller = std::make_unique<traces::RegexLabeller>(vm["label-regex"].as<std::string>());
  } else {
    labeller = std::make_unique<traces::PipeliningLabeller>();
  }
  const traces::Profile profile = traces::import_kineto_traces(
      vm["trace"].as<std::vector<std::string>>(), *labeller,
      vm.count("iteration-regex") != 0 ? vm["iteration-regex"].as<std::string>()
                                       : std::string(traces::kOptimizerStepPattern));
  const std::string write_schedule =
      vm.count("write-schedule") != 0 ? vm["write-schedule"].as<std::string>() : "";
  // The executed order first: it is what refuses (no complete iteration to write).
  std::ostringstream executed;
  write_executed_summary(executed, profile, write_schedule);
  if (profile_file) {
    analysis::write_profile(*profile_file, profile, {BUBBLESIM_VERSION, command_line});
    profile_file->commit();
  }
  if (vm["json"].as<bool>()) {
    write_profile_json(out, profile);
  } else {
    write_profile_table(out, profile);
    out << executed.str();
  }
  return 0;
}

// `args` as a shell would need them: each quoted unless plain.
std::string shell_words(const std::vector<std::string>& args) {
  std::string line;
  for (const std::string& arg : args) {
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789_./=:,+-@%") == std::string::npos;
    line += line.empty() ? "" : " ";
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (const char c : arg)
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

bool parse_command(const std::vector<std::string>& args,
                   const boost::program_options::options_description& desc,
                   boost::program_options::variables_map& vm, std::ostream& out,
                   const char* synopsis, const char* positional) {
  return parse(args, desc, vm, out, synopsis, positional);
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string command = args.empty() ? "" : args.front();
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  const std::string who =
      command.empty() || command[0] == '-' ? "bubblesim" : "bubblesim " + command;
  try {
    // Buffer the output so that a failure leaves nothing half-written.
    std::ostringstream buffer;
    int status = 0;
    if (command == "-h" || command == "--help" || command == "help") {
      buffer << kUsage;
    } else if (command == "--version") {
      buffer << "bubblesim " BUBBLESIM_VERSION "\n";
    } else if (command == "schedules") {
      status = cmd_schedules(rest, buffer);
    } else if (command == "simulate") {
      status = cmd_simulate(rest, "bubblesim " + shell_words(args), buffer);
    } else if (command == "compare") {
      status = cmd_compare(rest, "bubblesim " + shell_words(args), buffer, err);
    } else if (command == "sweep") {
      status = cmd_sweep(rest, "bubblesim " + shell_words(args), buffer, err);
    } else if (command == "merge") {
      status = cmd_merge(rest, "bubblesim " + shell_words(args), buffer);
    } else if (command == "report") {
      status = cmd_report(rest, buffer);
    } else if (command == "advise") {
      status = cmd_advise(rest, buffer, err);
    } else if (command == "validate") {
      status = cmd_validate(rest, buffer, err);
    } else if (command == "calibrate") {
      status = cmd_calibrate(rest, buffer, err);
    } else if (command == "import") {
      status = cmd_import(rest, "bubblesim " + shell_words(args), buffer);
    } else if (command == "replay") {
      status = cmd_replay(rest, buffer);
    } else if (command == "profile") {
      return cmd_profile(rest, out, err);  // the command's output is not buffered
    } else if (command.empty()) {
      throw Usage{
          "missing command; valid commands are: schedules, simulate, compare, sweep, merge, "
          "report, advise, import, replay, validate, calibrate, profile (see --help)"};
    } else {
      throw Usage{"unknown command '" + command +
                  "'; valid commands are: schedules, simulate, compare, sweep, merge, report, "
                  "advise, import, replay, validate, calibrate, profile"};
    }
    out << buffer.str() << std::flush;
    return status;
  } catch (const Usage& e) {
    err << who << ": error: " << e.message << '\n';
  } catch (const po::error& e) {
    err << who << ": error: " << one_line(program_options_message(e, args)) << " (see '" << who
        << " --help')\n";
  } catch (const Error& e) {
    err << who << ": error: " << one_line(e.what()) << '\n';
  } catch (const std::exception& e) {
    err << who << ": " << one_line(e.what()) << '\n';
    return 1;
  }
  return 2;
}

}  // namespace bubblesim::cli
