// One run of a scenario (analysis/app/scenario.h): the schedule generated from the scenario's
// costs (or given), improved by the exact mode where asked, simulated, replicated over the data
// parallel replicas and finished with the all-reduce and optimizer step, and summarised with
// its derived metrics (analysis/app/run_summary.h); a Monte Carlo repetition over a profile's
// samples. `simulate`, `compare`, `sweep`, `advise` and `calibrate` all run through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/app/run_summary.h"
#include "analysis/app/scenario.h"
#include "sim/schedule.h"
#include "sim/schedule_registry.h"

namespace bubblesim::analysis::app {

// What to run in a scenario besides its settings.
struct RunRequest {
  // Builds the schedule from the scenario's pass times (without op overheads, as a scheduler
  // fed by a profile sees them); null: run the `schedule` given to run().
  const sim::ScheduleGenerator* generator = nullptr;
  std::string name;            // the run's schedule name
  sim::ScheduleParams params;  // params_for(scenario, generator, ...)
  // Improve the generated schedule with the exact (ILP) mode, within this time; refused with
  // replicas or the paper's evaluator, and by generators that have no exact limits.
  std::optional<double> exact_time_limit_s;
  // Keep the run's record for a results file, under this name, with this command line.
  bool keep_record = false;
  std::string record_name;
  std::string command_line;
};

// Runs `request` in `scenario`. `schedule` is the schedule to run when the request has no
// generator, and becomes the schedule that ran (all replicas combined with replicas).
RunSummary run(const Scenario& scenario, const RunRequest& request, sim::Schedule& schedule);
// The same with a generator, the schedule not kept.
RunSummary run(const Scenario& scenario, const RunRequest& request);

// Runs `count` requests in `scenario` at once, on `jobs` threads (oneTBB; 0 for all cores):
// request(i) makes the i-th (called on any thread, so it must be safe to call concurrently).
// outcomes[i] is its run's summary, or the exception that making or running it threw (the
// other runs go on). Runs are independent and deterministic: the outcomes do not depend on
// `jobs`.
struct RunOutcome {
  std::optional<RunSummary> summary;
  std::exception_ptr error;  // set when `summary` is empty
};
std::vector<RunOutcome> run_each(const Scenario& scenario, std::size_t count,
                                 const std::function<RunRequest(std::size_t)>& request,
                                 int jobs = 0);

// The schedule `generator` builds from `params` for the scenario, as run() builds it (from the
// pass times without overheads; with replicas, replica 0's).
sim::Schedule generate_schedule(const sim::ScheduleGenerator& generator,
                                const sim::ScheduleParams& params, const Scenario& scenario);

// Ops per second a Monte Carlo run simulates (measured: 1F1B, p = 2, m = 64, 20000 samples).
inline constexpr double kMonteCarloOpsPerSecond = 2e7;

// `samples` runs of `schedule`, each op's duration drawn anew from its stage's profile samples
// (Scenario::device_samples) by a generator seeded with `seed`. An hour's worth of runs (the
// schedule's ops times `samples` at kMonteCarloOpsPerSecond) is a SettingError ("samples")
// unless `allow_long`.
MonteCarloSummary monte_carlo(const sim::Schedule& schedule, const Scenario& scenario, int chunks,
                              int samples, std::uint64_t seed, bool allow_long = false);

// One point of a memory sweep: the limit as a multiple of p M_B, and the run.
struct SweepPoint {
  double limit_factor = 0;
  RunSummary run;
  // The limit whose generated schedule `run` is: limit_factor, or a lower one of the sweep
  // (memory_sweep).
  double schedule_limit_factor = 0;
};
// Runs `generator` in the scenario at each memory limit factor * p * M_B (device 0's M_B), the
// limits at once (run_each, all cores); the first error in the order of `factors` is thrown.
// A schedule within a limit is within every higher one, so each point takes the run of a lower
// limit of the sweep where that run is shorter in iteration time and in largest device span
// (neither longer, one shorter; run.params.mem_limit stays the point's): the generators are
// heuristics, and more room can lead one to a longer schedule, which a sweep would show as
// a curve that rises with the memory.
// A generator that takes no memory limit is a SettingError ("mem-limit-sweep").
std::vector<SweepPoint> memory_sweep(const Scenario& scenario,
                                     const sim::ScheduleGenerator& generator,
                                     const std::vector<double>& factors);

// `schedule` run again in the scenario with its transfers logged (the plain run logs none, and
// is faster), for a timeline export.
struct TracedRun {
  sim::Timeline timeline;
  std::vector<sim::TransferEvent> transfers;
};
TracedRun trace_run(const sim::Schedule& schedule, const Scenario& scenario, int chunks);

}  // namespace bubblesim::analysis::app
