#include "analysis/app/advise.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <tuple>

#include "analysis/app/run.h"
#include "analysis/throughput.h"
#include "models/collectives.h"

namespace bubblesim::analysis::app {

namespace {

// Bytes of an fp16 gradient element, what the data-parallel all-reduce sends.
constexpr double kGradientBytes = 2;

std::vector<int> divisors(int n) {
  std::vector<int> values;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) values.push_back(d);
  }
  return values;
}

}  // namespace

namespace {

// The scenario of candidate `c`: the model at the candidate's microbatch size timed on the
// hardware's GPU, one hop the link's latency plus an activation over its bandwidth, and, for
// schedules built under a memory limit, what the budget leaves after the static memory.
ScenarioSettings candidate_settings(const AdviseCandidate& c, const AdviseSearch& search,
                                    const sim::ScheduleGenerator& generator) {
  const AdviseHardware& hw = search.hardware;
  ScenarioSettings s;
  s.transformer = search.model;
  s.transformer->microbatch_size = c.microbatch_size;
  s.gpu_spec = hw.gpu;
  s.efficiency = hw.efficiency;
  s.pp = c.pp;
  s.microbatches = c.microbatches;
  s.chunks = c.chunks;
  s.op_overhead = hw.overheads;
  s.no_improve = !search.improve;
  s.p2p = hw.p2p;
  const std::vector<models::StageEstimate> stages = models::estimate_stages(*s.transformer, c.pp);
  std::vector<double> comm_ms;
  double most_static = 0;
  for (const models::StageEstimate& stage : stages) {
    comm_ms.push_back(hw.link_latency_ms +
                      stage.transfer_bytes / (hw.link_bandwidth_gbps * 1e9) * 1e3);
    most_static = std::max(most_static, stage.static_bytes);
  }
  s.comm_ms = comm_ms;
  // With no room left at all, the schedule's own default (it is out of memory anyway, and the
  // report says by how much).
  if (generator.takes_mem_limit() && hw.memory_budget_bytes > most_static) {
    s.mem_limit = hw.memory_budget_bytes - most_static;
  }
  return s;
}

}  // namespace

void evaluate_candidate(AdviseCandidate& c, const AdviseSearch& search,
                        const sim::ScheduleGenerator& generator) {
  try {
    const AdviseHardware& hw = search.hardware;
    const Scenario scenario = make_scenario(candidate_settings(c, search, generator));
    RunRequest request;
    request.generator = &generator;
    request.params = params_for(scenario, generator, true);
    const RunSummary run = app::run(scenario, request);
    // Schedules that keep two copies of the model (dualpipe) hold twice the parameters.
    const double copies = run.model_copies;
    c.iteration_time_ms = sim::ns_to_ms(run.metrics.iteration_time_ns);
    c.bubble_rate = run.metrics.bubble_rate;
    for (const sim::DeviceMetrics& d : run.metrics.devices) {
      const double static_bytes =
          copies * scenario.static_memory_bytes[static_cast<std::size_t>(d.device)];
      const double peak = static_bytes + d.peak_activation_memory;
      if (peak > c.peak_memory_bytes) {
        c.peak_memory_bytes = peak;
        c.static_memory_bytes = static_bytes;
      }
    }
    const double largest_parameters =
        *std::max_element(scenario.parameters.begin(), scenario.parameters.end());
    // The data-parallel gradient all-reduce of the largest stage, the ring of
    // models/collectives.h over the link between replicas (bandwidth and latency).
    c.allreduce_ms = sim::ns_to_ms(
        models::ring_allreduce_ns(c.dp, kGradientBytes * copies * largest_parameters,
                                  hw.link_bandwidth_gbps * 1e9, sim::ms_to_ns(hw.link_latency_ms)));
    c.samples_per_gpu_per_s = per_gpu_per_s(static_cast<double>(search.global_batch), hw.gpus,
                                            c.iteration_time_ms + c.allreduce_ms);
    c.outcome = c.peak_memory_bytes <= hw.memory_budget_bytes ? AdviseOutcome::kFits
                                                              : AdviseOutcome::kOutOfMemory;
  } catch (const InvalidArgument& e) {
    c.outcome = AdviseOutcome::kNotApplicable;
    c.reason = e.what();
  }
}

std::string AdviseCandidate::label() const {
  return fmt::format("{} p={} dp={} m={} v={} b={}", schedule, pp, dp, microbatches, chunks,
                     microbatch_size);
}

std::vector<AdviseCandidate> advise_candidates(const AdviseSearch& search,
                                               const sim::ScheduleRegistry& registry) {
  const AdviseHardware& hw = search.hardware;
  if (hw.gpus < 1) throw SettingError("gpus", "expected at least 1 GPU");
  if (!(hw.memory_budget_bytes > 0)) {
    throw SettingError("mem-budget-gb", "expected a positive budget");
  }
  if (!(hw.link_bandwidth_gbps > 0)) throw SettingError("link-gbps", "expected a bandwidth > 0");
  if (!(hw.link_latency_ms >= 0)) throw SettingError("link-latency-ms", "expected a latency >= 0");
  if (search.global_batch < 1) throw SettingError("global-batch", "expected >= 1");
  if (search.microbatch_sizes.empty()) {
    throw SettingError("microbatch-sizes", "expected at least one value");
  }
  if (search.chunks.empty()) throw SettingError("chunks", "expected at least one value");
  for (const int b : search.microbatch_sizes) {
    if (b < 1) throw SettingError("microbatch-sizes", "expected sizes >= 1");
  }
  for (const int v : search.chunks) {
    if (v < 1 || v > 1024) throw SettingError("chunks", "expected 1 to 1024");
  }
  std::vector<const sim::ScheduleGenerator*> generators;
  if (search.schedules.empty()) {
    generators = registry.all();
  } else {
    for (const std::string& name : search.schedules)
      generators.push_back(&registry.get(name));
  }
  std::vector<AdviseCandidate> candidates;
  for (const int p : divisors(hw.gpus)) {
    const int dp = hw.gpus / p;
    for (const int b : search.microbatch_sizes) {
      if (search.global_batch % (dp * b) != 0) continue;
      const int m = search.global_batch / (dp * b);
      for (const sim::ScheduleGenerator* g : generators) {
        std::vector<int> vs =
            g->takes_chunks_option() ? search.chunks : std::vector<int>{g->default_chunks()};
        for (const int v : vs) {
          AdviseCandidate c;
          c.schedule = std::string(g->name());
          c.pp = p;
          c.dp = dp;
          c.microbatches = m;
          c.chunks = v;
          c.microbatch_size = b;
          candidates.push_back(std::move(c));
        }
      }
    }
  }
  return candidates;
}

void rank_candidates(std::vector<AdviseCandidate>& candidates) {
  const auto rank = [](const AdviseCandidate& c) {
    // Fits by throughput, then memory; out of memory by memory; inapplicable last.
    const double first = c.outcome == AdviseOutcome::kFits          ? -c.samples_per_gpu_per_s
                         : c.outcome == AdviseOutcome::kOutOfMemory ? c.peak_memory_bytes
                                                                    : 0;
    const double second = c.outcome == AdviseOutcome::kFits ? c.peak_memory_bytes : 0;
    return std::make_tuple(static_cast<int>(c.outcome), first, second);
  };
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [&](const AdviseCandidate& a, const AdviseCandidate& b) { return rank(a) < rank(b); });
}

std::vector<AdviseCandidate> advise(const AdviseSearch& search,
                                    const sim::ScheduleRegistry& registry, int jobs,
                                    const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<AdviseCandidate> candidates = advise_candidates(search, registry);
  tbb::task_arena arena(jobs <= 0 ? tbb::task_arena::automatic : jobs);
  const std::size_t batch = std::max<std::size_t>(8, 2 * arena.max_concurrency());
  for (std::size_t from = 0; from < candidates.size(); from += batch) {
    const std::size_t to = std::min(candidates.size(), from + batch);
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(from, to),
                        [&](const tbb::blocked_range<std::size_t>& range) {
                          for (std::size_t i = range.begin(); i != range.end(); ++i) {
                            evaluate_candidate(candidates[i], search,
                                               registry.get(candidates[i].schedule));
                          }
                        });
    });
    if (progress) progress(to, candidates.size());
  }
  rank_candidates(candidates);
  return candidates;
}

}  // namespace bubblesim::analysis::app
