#include "sim/schedules/dual_pipe.h"

#include <array>
#include <deque>

#include "sim/placement.h"

namespace bubblesim::sim {

namespace {

// One rank's order, built in terms of its two chunks (dual_pipe.h): chunk c is stage stage[c],
// whose microbatches are numbered from first_mb[c].
class RankOrder {
 public:
  RankOrder(int devices, std::array<int, 2> stage, std::array<int, 2> first_mb,
            std::vector<Op>& ops, std::vector<std::size_t>& pairs)
      : devices_(devices), stage_(stage), first_mb_(first_mb), ops_(ops), pairs_(pairs) {}

  void forward(int c) { ops_.push_back(op(OpKind::F, c, f_[c]++)); }
  // A fused backward (BW), or with `split` a B whose W waits in the FIFO for weight().
  void backward(int c, bool split) {
    const int mb = b_[c]++;
    ops_.push_back(op(split ? OpKind::B : OpKind::BW, c, mb));
    if (split) pending_w_.push_back(op(OpKind::W, c, mb));
  }
  void weight() {
    ops_.push_back(pending_w_.front());
    pending_w_.pop_front();
  }
  // The next forward of chunk `cf` overlapped with the next fused backward of chunk `cb`.
  void overlapped(int cf, int cb) {
    pairs_.push_back(ops_.size());
    forward(cf);
    backward(cb, false);
  }

 private:
  Op op(OpKind kind, int c, int n) const {
    const int stage = stage_[static_cast<std::size_t>(c)];
    return Op{kind, stage, stage < devices_ ? 0 : 1, first_mb_[static_cast<std::size_t>(c)] + n};
  }

  int devices_;  // stages below this are chunk 0 of their device (the V placement)
  std::array<int, 2> stage_, first_mb_;
  std::array<int, 2> f_{}, b_{};  // forwards and backwards run so far, per chunk
  std::deque<Op> pending_w_;
  std::vector<Op>& ops_;
  std::vector<std::size_t>& pairs_;
};

// The eight steps of dual_pipe.h for half-rank h of R, with N microbatches per chunk.
void eight_steps(int R, int h, int N, RankOrder& o) {
  for (int i = 0; i < 2 * (R - h - 1); ++i)
    o.forward(0);
  for (int i = 0; i < h + 1; ++i) {
    o.forward(0);
    o.forward(1);
  }
  for (int i = 0; i < R - h - 1; ++i) {
    o.backward(1, true);
    o.weight();
    o.forward(1);
  }
  for (int i = 0; i < N - 2 * R + h + 1; ++i) {
    if (i == 0 && h == R - 1) {
      // DeepSeek runs these two apart on the middle ranks, "to further reduce bubble size".
      o.forward(0);
      o.backward(1, false);
    } else {
      o.overlapped(0, 1);
    }
    o.overlapped(1, 0);
  }
  for (int i = 0; i < R - h - 1; ++i) {
    o.backward(1, false);
    o.overlapped(1, 0);
  }
  bool split = false;
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    o.backward(1, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    o.backward(0, split);
  }
  for (int i = 0; i < R - h - 1; ++i) {
    o.weight();
    o.backward(0, true);
  }
  for (int i = 0; i < h + 1; ++i)
    o.weight();
}

Schedule empty_v_schedule(int p, int m) {
  Schedule s;
  s.num_microbatches = m;
  s.stage_device = v_placement(p);
  s.device_ops.resize(static_cast<std::size_t>(p));
  s.overlapped_pairs.resize(static_cast<std::size_t>(p));
  return s;
}

class DualPipe final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "dualpipe"; }
  std::string_view description() const override {
    return "DeepSeek's DualPipe: microbatches enter from both ends, each device holds one stage "
           "of each direction (2x parameters); F&B pairs overlapped";
  }
  std::string_view parameters() const override { return "p even, m even >= 2p"; }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 1);
    const int p = params.pp, m = params.microbatches;
    if (p % 2 != 0) {
      throw SettingError("pp",
                         "schedule 'dualpipe' needs an even number, got " + std::to_string(p));
    }
    if (m % 2 != 0 || m < 2 * p) {
      throw SettingError("microbatches", "schedule 'dualpipe' needs an even number >= 2p = " +
                                             std::to_string(2 * p) + ", got " + std::to_string(m));
    }
    Schedule s = empty_v_schedule(p, m);
    for (int mb = 0; mb < m; ++mb)
      s.routes.push_back(mb < m / 2 ? StageRange{0, p - 1} : StageRange{p, 2 * p - 1});
    for (int r = 0; r < p; ++r) {
      // Chunk 0 is the direction that enters on the rank's side of the pipeline.
      const bool second_half = r >= p / 2;
      const std::array<int, 2> stage = {r, 2 * p - 1 - r};
      const std::array<int, 2> first_mb = {0, m / 2};
      const auto c0 = static_cast<std::size_t>(second_half), c1 = 1 - c0;
      const auto d = static_cast<std::size_t>(r);
      RankOrder order(p, {stage[c0], stage[c1]}, {first_mb[c0], first_mb[c1]}, s.device_ops[d],
                      s.overlapped_pairs[d]);
      eight_steps(p / 2, std::min(r, p - 1 - r), m / 2, order);
    }
    return s;
  }
};

class DualPipeV final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "dualpipe-v"; }
  std::string_view description() const override {
    return "DeepSeek's DualPipeV: DualPipe cut in half, 2 chunks per device in a V (as zb-v); "
           "F&B pairs overlapped";
  }
  std::string_view parameters() const override { return "p >= 1, m >= 2p, v = 2"; }
  int default_chunks() const override { return 2; }

  Schedule generate(const ScheduleParams& params) const override {
    require_pipeline(params);
    require_chunks(params, name(), 2);
    const int p = params.pp, m = params.microbatches;
    if (m < 2 * p) {
      throw SettingError("microbatches", "schedule 'dualpipe-v' needs at least 2p = " +
                                             std::to_string(2 * p) + ", got " + std::to_string(m));
    }
    Schedule s = empty_v_schedule(p, m);
    for (int r = 0; r < p; ++r) {
      const auto d = static_cast<std::size_t>(r);
      RankOrder order(p, {r, 2 * p - 1 - r}, {0, 0}, s.device_ops[d], s.overlapped_pairs[d]);
      eight_steps(p, r, m, order);
    }
    return s;
  }
};

}  // namespace

void add_dual_pipe_schedules(ScheduleRegistry& registry) {
  registry.add(std::make_unique<DualPipe>());
  registry.add(std::make_unique<DualPipeV>());
}

}  // namespace bubblesim::sim
