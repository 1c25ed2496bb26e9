// A cost model whose op durations vary: each (stage, pass, microbatch) draws its duration from
// the empirical samples of the device that holds the stage (Monte Carlo over a profile,
// `bubblesim simulate --samples N --seed S`). No HDF5 here: the samples are plain vectors.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sim/cost_model.h"
#include "sim/schedule.h"

namespace bubblesim::traces {

// Durations a device's share of the model took for one microbatch, per pass, in ns (as
// DeviceCosts::f_ns etc.: the whole share, split into chunks by the model).
struct DurationSamples {
  std::vector<sim::TimeNs> f_ns, b_ns, w_ns;
};

class SampledCostModel final : public sim::CostModel {
 public:
  // `devices` gives transfers, memory and the F&B overlap efficiency (as PerDeviceCostModel),
  // and the durations until the first draw(); `samples[d]` the durations device d draws from.
  // Sized for `schedule`: its stages, placement and microbatches. Preconditions: one entry of
  // `devices` and `samples` per device of the schedule, no empty or negative sample list,
  // chunks_per_device >= 1.
  SampledCostModel(const sim::Schedule& schedule, std::vector<sim::DeviceCosts> devices,
                   std::vector<DurationSamples> samples, int chunks_per_device = 1);

  // Draws once, uniformly among the samples of the stage's device, the duration of the F, B
  // and W of every (stage, microbatch), in a fixed order: the same generator state gives the
  // same durations. A BW takes the B and W of its (stage, microbatch) added up.
  void draw(std::mt19937_64& rng);

  sim::TimeNs duration_ns(const sim::Op& op, int device) const override;
  sim::TimeNs overlapped_ns(const sim::Op& forward, const sim::Op& backward,
                            int device) const override;
  sim::TimeNs transfer_ns(int src_device, int dst_device) const override {
    return base_.transfer_ns(src_device, dst_device);
  }
  double activation_delta(const sim::Op& op, int device) const override {
    return base_.activation_delta(op, device);
  }

 private:
  std::size_t index(int stage, int pass, int microbatch) const;

  sim::PerDeviceCostModel base_;
  std::vector<DurationSamples> samples_;
  std::vector<int> stage_device_;
  int microbatches_ = 0;
  sim::TimeNs chunks_ = 1;
  std::vector<sim::TimeNs> durations_;  // [(stage * 3 + pass) * microbatches + microbatch]
};

}  // namespace bubblesim::traces
