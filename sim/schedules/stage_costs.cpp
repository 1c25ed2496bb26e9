#include "sim/schedules/stage_costs.h"

namespace bubblesim::sim {

std::vector<StageCosts> stage_costs(const std::vector<int>& stage_device, const CostModel& costs) {
  const int stages = static_cast<int>(stage_device.size());
  const auto device = [&](int s) { return stage_device[static_cast<std::size_t>(s)]; };
  const auto hop = [&](int from, int to) {
    return device(from) == device(to) ? TimeNs{0} : costs.transfer_ns(device(from), device(to));
  };
  std::vector<StageCosts> out(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const int d = device(s);
    int chunk = 0;
    for (int e = 0; e < s; ++e)
      chunk += device(e) == d;
    const auto of = [&](OpKind kind) { return Op{kind, s, chunk, 0}; };
    StageCosts& c = out[static_cast<std::size_t>(s)];
    c.f_ns = costs.duration_ns(of(OpKind::F), d);
    c.b_ns = costs.duration_ns(of(OpKind::B), d);
    c.w_ns = costs.duration_ns(of(OpKind::W), d);
    c.f_out_ns = s + 1 < stages ? hop(s, s + 1) : 0;
    c.b_out_ns = s > 0 ? hop(s, s - 1) : 0;
    c.f_delta = costs.activation_delta(of(OpKind::F), d);
    c.b_delta = costs.activation_delta(of(OpKind::B), d);
    c.w_delta = costs.activation_delta(of(OpKind::W), d);
  }
  return out;
}

}  // namespace bubblesim::sim
