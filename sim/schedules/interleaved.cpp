#include "sim/schedules/interleaved.h"

#include <algorithm>

#include "sim/placement.h"

namespace bubblesim::sim {

namespace {

class InterleavedOneFOneB final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "1f1b-i"; }
  std::string_view description() const override {
    return "interleaved 1F1B (Megatron virtual pipeline): v chunks per device, looped";
  }
  std::string_view parameters() const override { return "p >= 1, v >= 2, m a multiple of p"; }
  int default_chunks() const override { return 3; }
  bool takes_chunks_option() const override { return true; }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    const int p = params.pp, v = params.chunks, m = params.microbatches;
    if (v < 2) {
      throw SettingError("chunks", "schedule '1f1b-i' needs at least 2, got " + std::to_string(v));
    }
    if (m % p != 0) {
      throw SettingError("microbatches",
                         "schedule '1f1b-i' needs a multiple of the pipeline "
                         "devices (" +
                             std::to_string(p) + "), got " + std::to_string(m));
    }
    Schedule s;
    s.num_microbatches = m;
    s.stage_device = looped_placement(p, v);
    s.device_ops.resize(static_cast<std::size_t>(p));
    const int total = m * v;
    for (int r = 0; r < p; ++r) {
      auto& ops = s.device_ops[static_cast<std::size_t>(r)];
      ops.reserve(static_cast<std::size_t>(2 * total));
      auto pass = [&](int k, bool forward) {
        const int round = k % (p * v) / p;
        const int chunk = forward ? round : v - 1 - round;
        const int mb = k / (p * v) * p + k % p;
        ops.push_back(Op{forward ? OpKind::F : OpKind::BW, chunk * p + r, chunk, mb});
      };
      const int warmup = std::min((v - 1) * p + 2 * (p - 1 - r), total);
      for (int k = 0; k < warmup; ++k)
        pass(k, true);
      for (int i = 0; i < total - warmup; ++i) {
        pass(warmup + i, true);
        pass(i, false);
      }
      for (int i = std::max(total - warmup, 0); i < total; ++i)
        pass(i, false);
    }
    return s;
  }
};

}  // namespace

void add_interleaved_schedules(ScheduleRegistry& registry) {
  registry.add(std::make_unique<InterleavedOneFOneB>());
}

}  // namespace bubblesim::sim
