#include "sim/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <sstream>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

// What a command is called with: its arguments (after the command's name), the whole command
// line for the records it writes, and where its results and progress go.
struct CommandCall {
  const std::vector<std::string>& args;
  const std::string& command_line;
  std::ostream& out;
  std::ostream& err;
};

// One command of the table: its name, the line --help gives it, and what runs it. A command
// that is not `buffered` writes straight to the streams (profile: the profiled command's own
// output); the others' output is held until they succeed.
struct Command {
  const char* name;
  const char* summary;
  int (*run)(const CommandCall& call);
  bool buffered = true;
};

// clang-format off
const Command kCommands[] = {
  {"schedules", "list every schedule with its parameters",
   [](const CommandCall& c) { return cmd_schedules(c.args, c.out); }},
  {"simulate", "simulate one schedule (-s NAME) and print its metrics per device",
   [](const CommandCall& c) { return cmd_simulate(c.args, c.command_line, c.out); }},
  {"compare", "simulate several schedules (-s all or -s NAME,NAME) side by side",
   [](const CommandCall& c) { return cmd_compare(c.args, c.command_line, c.out, c.err); }},
  {"sweep", "simulate every configuration of a study (YAML) into an HDF5 table (also mpirun)",
   [](const CommandCall& c) { return cmd_sweep(c.args, c.command_line, c.out, c.err); }},
  {"merge", "join the sweep tables of a study's shards (sweep --shard K/N)",
   [](const CommandCall& c) { return cmd_merge(c.args, c.command_line, c.out); }},
  {"report", "tables of a results file's runs and sweep; --html/--svg pictures",
   [](const CommandCall& c) { return cmd_report(c.args, c.out); }},
  {"advise", "search schedules, p, m, v and microbatch size for a model on N GPUs",
   [](const CommandCall& c) { return cmd_advise(c.args, c.out, c.err); }},
  {"import", "read PyTorch profiler (Kineto) traces and print per-pass statistics",
   [](const CommandCall& c) { return cmd_import(c.args, c.command_line, c.out); }},
  {"replay", "simulate what the traces executed and compare with what they measured",
   [](const CommandCall& c) { return cmd_replay(c.args, c.out); }},
  {"validate", "run the zero-bubble authors' reference sets and compare the schedulers",
   [](const CommandCall& c) { return cmd_validate(c.args, c.out, c.err); }},
  {"calibrate", "fit op overheads and the p2p mode to measured runs (--calibration CAL.yaml)",
   [](const CommandCall& c) { return cmd_calibrate(c.args, c.out, c.err); }},
  {"profile", "run a command with the CUPTI profiler injected (bubblesim profile -- CMD...)",
   [](const CommandCall& c) { return cmd_profile(c.args, c.out, c.err); }, false},
};
// clang-format on

// `bubblesim --help`: the commands of the table, one a line.
std::string usage() {
  std::string text =
      "bubblesim - discrete-event simulator for pipeline-parallel training schedules\n\n"
      "usage: bubblesim COMMAND [options]\n\ncommands:\n";
  for (const Command& command : kCommands)
    text += fmt::format("  {:<12}{}\n", command.name, command.summary);
  return text +
         "\nRun 'bubblesim COMMAND --help' for the options of a command. With no timing options, "
         "simulate\nand compare use the zero-bubble paper's 1.5B model at p=8, m=24 (F 18.522, "
         "B 18.086, W 9.337,\ncomm 0.601 ms).\n";
}

// "schedules, simulate, ...": the valid command names.
std::string command_names() {
  std::string names;
  for (const Command& command : kCommands)
    names += (names.empty() ? "" : ", ") + std::string(command.name);
  return names;
}

const Command* find_command(const std::string& name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
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

bool parse_command(const std::vector<std::string>& args, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const char* synopsis,
                   const char* positional) {
  // Collect unwanted positional arguments to name the first in the error.
  po::options_description all(desc);
  if (positional == nullptr) {
    all.add_options()("unexpected", po::value<std::vector<std::string>>());
  }
  po::positional_options_description positionals;
  positionals.add(positional != nullptr ? positional : "unexpected", -1);
  po::store(po::command_line_parser(args).options(all).positional(positionals).run(), vm);
  if (vm.count("unexpected") != 0) {
    throw UsageError{"unexpected argument '" +
                     vm["unexpected"].as<std::vector<std::string>>().front() + "' (see --help)"};
  }
  if (vm.count("help") != 0) {
    fmt::print(out, "{}\n\n", synopsis);
    out << desc << '\n';
    return false;
  }
  po::notify(vm);
  return true;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string name = args.empty() ? "" : args.front();
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  const std::string who = name.empty() || name[0] == '-' ? "bubblesim" : "bubblesim " + name;
  try {
    // Buffer the output so that a failure leaves nothing half-written.
    std::ostringstream buffer;
    int status = 0;
    if (name == "-h" || name == "--help" || name == "help") {
      buffer << usage();
    } else if (name == "--version") {
      buffer << "bubblesim " BUBBLESIM_VERSION "\n";
    } else if (name.empty()) {
      throw UsageError{"missing command; valid commands are: " + command_names() + " (see --help)"};
    } else if (const Command* command = find_command(name)) {
      const std::string command_line = "bubblesim " + shell_words(args);
      if (!command->buffered) return command->run({rest, command_line, out, err});
      status = command->run({rest, command_line, buffer, err});
    } else {
      throw UsageError{"unknown command '" + name + "'; valid commands are: " + command_names()};
    }
    out << buffer.str() << std::flush;
    return status;
  } catch (const UsageError& e) {
    err << who << ": error: " << e.message << '\n';
  } catch (const po::error& e) {
    err << who << ": error: " << one_line(program_options_message(e, args)) << " (see '" << who
        << " --help')\n";
  } catch (const Error& e) {
    err << who << ": error: " << one_line(message_of(e)) << '\n';
  } catch (const std::exception& e) {
    err << who << ": " << one_line(e.what()) << '\n';
    return 1;
  }
  return 2;
}

}  // namespace bubblesim::cli
