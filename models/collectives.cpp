#include "models/collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/error.h"

namespace bubblesim::models {

namespace {

sim::TimeNs data_ns(double bytes, double bandwidth_bytes_per_s) {
  return sim::data_time_ns(bytes, bandwidth_bytes_per_s / 1e9);
}

}  // namespace

sim::TimeNs ring_allreduce_ns(int n, double bytes, double bandwidth_bytes_per_s,
                              sim::TimeNs latency_ns) {
  if (n <= 1) return 0;
  return data_ns(2.0 * (n - 1) / n * bytes, bandwidth_bytes_per_s) + 2 * (n - 1) * latency_ns;
}

sim::TimeNs tree_allreduce_ns(int n, double bytes, double bandwidth_bytes_per_s,
                              sim::TimeNs latency_ns) {
  if (n <= 1) return 0;
  const auto depth = static_cast<sim::TimeNs>(std::ceil(std::log2(static_cast<double>(n)) - 1e-12));
  return data_ns(2.0 * bytes, bandwidth_bytes_per_s) + 2 * depth * latency_ns;
}

sim::TimeNs allreduce_ns(const sim::Network& network, const std::vector<int>& group, double bytes,
                         AllReduceAlgorithm algorithm) {
  const int n = static_cast<int>(group.size());
  if (n <= 1) return 0;
  double bw = std::numeric_limits<double>::infinity();
  sim::TimeNs latency = 0;
  const auto edge = [&](int a, int b) {
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      bw = std::min(bw, network.route_bandwidth_bytes_per_s(x, y));
      latency = std::max(latency, network.route_latency_ns(x, y));
    }
  };
  for (int i = 0; i < n; ++i) {
    const auto member = [&](int k) { return group[static_cast<std::size_t>(k)]; };
    if (algorithm == AllReduceAlgorithm::Ring) {
      if (n == 2 && i == 1) break;
      edge(member(i), member((i + 1) % n));
    } else if (i > 0) {
      edge(member(i), member((i - 1) / 2));
    }
  }
  return algorithm == AllReduceAlgorithm::Ring ? ring_allreduce_ns(n, bytes, bw, latency)
                                               : tree_allreduce_ns(n, bytes, bw, latency);
}

IterationTime finish_iteration(const sim::Schedule& schedule, const sim::Timeline& timeline,
                               const IterationInputs& in) {
  const int devices = schedule.num_devices();
  BUBBLESIM_CHECK(devices == in.pp * in.dp && schedule.num_stages() % in.dp == 0,
                  "the schedule is not dp replicas of pp devices");
  BUBBLESIM_CHECK(in.dp == 1 || in.network != nullptr, "data parallelism needs a network");
  const int stages = schedule.num_stages() / in.dp;  // per replica
  std::vector<sim::TimeNs> start(static_cast<std::size_t>(devices),
                                 std::numeric_limits<sim::TimeNs>::max());
  std::vector<sim::TimeNs> end(static_cast<std::size_t>(devices), 0);
  // When each (combined) stage's gradients are complete: the end of its last W or BW.
  std::vector<sim::TimeNs> grads_done(static_cast<std::size_t>(schedule.num_stages()), 0);
  for (int d = 0; d < devices; ++d) {
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
    const auto& times = timeline.device_ops[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      start[static_cast<std::size_t>(d)] =
          std::min(start[static_cast<std::size_t>(d)], times[i].start_ns);
      end[static_cast<std::size_t>(d)] =
          std::max(end[static_cast<std::size_t>(d)], times[i].end_ns);
      if (ops[i].kind == sim::OpKind::W || ops[i].kind == sim::OpKind::BW) {
        auto& g = grads_done[static_cast<std::size_t>(ops[i].stage)];
        g = std::max(g, times[i].end_ns);
      }
    }
  }
  IterationTime out;
  const sim::TimeNs first = *std::min_element(start.begin(), start.end());
  out.pipeline_ns = *std::max_element(end.begin(), end.end()) - first;
  if (in.dp > 1) {
    std::vector<int> stages_on(static_cast<std::size_t>(in.pp), 0);
    for (int s = 0; s < stages; ++s)
      ++stages_on[static_cast<std::size_t>(schedule.stage_device[static_cast<std::size_t>(s)])];
    for (int s = 0; s < stages; ++s) {
      const int device = schedule.stage_device[static_cast<std::size_t>(s)];
      std::vector<int> group;
      sim::TimeNs ready = 0;
      for (int r = 0; r < in.dp; ++r) {
        group.push_back(r * in.pp + device);
        ready = std::max(ready, grads_done[static_cast<std::size_t>(r * stages + s)]);
      }
      const double bytes = in.grad_bytes[static_cast<std::size_t>(device)] /
                           stages_on[static_cast<std::size_t>(device)];
      const sim::TimeNs t = allreduce_ns(*in.network, group, bytes, in.algorithm);
      out.dp_allreduce_ns = std::max(out.dp_allreduce_ns, t);
      for (const int member : group)
        end[static_cast<std::size_t>(member)] =
            std::max(end[static_cast<std::size_t>(member)], ready + t);
    }
  }
  const sim::TimeNs last = *std::max_element(end.begin(), end.end());
  switch (in.sync) {
    case OptimizerSync::None:
      out.iteration_ns = last - first;
      break;
    case OptimizerSync::AllReduce:
      out.optimizer_ns = *std::max_element(in.optimizer_ns.begin(), in.optimizer_ns.end());
      out.sync_ns = in.sync_ns;
      out.iteration_ns = last - first + in.sync_ns + out.optimizer_ns;
      break;
    case OptimizerSync::PostValidation:
      out.optimizer_ns = *std::max_element(in.optimizer_ns.begin(), in.optimizer_ns.end());
      for (int d = 0; d < devices; ++d) {
        const auto i = static_cast<std::size_t>(d);
        if (schedule.device_ops[i].empty()) continue;
        out.iteration_ns = std::max(out.iteration_ns, end[i] + in.optimizer_ns[i] - start[i]);
      }
      break;
  }
  return out;
}

}  // namespace bubblesim::models
