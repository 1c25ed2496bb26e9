#include "analysis/app/run.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <random>

#include "sim/cost_model.h"
#include "sim/exact/zb_ilp.h"
#include "sim/replicas.h"
#include "sim/simulation.h"
#include "traces/sampled_cost_model.h"

namespace bubblesim::analysis::app {

namespace {

// Replaces `schedule` (built by `generator`) with the exact mode's result.
ExactSummary improve_exactly(sim::Schedule& schedule, const sim::ScheduleGenerator& generator,
                             const sim::ScheduleParams& params, double time_limit_s) {
  const std::vector<double> limits = generator.exact_limits(params);
  if (limits.empty()) {
    throw SettingError("exact", "applies to zb-1p, zb-2p, zb-auto, zb-v, v-half and v-min, not '" +
                                    std::string(generator.name()) + "'");
  }
  sim::exact::ExactResult r =
      sim::exact::solve_zero_bubble_ilp(schedule, *params.costs, limits, {time_limit_s});
  schedule = std::move(r.schedule);
  return ExactSummary{r.proven_optimal,
                      sim::ns_to_ms(r.span_ns),
                      sim::ns_to_ms(r.warm_start_span_ns),
                      r.bound_ns / 1e6,
                      r.gap(),
                      r.solve_s,
                      time_limit_s};
}

// The inputs of a run, for its record in the results file.
analysis::RunRecord record_header(const RunRequest& recording, const std::string& schedule,
                                  const sim::ScheduleParams& params, const Scenario& in) {
  const auto ms = [&](sim::TimeNs sim::DeviceCosts::*field) {
    std::vector<double> values;
    for (const sim::DeviceCosts& c : in.device_costs)
      values.push_back(sim::ns_to_ms(c.*field));
    return values;
  };
  analysis::RunRecord run;
  run.name = recording.record_name;
  run.bubblesim_version = BUBBLESIM_VERSION;
  run.command_line = recording.command_line;
  run.parameters = {schedule,
                    params.pp,
                    params.microbatches,
                    params.chunks,
                    ms(&sim::DeviceCosts::f_ns),
                    ms(&sim::DeviceCosts::b_ns),
                    ms(&sim::DeviceCosts::w_ns),
                    ms(&sim::DeviceCosts::comm_ns),
                    in.device_costs.front().m_b,
                    in.device_costs.front().m_w,
                    in.mem_limit};
  return run;
}

// A simulated run and, when its record is kept, its transfers.
struct SimulatedRun {
  sim::SimulationResult result;
  sim::TransferLog transfers;
};

// Simulates `schedule` with `costs`, over the inputs' network if there is one and with their
// input rule; `record`: log the transfers for the results file.
SimulatedRun simulate_run(const sim::Schedule& schedule, const sim::CostModel& costs,
                          const Scenario& in, bool record) {
  SimulatedRun run;
  std::vector<sim::EngineObserver*> observers;
  if (record) observers.push_back(&run.transfers);
  run.result = sim::simulate(schedule, costs, observers, in.network ? &*in.network : nullptr,
                             in.input_rule, in.p2p);
  return run;
}

// The summary fields every run has; `one` is one pipeline replica of the schedule run.
RunSummary summary_of(std::string name, const sim::ScheduleParams& params,
                      const sim::Metrics& metrics, const sim::Schedule& one, const Scenario& in) {
  RunSummary run;
  run.schedule = std::move(name);
  run.memory_unit = in.memory_unit;
  run.params = params;
  run.metrics = metrics;
  run.input_rule = in.input_rule;
  run.p2p = in.p2p;
  run.overheads = in.overheads;
  run.calibration = in.calibration;
  set_parameter_fields(run, one);
  run.static_memory_bytes = in.static_memory_bytes;
  run.samples_per_microbatch = in.samples_per_microbatch;
  run.profile = in.profile;
  return run;
}

// With `recording`, keeps the run's record for the results file, with the summary's fields
// (so after the summary is complete).
void keep_record(RunSummary& run, const RunRequest* recording, const Scenario& in,
                 const sim::Schedule& schedule, const sim::CostModel& costs,
                 const SimulatedRun& simulated) {
  if (recording == nullptr) return;
  run.record =
      analysis::make_run_record(record_header(*recording, run.schedule, run.params, in), schedule,
                                costs, simulated.result, simulated.transfers.transfers());
  add_summary_fields(*run.record, run);
}

// The costs the schedule generators see: the pass times without --op-overhead, as a scheduler
// fed by a profile's pass times sees them (so a calibration, which keeps each run's schedule,
// predicts what simulate does).
std::vector<sim::DeviceCosts> pass_times(std::vector<sim::DeviceCosts> costs) {
  for (sim::DeviceCosts& c : costs)
    c.overheads = {};
  return costs;
}

// run_schedule with --cluster, --dp or --optimizer-sync (RunInputs::replicated): the schedule
// (generated per replica with the replica's own costs) runs as dp replicas over the network,
// and the iteration is finished with the gradient all-reduce and the optimizer step.
// `schedule` becomes the replicas combined.
RunSummary run_replicated(std::string name, sim::Schedule& schedule,
                          const sim::ScheduleGenerator* generator, sim::ScheduleParams params,
                          const Scenario& in, std::optional<double> exact_time_limit_s,
                          const RunRequest* recording) {
  if (exact_time_limit_s) {
    throw SettingError("exact", "cannot be combined with cluster, dp or optimizer-sync");
  }
  const auto p = static_cast<std::size_t>(in.params.pp);
  std::vector<sim::Schedule> replicas;
  for (int r = 0; r < in.dp; ++r) {
    if (generator == nullptr) {
      replicas.push_back(schedule);
      continue;
    }
    const auto first = in.replica_costs.begin() + static_cast<std::ptrdiff_t>(r * p);
    const sim::PerDeviceCostModel replica_costs(
        pass_times(std::vector<sim::DeviceCosts>(first, first + static_cast<std::ptrdiff_t>(p))),
        params.chunks);
    params.costs = &replica_costs;
    replicas.push_back(generator->generate(params));
    params.costs = nullptr;
  }
  const sim::Schedule one = replicas.front();
  schedule = sim::combine_replicas(replicas);
  const sim::PerDeviceCostModel costs(in.replica_costs, params.chunks);
  const SimulatedRun simulated = simulate_run(schedule, costs, in, recording != nullptr);
  models::IterationInputs iteration = in.iteration;
  iteration.network = in.network ? &*in.network : nullptr;
  RunSummary run = summary_of(std::move(name), params, simulated.result.metrics, one, in);
  run.iteration = models::finish_iteration(schedule, simulated.result.timeline, iteration);
  run.dp = in.dp;
  run.allreduce = in.allreduce_name;
  run.optimizer_sync = in.optimizer_sync_name;
  run.physical_device = in.physical_device;
  run.device_gpus = in.device_gpus;
  run.capacity_bytes = in.capacity_bytes;
  run.flops_per_iteration = in.flops_per_microbatch * in.params.microbatches * in.dp;
  run.peak_flops_total = in.peak_flops_total;
  keep_record(run, recording, in, schedule, costs, simulated);
  return run;
}

// Simulates `schedule` with the inputs' costs. With a generator, first builds `schedule`
// from it with those same costs (the schedules built from costs use them), and with
// `exact_time_limit_s` improves it with the exact mode. With `recording`, also keeps the
// run's record for the results file.
RunSummary run_schedule(std::string name, sim::Schedule& schedule,
                        const sim::ScheduleGenerator* generator, sim::ScheduleParams params,
                        const Scenario& in, std::optional<double> exact_time_limit_s = {},
                        const RunRequest* recording = nullptr) {
  if (in.replicated) {
    return run_replicated(std::move(name), schedule, generator, params, in, exact_time_limit_s,
                          recording);
  }
  if (exact_time_limit_s && in.input_rule != sim::InputRule::All) {
    throw SettingError("exact", "cannot be combined with paper-evaluator");
  }
  const sim::PerDeviceCostModel costs(in.device_costs, params.chunks);
  std::optional<ExactSummary> exact;
  if (generator != nullptr) {
    const sim::PerDeviceCostModel generator_costs(pass_times(in.device_costs), params.chunks);
    params.costs = &generator_costs;
    schedule = generator->generate(params);
    if (exact_time_limit_s)
      exact = improve_exactly(schedule, *generator, params, *exact_time_limit_s);
    params.costs = nullptr;  // the summary outlives `costs`
  }
  const SimulatedRun simulated = simulate_run(schedule, costs, in, recording != nullptr);
  RunSummary run = summary_of(std::move(name), params, simulated.result.metrics, schedule, in);
  run.exact = exact;
  keep_record(run, recording, in, schedule, costs, simulated);
  return run;
}

}  // namespace

MonteCarloSummary monte_carlo(const sim::Schedule& schedule, const Scenario& in, int chunks,
                              int samples, std::uint64_t seed, bool allow_long) {
  // An hour's worth of runs is refused unless asked for: the estimate is the ops simulated
  // times a rate measured on the engine.
  std::size_t ops = 0;
  for (const auto& device : schedule.device_ops)
    ops += device.size();
  const double hours = static_cast<double>(ops) * samples / kMonteCarloOpsPerSecond / 3600;
  if (hours > 1 && !allow_long) {
    throw SettingError("samples", fmt::format("{} runs of {} ops would take about {:.1f} hours "
                                              "(at about {:.0e} ops per second); give fewer "
                                              "samples, or allow-long to run them anyway",
                                              samples, ops, hours, kMonteCarloOpsPerSecond));
  }
  traces::SampledCostModel costs(schedule, in.device_costs, in.device_samples, chunks);
  std::mt19937_64 rng(seed);
  std::vector<double> iteration_ms, bubble;
  for (int i = 0; i < samples; ++i) {
    costs.draw(rng);
    const sim::SimulationResult result =
        sim::simulate(schedule, costs, {}, nullptr, in.input_rule, in.p2p);
    iteration_ms.push_back(sim::ns_to_ms(result.metrics.iteration_time_ns));
    bubble.push_back(result.metrics.bubble_rate);
  }
  return {samples, seed, distribution(std::move(iteration_ms)), distribution(std::move(bubble))};
}

namespace {

// memory_sweep's rule: each point takes the run of a lower limit that is shorter (no longer in
// iteration time or largest device span, shorter in one), the shortest of them.
void take_shorter_lower_runs(std::vector<SweepPoint>& points) {
  const std::vector<SweepPoint> generated = points;
  for (SweepPoint& point : points) {
    for (const SweepPoint& lower : generated) {
      const sim::Metrics& a = lower.run.metrics;
      const sim::Metrics& b = point.run.metrics;
      const bool no_longer = a.iteration_time_ns <= b.iteration_time_ns &&
                             a.max_device_span_ns <= b.max_device_span_ns;
      const bool shorter =
          a.iteration_time_ns < b.iteration_time_ns || a.max_device_span_ns < b.max_device_span_ns;
      if (lower.limit_factor < point.limit_factor && no_longer && shorter) {
        const double mem_limit = point.run.params.mem_limit;
        point.run = lower.run;
        point.run.params.mem_limit = mem_limit;
        point.schedule_limit_factor = lower.limit_factor;
      }
    }
  }
}

}  // namespace

std::vector<SweepPoint> memory_sweep(const Scenario& in, const sim::ScheduleGenerator& generator,
                                     const std::vector<double>& factors) {
  if (!generator.takes_mem_limit()) {
    throw SettingError("mem-limit-sweep", "schedule '" + std::string(generator.name()) +
                                              "' does not take a memory limit (zb-auto, zb-v, "
                                              "v-half and v-min do)");
  }
  auto request = [&](std::size_t i) {
    RunRequest r;
    r.generator = &generator;
    r.params = params_for(in, generator, false);
    r.params.mem_limit = factors[i] * in.params.pp * in.device_costs.front().m_b;
    return r;
  };
  std::vector<RunOutcome> outcomes = run_each(in, factors.size(), request);
  std::vector<SweepPoint> points;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].error) std::rethrow_exception(outcomes[i].error);
    points.push_back(SweepPoint{factors[i], std::move(*outcomes[i].summary), factors[i]});
  }
  take_shorter_lower_runs(points);
  return points;
}

TracedRun trace_run(const sim::Schedule& schedule, const Scenario& in, int chunks) {
  const sim::PerDeviceCostModel costs(in.replicated ? in.replica_costs : in.device_costs, chunks);
  sim::Engine engine(schedule, costs);
  if (in.network) engine.set_network(*in.network);
  engine.set_input_rule(in.input_rule);
  engine.set_p2p(in.p2p);
  sim::TransferLog transfers;
  engine.add_observer(transfers);
  TracedRun traced;
  traced.timeline = engine.run();
  traced.transfers = transfers.transfers();
  return traced;
}

sim::Schedule generate_schedule(const sim::ScheduleGenerator& generator,
                                const sim::ScheduleParams& params, const Scenario& in) {
  sim::ScheduleParams with_costs = params;
  const sim::PerDeviceCostModel costs(
      pass_times(in.replicated
                     ? std::vector<sim::DeviceCosts>(in.replica_costs.begin(),
                                                     in.replica_costs.begin() + in.params.pp)
                     : in.device_costs),
      params.chunks);
  with_costs.costs = &costs;
  return generator.generate(with_costs);
}

RunSummary run(const Scenario& scenario, const RunRequest& request, sim::Schedule& schedule) {
  std::string name = request.name.empty() && request.generator != nullptr
                         ? std::string(request.generator->name())
                         : request.name;
  return run_schedule(std::move(name), schedule, request.generator, request.params, scenario,
                      request.exact_time_limit_s, request.keep_record ? &request : nullptr);
}

RunSummary run(const Scenario& scenario, const RunRequest& request) {
  sim::Schedule schedule;
  return run(scenario, request, schedule);
}

std::vector<RunOutcome> run_each(const Scenario& scenario, std::size_t count,
                                 const std::function<RunRequest(std::size_t)>& request, int jobs) {
  std::vector<RunOutcome> outcomes(count);
  tbb::task_arena arena(jobs <= 0 ? tbb::task_arena::automatic : jobs);
  arena.execute([&] {
    // One task per run: runs differ in time by orders of magnitude (a V schedule's search
    // beside 1F1B's), so none waits behind another in a shared chunk.
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, count, 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) {
            try {
              outcomes[i].summary = run(scenario, request(i));
            } catch (...) {
              outcomes[i].error = std::current_exception();
            }
          }
        },
        tbb::simple_partitioner());
  });
  return outcomes;
}

}  // namespace bubblesim::analysis::app
