#include "sim/cli/commands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <optional>
#include <span>

#include "analysis/app/run.h"
#include "sim/cost_model.h"
#include "sim/output_file.h"
#include "sim/schedules/builtin.h"
#include "sim/simulation.h"
#include "traces/lowered_timing.h"
#include "traces/perfetto_export.h"
#include "traces/schedule_csv.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

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
    ("time-limit", po::value<double>()->default_value(10),
     "seconds the --exact solver's search may take (CBC's set-up and root work come on top)")
    ("mem-limit-sweep", po::value<std::string>(),
     "FROM:TO:STEP: simulate at each memory limit, as multiples of p*M_B, and print the "
     "bubble rate against memory (schedules that take --mem-limit); a limit whose schedule is "
     "longer than a lower limit's takes that one (it fits)")
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
  if (!parse_command(args, desc, vm, out,
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
    throw UsageError{"give either -s NAME or --schedule-file FILE (see --help)"};
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
      const std::vector<SweepPoint> points = app::memory_sweep(
          in, generator, parse_sweep("mem-limit-sweep", vm["mem-limit-sweep"].as<std::string>()));
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
    run.monte_carlo =
        app::monte_carlo(schedule, in, run.params.chunks, samples,
                         parse_whole_number("--seed", vm["seed"].as<std::string>(), 0, UINT64_MAX),
                         vm["allow-long"].as<bool>());
  }
  if (schedule_file) traces::save_schedule_csv(*schedule_file, schedule, format);
  if (trace_file) {
    const app::TracedRun traced = app::trace_run(schedule, in, run.params.chunks);
    const sim::PerDeviceCostModel costs(in.replicated ? in.replica_costs : in.device_costs,
                                        run.params.chunks);
    traces::save_perfetto_trace(*trace_file, schedule, traced.timeline, traced.transfers, costs);
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

}  // namespace bubblesim::cli
