#include "sim/schedules/handcrafted.h"

#include <algorithm>

namespace bubblesim::sim {

namespace {

// Appends one stage's ops to a device's order, each pass taking that stage's next microbatch.
class StageOrder {
 public:
  StageOrder(std::vector<Op>& out, int stage) : out_(out), stage_(stage) {}
  void next(OpKind kind) {
    int& mb = next_mb_[static_cast<int>(kind)];
    out_.push_back(Op{kind, stage_, 0, mb++});
  }
  int done(OpKind kind) const { return next_mb_[static_cast<int>(kind)]; }

 private:
  std::vector<Op>& out_;
  int stage_;
  int next_mb_[kNumOpKinds] = {};
};

// p stages on p devices, device r's order filled by `order(out, r)`.
template <typename Order>
Schedule one_stage_per_device(const ScheduleParams& params, Order order) {
  Schedule s;
  s.num_microbatches = params.microbatches;
  const auto p = static_cast<std::size_t>(params.pp);
  s.stage_device.resize(p);
  s.device_ops.resize(p);
  for (int r = 0; r < params.pp; ++r) {
    s.stage_device[static_cast<std::size_t>(r)] = r;
    auto& ops = s.device_ops[static_cast<std::size_t>(r)];
    ops.reserve(static_cast<std::size_t>(params.microbatches) * 3);
    StageOrder stage(ops, r);
    order(stage, r);
  }
  return s;
}

// Warm-up forwards, then one F (while any is left) and one backward per microbatch; with a
// split backward, W follows B once `w_lag` microbatches have passed, the rest close the order.
Schedule warmup_then_alternate(const ScheduleParams& params, int (*warmup)(int p, int r),
                               bool split, int (*w_lag)(int r)) {
  const int m = params.microbatches;
  return one_stage_per_device(params, [&](StageOrder& stage, int r) {
    const int w = std::min(warmup(params.pp, r), m);
    for (int i = 0; i < w; ++i)
      stage.next(OpKind::F);
    for (int i = 0; i < m; ++i) {
      if (w + i < m) stage.next(OpKind::F);
      if (!split) {
        stage.next(OpKind::BW);
        continue;
      }
      stage.next(OpKind::B);
      if (i >= w_lag(r)) stage.next(OpKind::W);
    }
    while (split && stage.done(OpKind::W) < m)
      stage.next(OpKind::W);
  });
}

int one_f_one_b_warmup(int p, int r) {
  return p - 1 - r;
}
int zb_h2_warmup(int p, int r) {
  return 2 * (p - 1 - r);
}
int zb_h1_lag(int r) {
  return r;
}
int zb_h2_lag(int r) {
  return 2 * r;
}

class GPipe final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "gpipe"; }
  std::string_view description() const override {
    return "all forwards, then all fused backwards (GPipe); peak m*M_B";
  }
  std::string_view parameters() const override { return "p >= 1, m >= 1"; }
  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    return one_stage_per_device(params, [&](StageOrder& stage, int) {
      for (int i = 0; i < params.microbatches; ++i)
        stage.next(OpKind::F);
      for (int i = 0; i < params.microbatches; ++i)
        stage.next(OpKind::BW);
    });
  }
};

class OneFOneB final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "1f1b"; }
  std::string_view description() const override {
    return "one forward, one fused backward (PipeDream-Flush / Megatron 1F1B); peak p*M_B";
  }
  std::string_view parameters() const override { return "p >= 1, m >= 1"; }
  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    return warmup_then_alternate(params, one_f_one_b_warmup, false, nullptr);
  }
};

class ZbH1 final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "zb-h1"; }
  std::string_view description() const override {
    return "zero-bubble H1: 1F1B with B/W split, W fills the tail; peak p*M_B";
  }
  std::string_view parameters() const override { return "p >= 1, m >= 1"; }
  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    return warmup_then_alternate(params, one_f_one_b_warmup, true, zb_h1_lag);
  }
};

class ZbH2 final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "zb-h2"; }
  std::string_view description() const override {
    return "zero-bubble H2: more warm-up forwards, W in the bubbles; peak (2p-1)*M_B "
           "(warm-up capped at m when m < 2p-1)";
  }
  std::string_view parameters() const override { return "p >= 1, m >= 1"; }
  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    return warmup_then_alternate(params, zb_h2_warmup, true, zb_h2_lag);
  }
};

}  // namespace

void add_handcrafted_schedules(ScheduleRegistry& registry) {
  registry.add(std::make_unique<GPipe>());
  registry.add(std::make_unique<OneFOneB>());
  registry.add(std::make_unique<ZbH1>());
  registry.add(std::make_unique<ZbH2>());
}

}  // namespace bubblesim::sim
