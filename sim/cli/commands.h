// What the commands share inside the command line (not a public interface).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/options.h"
#include "sim/cli/output.h"
#include "sim/schedule_registry.h"
#include "traces/profile.h"

namespace bubblesim::cli {

// Parses `args` against `desc` into `vm` as every command does (positional arguments go to the
// option `positional`, else are an error); returns false after printing --help to `out`.
bool parse_command(const std::vector<std::string>& args,
                   const boost::program_options::options_description& desc,
                   boost::program_options::variables_map& vm, std::ostream& out,
                   const char* synopsis, const char* positional = nullptr);

// `bubblesim calibrate` (calibrate.cpp): fits overheads to measured runs.
int cmd_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `bubblesim sweep` (sweep.cpp). `args` follow the command; progress goes to `err`.
int cmd_sweep(const std::vector<std::string>& args, const std::string& command_line,
              std::ostream& out, std::ostream& err);

// `bubblesim merge` (merge.cpp): joins the sweep tables of a study's shards.
int cmd_merge(const std::vector<std::string>& args, const std::string& command_line,
              std::ostream& out);

// `bubblesim report` (report.cpp).
int cmd_report(const std::vector<std::string>& args, std::ostream& out);

// `bubblesim advise` (advise.cpp). Progress goes to `err` when the search takes over a second;
// returns 2 when no configuration fits (the table of why still goes to `out`).
int cmd_advise(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `bubblesim validate` (validate.cpp): the reference sets of the zero-bubble authors' own
// schedulers, row by row, against bubblesim's; progress goes to `err`.
int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `bubblesim profile` (profile.cpp): runs a command with the CUPTI profiler injected; the
// command's own output goes straight to this process's stdout/stderr. Returns its status.
int cmd_profile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `bubblesim replay` (replay.cpp): simulates the order of passes the traces executed.
int cmd_replay(const std::vector<std::string>& args, std::ostream& out);

// For `bubblesim import` (replay.cpp): per iteration, each device's executed order and the
// measured iteration. With `write_schedule` not empty, writes the first iteration that forms a
// complete schedule to that CSV file (Error when none does) and says so.
void write_executed_summary(std::ostream& out, const traces::Profile& profile,
                            const std::string& write_schedule);

}  // namespace bubblesim::cli
