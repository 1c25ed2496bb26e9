#include "sim/cli/commands.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>

#include "analysis/app/run.h"
#include "analysis/results_file.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

app::RunRequest run_request(std::string name, const sim::ScheduleGenerator* generator,
                            sim::ScheduleParams params, std::optional<double> exact_time_limit_s,
                            const Recording* recording) {
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
  return request;
}

RunSummary run_schedule(std::string name, sim::Schedule& schedule,
                        const sim::ScheduleGenerator* generator, sim::ScheduleParams params,
                        const RunInputs& in, std::optional<double> exact_time_limit_s,
                        const Recording* recording) {
  return app::run(
      in, run_request(std::move(name), generator, params, exact_time_limit_s, recording), schedule);
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

}  // namespace bubblesim::cli
