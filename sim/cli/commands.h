// What the commands share inside the command line (not a public interface).
#pragma once

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "analysis/app/run.h"
#include "sim/cli/options.h"
#include "sim/cli/output.h"
#include "sim/output_file.h"
#include "sim/schedule_registry.h"
#include "traces/profile.h"

namespace bubblesim::cli {

// A bad-usage exit: the message is printed as one line (exit status 2).
struct UsageError {
  std::string message;
};

// Parses `args` against `desc` into `vm` as every command does (positional arguments go to the
// option `positional`, else are an error); returns false after printing --help to `out`.
bool parse_command(const std::vector<std::string>& args,
                   const boost::program_options::options_description& desc,
                   boost::program_options::variables_map& vm, std::ostream& out,
                   const char* synopsis, const char* positional = nullptr);

// What --out records of a run besides the simulation: its name and the command.
struct Recording {
  std::string run_name;
  std::string command_line;
};

// The request for such a run: with `exact_time_limit_s`, improved by the exact mode; with
// `recording`, keeping the run's record for the results file (runs.cpp).
app::RunRequest run_request(std::string name, const sim::ScheduleGenerator* generator,
                            sim::ScheduleParams params, std::optional<double> exact_time_limit_s,
                            const Recording* recording);

// Runs `schedule` (or, with a generator, the schedule it builds) in the inputs' scenario
// (app::run), as simulate does (runs.cpp); with `exact_time_limit_s`, improved by the
// exact mode; with `recording`, keeping the run's record for the results file. `schedule`
// becomes the schedule that ran.
RunSummary run_schedule(std::string name, sim::Schedule& schedule,
                        const sim::ScheduleGenerator* generator, sim::ScheduleParams params,
                        const RunInputs& in, std::optional<double> exact_time_limit_s = {},
                        const Recording* recording = nullptr);

// Adds the runs' records to the --out file (all or none of them), into `file`'s temporary.
void write_results(sim::OutputFile& file, const RunInputs& in, std::span<RunSummary> runs,
                   const std::string& command_line);

// `bubblesim schedules` (schedules.cpp): the registry's schedules, their parameters and
// descriptions.
int cmd_schedules(const std::vector<std::string>& args, std::ostream& out);

// `bubblesim simulate` (simulate.cpp): one schedule, generated or read from a file.
int cmd_simulate(const std::vector<std::string>& args, const std::string& command_line,
                 std::ostream& out);

// `bubblesim compare` (compare.cpp): several schedules on the same inputs; notes of schedules
// `-s all` leaves out go to `err`.
int cmd_compare(const std::vector<std::string>& args, const std::string& command_line,
                std::ostream& out, std::ostream& err);

// `bubblesim import` (import.cpp): Kineto traces into per-pass statistics and a profile.
int cmd_import(const std::vector<std::string>& args, const std::string& command_line,
               std::ostream& out);

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
