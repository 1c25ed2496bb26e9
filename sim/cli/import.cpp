#include "sim/cli/commands.h"

#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <sstream>

#include "analysis/profile_file.h"
#include "sim/output_file.h"
#include "traces/kineto_trace.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

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
     "ranges whose name matches start an iteration (default: the optimizer step); a "
     "labelled pass that comes again on its device also starts one")
    ("write-schedule", po::value<std::string>(),
     "also write the executed order of the first complete iteration to this PyTorch CSV file");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(
          args, desc, vm, out,
          "usage: bubblesim import TRACE... [--summary | --json] [--label-regex REGEX] "
          "[--out PROFILE.h5] [--iteration-regex REGEX] [--write-schedule FILE.csv]\n\n"
          "Reads PyTorch profiler (Kineto) Chrome-trace JSON files, plain or .gz, attributes "
          "their kernels to the pipeline passes' labelled ranges and prints per stage and "
          "pass the kernel time, and the NCCL kernels by collective.",
          "trace")) {
    return 0;
  }
  if (vm.count("trace") == 0) throw UsageError{"give one or more trace files (see --help)"};
  if (vm["summary"].as<bool>() && vm["json"].as<bool>()) {
    throw UsageError{"give --summary or --json, not both"};
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

}  // namespace bubblesim::cli
