// `bubblesim advise` (docs/advise.md): for a transformer on N GPUs under a memory budget per
// GPU, simulate every schedule with every pipeline size p (a divisor of N; the other N / p
// ways are data parallel), microbatch size b and chunk count v, predict throughput and peak
// memory, and rank what fits.
//
// A configuration: p pipeline stages, dp = N / p pipelines, each iteration a global batch of
// G samples, so every pipeline runs m = G / (dp b) microbatches of b samples (b is skipped
// unless dp b divides G). Each device's F, B, W times and M_B, M_W come from the model's FLOPs
// and activation model (models/transformer.h) at microbatch size b; one hop between stages
// takes latency + 2sbh bytes / link bandwidth. After the pipeline, the data-parallel gradient
// all-reduce (ring) takes 2 (dp - 1) / dp x 2 bytes x the largest stage's parameters / link
// bandwidth, not overlapped. Throughput = G / (N x (iteration + all-reduce)) samples per GPU per
// second. Peak memory = max over devices of static (16 bytes per parameter, twice for schedules
// that keep two copies of the model, like dualpipe) + peak activations.
// Schedules that build under a memory limit (zb-auto, zb-v, ...) get budget - static as theirs.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "models/gpu_catalogue.h"
#include "models/transformer.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule_registry.h"

namespace bubblesim::analysis::app {

// What a configuration runs on: every GPU alike, linked by one bandwidth and latency. This is
// the one place that describes the hardware, so that a cluster description can fill it later.
struct AdviseHardware {
  models::GpuSpec gpu;
  int gpus = 0;                                    // N
  double memory_budget_bytes = 0;                  // per GPU
  double efficiency = models::kDefaultEfficiency;  // of the GPU's dense BF16 peak
  double link_bandwidth_gbps = 50;  // GB/s between consecutive stages and for the all-reduce
  double link_latency_ms = 0.01;    // per hop
  // A calibration's (analysis/calibration.h): paid before every pass, and how transfers use
  // the compute streams. The schedules are built from the pass times without them.
  sim::OpOverheads overheads;
  sim::P2pMode p2p = sim::P2pMode::Async;
};

struct AdviseSearch {
  models::TransformerConfig model;  // its microbatch_size is replaced by each candidate's b
  AdviseHardware hardware;
  int global_batch = 0;                // G, samples per iteration
  std::vector<int> microbatch_sizes;   // b candidates
  std::vector<int> chunks;             // v candidates, for schedules that take -v
  std::vector<std::string> schedules;  // names; empty for every registered schedule
  // false: the generators' schedules without the schedule improver (sim/schedules/improve.h),
  // about twice as fast a search; a candidate's largest device span can only be longer (the
  // improver never lengthens it).
  bool improve = true;
};

enum class AdviseOutcome { kFits, kOutOfMemory, kNotApplicable };

struct AdviseCandidate {
  std::string schedule;
  int pp = 0, dp = 0, microbatches = 0, chunks = 0, microbatch_size = 0;
  AdviseOutcome outcome = AdviseOutcome::kNotApplicable;
  std::string reason;            // why kNotApplicable
  double iteration_time_ms = 0;  // the pipeline's, without the all-reduce
  double allreduce_ms = 0;
  double bubble_rate = 0;
  double peak_memory_bytes = 0;    // on the fullest device: static + activations
  double static_memory_bytes = 0;  // of that device
  double samples_per_gpu_per_s = 0;

  // "zb-h1 p=8 dp=1 m=24 v=1 b=6"
  std::string label() const;
};

// Every candidate of the search, in a fixed order (p, b, schedule as registered, v), before
// simulation. Throws InvalidArgument for an empty or invalid search (no GPUs, a schedule the
// registry lacks, b or v < 1, G < 1).
std::vector<AdviseCandidate> advise_candidates(const AdviseSearch& search,
                                               const sim::ScheduleRegistry& registry);

// Simulates candidate `c` of `search` with `generator` (its schedule's) and fills its metrics
// and outcome; an InvalidArgument from the model or the schedule (parameters it does not take)
// makes it inapplicable. What advise does for each candidate, for callers that spread the
// candidates over processes themselves (`mpirun ... bubblesim advise`).
void evaluate_candidate(AdviseCandidate& c, const AdviseSearch& search,
                        const sim::ScheduleGenerator& generator);

// Orders evaluated candidates (in advise_candidates' order) as advise returns them.
void rank_candidates(std::vector<AdviseCandidate>& candidates);

// Simulates every candidate (in parallel with oneTBB on `jobs` threads, 0 for all cores) and
// returns them ranked: those that fit by throughput (highest first), then peak memory, then
// the order of advise_candidates; then those out of memory by peak memory (smallest first); then
// the inapplicable. `progress(done, total)` is called from the calling thread between batches. The
// result does not depend on `jobs`.
std::vector<AdviseCandidate> advise(
    const AdviseSearch& search, const sim::ScheduleRegistry& registry, int jobs = 0,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace bubblesim::analysis::app
