#include "sim/cli/commands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>

#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

int cmd_schedules(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out, "usage: bubblesim schedules\n\nLists every schedule."))
    return 0;
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

}  // namespace bubblesim::cli
