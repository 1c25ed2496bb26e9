// Collective cost models, data parallelism's gradient all-reduce and the optimizer step at the
// end of an iteration.
//
// All-reduce of `bytes` over n devices, with bandwidth bw (bytes/s) and per-step latency a:
//   ring:  2 (n - 1) / n * bytes / bw + 2 (n - 1) a   (reduce-scatter then all-gather, 2(n-1)
//          steps of bytes/n each)
//   tree:  2 ceil(log2 n) a + 2 bytes / bw            (reduce up a binary tree, broadcast down,
//          pipelined in small chunks so the bytes cross each link about twice)
// both 0 for n = 1. Over a network the group's edges decide bw and a: the ring's edges are
// member i -> i+1 (mod n), the tree's i <-> (i-1)/2 (heap order); bw is the slowest route's
// bandwidth over those edges and a the largest route latency. These are closed forms: the
// all-reduces do not share links with the pipeline's transfers or with each other.
#pragma once

#include <vector>

#include "sim/engine.h"
#include "sim/network.h"
#include "sim/schedule.h"

namespace bubblesim::models {

enum class AllReduceAlgorithm { Ring, Tree };
enum class OptimizerSync {
  None,            // no optimizer step is modelled: the iteration is the pipeline (and DP)
  AllReduce,       // all devices synchronise (a small all-reduce) before the step
  PostValidation,  // each device steps once its own gradients are in; validated afterwards
};

sim::TimeNs ring_allreduce_ns(int n, double bytes, double bandwidth_bytes_per_s,
                              sim::TimeNs latency_ns);
sim::TimeNs tree_allreduce_ns(int n, double bytes, double bandwidth_bytes_per_s,
                              sim::TimeNs latency_ns);
// The all-reduce among `group` (logical devices of `network`), by the edges described above.
sim::TimeNs allreduce_ns(const sim::Network& network, const std::vector<int>& group, double bytes,
                         AllReduceAlgorithm algorithm);

// Bytes an optimizer step of mixed-precision Adam moves per parameter: it reads the fp16
// gradient (2), the fp32 master weight and both moments (12), and writes those three (12) and
// the fp16 weight (2). The step is memory-bound: parameters * 28 / memory bandwidth.
inline constexpr double kAdamStepBytesPerParameter = 28;

struct IterationInputs {
  int pp = 1;  // pipeline devices per replica; logical device r*pp + d is replica r's device d
  int dp = 1;  // replicas
  // Gradient bytes of each pipeline device's whole share of the model (size pp); a device with
  // v stages all-reduces 1/v of it per stage.
  std::vector<double> grad_bytes;
  std::vector<sim::TimeNs> optimizer_ns;  // the step's time on each logical device (pp*dp)
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  OptimizerSync sync = OptimizerSync::None;
  sim::TimeNs sync_ns = 0;  // the synchronising all-reduce of OptimizerSync::AllReduce
  const sim::Network* network = nullptr;  // required when dp > 1
};

struct IterationTime {
  sim::TimeNs pipeline_ns = 0;      // first op start to last op end (Metrics::iteration_time_ns)
  sim::TimeNs dp_allreduce_ns = 0;  // the longest stage's gradient all-reduce (0 for dp = 1)
  sim::TimeNs optimizer_ns = 0;     // the longest optimizer step (0 with OptimizerSync::None)
  sim::TimeNs sync_ns = 0;          // OptimizerSync::AllReduce's synchronisation, else 0
  // None: first op start to the last end of an op or gradient all-reduce. AllReduce: that, plus
  // the synchronisation and the longest step. PostValidation: iterations run back to back on
  // each device, so the longest device's own first op to its last op or all-reduce, plus its
  // step.
  sim::TimeNs iteration_ns = 0;
};

// Precondition: `schedule` is the replicas combined (sim/replicas.h) and `timeline` its run.
// The gradients of stage s of all replicas are all-reduced once the last of them has its
// last W (or BW) done, while the other stages go on.
IterationTime finish_iteration(const sim::Schedule& schedule, const sim::Timeline& timeline,
                               const IterationInputs& in);

}  // namespace bubblesim::models
