#include "sim/cli/commands.h"

#include <boost/program_options.hpp>
#include <exception>
#include <sstream>

#include "analysis/app/run.h"
#include "sim/output_file.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

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

}  // namespace

int cmd_compare(const std::vector<std::string>& args, const std::string& command_line,
                std::ostream& out, std::ostream& err) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")(
      "schedule,s", po::value<std::string>()->default_value("all"),
      "'all' or a comma-separated list of schedule names")(
      "jobs,j", po::value<int>()->default_value(0, "all cores"),
      "schedules simulated at once (the results do not depend on it)");
  add_run_options(desc);
  po::variables_map vm;
  if (!parse_command(
          args, desc, vm, out,
          "usage: bubblesim compare [-s all|NAME,NAME] [-j N] [-p P] [-m M] [--f MS] [--b MS] "
          "[--w MS] [--comm MS] [--cluster FILE.yaml [--dp N]] [--json] [--out FILE.h5 "
          "[--run-name PREFIX] [--overwrite]]\n\n"
          "Simulates several schedules on the same inputs "
          "and prints them side by side.")) {
    return 0;
  }
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  const RunInputs in = read_run_inputs(vm);
  const int jobs = read_jobs(vm);
  const std::string chosen = vm["schedule"].as<std::string>();
  const std::vector<const sim::ScheduleGenerator*> generators = select(registry, chosen);
  // Every schedule's run at once (each is deterministic: the table is the same on any number
  // of cores), then in the order named. `-s all` leaves out, with a note, the schedules these
  // parameters do not suit (1f1b-i when m is not a multiple of p, say); a schedule named in
  // the list is an error.
  auto request = [&](std::size_t i) {
    const sim::ScheduleGenerator& g = *generators[i];
    const std::string name(g.name());
    const Recording recording{in.run_name.empty() ? name : in.run_name + "." + name, command_line};
    return run_request(name, &g, params_for(in, g, true), std::nullopt,
                       in.out.empty() ? nullptr : &recording);
  };
  std::vector<app::RunOutcome> outcomes = app::run_each(in, generators.size(), request, jobs);
  std::vector<RunSummary> runs;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    try {
      if (outcomes[i].error) std::rethrow_exception(outcomes[i].error);
      runs.push_back(std::move(*outcomes[i].summary));
    } catch (const InvalidArgument& e) {
      if (chosen != "all") throw;
      err << "bubblesim compare: note: " << generators[i]->name() << " left out: " << message_of(e)
          << '\n';
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

}  // namespace bubblesim::cli
