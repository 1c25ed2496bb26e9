// Options shared by `bubblesim simulate` and `bubblesim compare` (DESIGN.md §4), and their
// checking. Every bad value throws bubblesim::InvalidArgument naming the option.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <vector>

#include "analysis/app/scenario.h"
#include "sim/schedule_registry.h"

namespace bubblesim::cli {

namespace app = analysis::app;

// What a simulate or compare run needs besides the schedule names: the scenario, and what the
// command line asks of the outputs.
struct RunInputs : app::Scenario {
  bool json = false;
  // --out: the HDF5 results file the runs are added to, "" for none; --run-name (a name for
  // the run, "" for the schedule's) and --overwrite (replace runs of the same names).
  std::string out;
  std::string run_name;
  bool overwrite = false;
};

// Adds -p, -m, -v, --f, --b, --w, --comm, --m-b, --m-w, --mem-limit, --overlap-efficiency,
// --paper-evaluator,
// --model, --gpu, --efficiency, --profile, --cluster, --dp, --allreduce, --optimizer-sync,
// --optimizer-ms, --comm-bytes, --grad-bytes, --json, --out, --run-name and --overwrite to `desc`.
void add_run_options(boost::program_options::options_description& desc);

// `text` as a whole number from `min` to `max` (decimal digits only: "-1" is refused rather than
// wrapped, as Boost.Program_options would for an unsigned type); else InvalidArgument naming
// `option`.
std::uint64_t parse_whole_number(const std::string& option, const std::string& text,
                                 std::uint64_t min, std::uint64_t max);

// The message of an error as the command line words it: a setting's error names the option
// ("option --dp: ..."), any other error is its what().
std::string message_of(const std::exception& e);

// The message of an error of Boost.Program_options raised parsing `args`, safely: its what()
// loops forever when the offending token itself holds a placeholder such as "%original_token%"
// (found by fuzzing), so when an argument holds a '%', a message of ours naming the option is
// given instead.
std::string program_options_message(const std::exception& e, const std::vector<std::string>& args);

// Reads and checks the options added by add_run_options. With `from_file`, p, m and v are the
// file's (devices, microbatches, and the stages a microbatch runs per device: stages per device,
// or half of them in a bidirectional schedule); -p/-m/-v given must agree with them.
RunInputs read_run_inputs(const boost::program_options::variables_map& vm,
                          const sim::Schedule* from_file = nullptr);

// The options of add_run_options as the application's settings (analysis/app/scenario.h):
// a setting is given where its option was given explicitly.
app::ScenarioSettings settings_from_options(const boost::program_options::variables_map& vm);

using app::describe_op_overheads;
using app::p2p_name;
using app::params_for;
using app::parse_op_overheads;
using app::parse_p2p;

// The value of -j/--jobs (sweep, advise, validate): 0 for all cores, else at most 4096; else
// InvalidArgument naming the option.
int read_jobs(const boost::program_options::variables_map& vm);

// Parses "FROM:TO:STEP" (0 < FROM <= TO, STEP > 0, at most 1000 points): FROM, FROM + STEP,
// ... up to TO.
std::vector<double> parse_sweep(const std::string& option, const std::string& text);

}  // namespace bubblesim::cli
