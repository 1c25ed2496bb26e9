#include "sim/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <sstream>

#include "sim/cli/options.h"
#include "sim/cli/output.h"
#include "sim/cost_model.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/interleaved.h"
#include "sim/simulation.h"

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

Run 'bubblesim COMMAND --help' for the options of a command. With no timing options, simulate
and compare use the zero-bubble paper's 1.5B model at p=8, m=24 (F 18.522, B 18.086, W 9.337,
comm 0.601 ms).
)";

// A bad-usage exit: the message is printed as one line.
struct Usage {
  std::string message;
};

sim::ScheduleRegistry make_registry() {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  sim::add_interleaved_schedules(registry);
  return registry;
}

// Parses `args` (after the command) against `desc`; returns false after printing help.
bool parse(const std::vector<std::string>& args, const po::options_description& desc,
           po::variables_map& vm, std::ostream& out, const char* synopsis) {
  // No command takes positional arguments: collect them to name the first in the error.
  po::options_description all(desc);
  all.add_options()("unexpected", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("unexpected", -1);
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
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

RunSummary simulate_one(const sim::ScheduleGenerator& generator, const RunInputs& in,
                        bool compare) {
  const sim::ScheduleParams params = params_for(in, generator, compare);
  const sim::Schedule schedule = generator.generate(params);
  const sim::PerDeviceCostModel costs(in.device_costs, params.chunks);
  return RunSummary{std::string(generator.name()), params, sim::simulate(schedule, costs).metrics};
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
  const sim::ScheduleRegistry registry = make_registry();
  fmt::print(out, "{:<8}  {:<16}  {}\n", "name", "parameters", "description");
  for (const sim::ScheduleGenerator* g : registry.all()) {
    fmt::print(out, "{:<8}  {:<16}  {}\n", g->name(), g->parameters(), g->description());
  }
  return 0;
}

// `simulate` (one schedule, per-device table) and `compare` (several, side by side).
int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            bool compare) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help");
  if (compare) {
    desc.add_options()("schedule,s", po::value<std::string>()->default_value("all"),
                       "'all' or a comma-separated list of schedule names");
  } else {
    desc.add_options()("schedule,s", po::value<std::string>()->required(),
                       "schedule name (see 'bubblesim schedules')");
  }
  add_run_options(desc);
  const char* synopsis =
      compare ? "usage: bubblesim compare [-s all|NAME,NAME] [-p P] [-m M] [--f MS] [--b MS] "
                "[--w MS] [--comm MS] [--json]\n\nSimulates several schedules on the same "
                "inputs and prints them side by side."
              : "usage: bubblesim simulate -s NAME [-p P] [-m M] [--f MS] [--b MS] [--w MS] "
                "[--comm MS] [--json]\n\nSimulates one schedule and prints its iteration time, "
                "bubble rate and peak activation memory, per device.";
  po::variables_map vm;
  if (!parse(args, desc, vm, out, synopsis)) return 0;

  const sim::ScheduleRegistry registry = make_registry();
  const RunInputs in = read_run_inputs(vm);
  const std::string chosen = vm["schedule"].as<std::string>();
  const auto generators = compare
                              ? select(registry, chosen)
                              : std::vector<const sim::ScheduleGenerator*>{&registry.get(chosen)};
  // `compare -s all` leaves out, with a note, the schedules these parameters do not suit
  // (1f1b-i when m is not a multiple of p, say); a schedule named on its own is an error.
  const bool all = compare && chosen == "all";
  std::vector<RunSummary> runs;
  for (const sim::ScheduleGenerator* g : generators) {
    try {
      runs.push_back(simulate_one(*g, in, compare));
    } catch (const InvalidArgument& e) {
      if (!all) throw;
      err << "bubblesim compare: note: " << g->name() << " left out: " << e.what() << '\n';
    }
  }
  if (runs.empty()) throw InvalidArgument("no schedule can run with these parameters");
  if (in.json && compare) {
    write_json(out, runs);
  } else if (in.json) {
    write_json(out, runs.front());
  } else if (compare) {
    write_compare_table(out, in, runs);
  } else {
    write_simulate_table(out, in, runs.front());
  }
  return 0;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

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
      buffer << "bubblesim 0.1.0\n";
    } else if (command == "schedules") {
      status = cmd_schedules(rest, buffer);
    } else if (command == "simulate") {
      status = cmd_run(rest, buffer, err, false);
    } else if (command == "compare") {
      status = cmd_run(rest, buffer, err, true);
    } else if (command.empty()) {
      throw Usage{"missing command; valid commands are: schedules, simulate, compare (see --help)"};
    } else {
      throw Usage{"unknown command '" + command +
                  "'; valid commands are: schedules, simulate, compare"};
    }
    out << buffer.str() << std::flush;
    return status;
  } catch (const Usage& e) {
    err << who << ": error: " << e.message << '\n';
  } catch (const po::error& e) {
    err << who << ": error: " << one_line(e.what()) << " (see '" << who << " --help')\n";
  } catch (const Error& e) {
    err << who << ": error: " << one_line(e.what()) << '\n';
  } catch (const std::exception& e) {
    err << who << ": " << one_line(e.what()) << '\n';
    return 1;
  }
  return 2;
}

}  // namespace bubblesim::cli
