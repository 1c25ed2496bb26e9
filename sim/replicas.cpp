#include "sim/replicas.h"

#include <algorithm>

namespace bubblesim::sim {

Schedule combine_replicas(const std::vector<Schedule>& replicas) {
  BUBBLESIM_CHECK(!replicas.empty(), "no replica to combine");
  const Schedule& first = replicas.front();
  if (replicas.size() == 1) return first;
  const int devices = first.num_devices(), stages = first.num_stages(), m = first.num_microbatches;
  Schedule out;
  out.num_microbatches = m * static_cast<int>(replicas.size());
  const bool pairs = std::any_of(replicas.begin(), replicas.end(),
                                 [](const Schedule& s) { return !s.overlapped_pairs.empty(); });
  for (std::size_t r = 0; r < replicas.size(); ++r) {
    const Schedule& s = replicas[r];
    BUBBLESIM_CHECK(
        s.num_devices() == devices && s.num_stages() == stages && s.num_microbatches == m,
        "replicas of different shapes");
    const int rank = static_cast<int>(r);
    for (const int d : s.stage_device)
      out.stage_device.push_back(d + rank * devices);
    for (const auto& ops : s.device_ops) {
      std::vector<Op> shifted = ops;
      for (Op& op : shifted) {
        op.stage += rank * stages;
        op.microbatch += rank * m;
      }
      out.device_ops.push_back(std::move(shifted));
    }
    for (int mb = 0; mb < m; ++mb) {
      const StageRange route = s.route(mb);
      out.routes.push_back({route.first + rank * stages, route.last + rank * stages});
    }
    if (pairs) {
      for (int d = 0; d < devices; ++d)
        out.overlapped_pairs.push_back(s.pairs_of(d));
    }
  }
  return out;
}

}  // namespace bubblesim::sim
