#include "traces/sampled_cost_model.h"

#include <string>

namespace bubblesim::traces {

namespace {

constexpr int kPasses = 3;  // F, B, W: a BW is drawn as its B and W

}  // namespace

SampledCostModel::SampledCostModel(const sim::Schedule& schedule,
                                   std::vector<sim::DeviceCosts> devices,
                                   std::vector<DurationSamples> samples, int chunks_per_device)
    : base_(devices, chunks_per_device),
      samples_(std::move(samples)),
      stage_device_(schedule.stage_device),
      microbatches_(schedule.num_microbatches),
      chunks_(chunks_per_device) {
  BUBBLESIM_CHECK(samples_.size() == devices.size() &&
                      devices.size() == static_cast<std::size_t>(schedule.num_devices()),
                  "one cost entry and one sample list per device");
  for (const DurationSamples& s : samples_) {
    for (const auto* list : {&s.f_ns, &s.b_ns, &s.w_ns}) {
      BUBBLESIM_CHECK(!list->empty(), "a device without duration samples");
      for (const sim::TimeNs ns : *list)
        BUBBLESIM_CHECK(ns >= 0, "negative duration sample");
    }
  }
  durations_.resize(stage_device_.size() * kPasses * static_cast<std::size_t>(microbatches_));
  // Until the first draw, every op takes its device's given duration.
  for (std::size_t stage = 0; stage < stage_device_.size(); ++stage) {
    const sim::DeviceCosts& c = devices[static_cast<std::size_t>(stage_device_[stage])];
    const sim::TimeNs given[kPasses] = {c.f_ns, c.b_ns, c.w_ns};
    for (int pass = 0; pass < kPasses; ++pass) {
      for (int mb = 0; mb < microbatches_; ++mb) {
        durations_[index(static_cast<int>(stage), pass, mb)] =
            (given[pass] + chunks_ / 2) / chunks_;
      }
    }
  }
}

std::size_t SampledCostModel::index(int stage, int pass, int microbatch) const {
  return (static_cast<std::size_t>(stage) * kPasses + static_cast<std::size_t>(pass)) *
             static_cast<std::size_t>(microbatches_) +
         static_cast<std::size_t>(microbatch);
}

void SampledCostModel::draw(std::mt19937_64& rng) {
  for (std::size_t stage = 0; stage < stage_device_.size(); ++stage) {
    const DurationSamples& s = samples_[static_cast<std::size_t>(stage_device_[stage])];
    const std::vector<sim::TimeNs>* lists[kPasses] = {&s.f_ns, &s.b_ns, &s.w_ns};
    for (int pass = 0; pass < kPasses; ++pass) {
      const std::vector<sim::TimeNs>& list = *lists[pass];
      std::uniform_int_distribution<std::size_t> pick(0, list.size() - 1);
      for (int mb = 0; mb < microbatches_; ++mb) {
        durations_[index(static_cast<int>(stage), pass, mb)] =
            (list[pick(rng)] + chunks_ / 2) / chunks_;
      }
    }
  }
}

sim::TimeNs SampledCostModel::duration_ns(const sim::Op& op, int device) const {
  BUBBLESIM_CHECK(op.stage >= 0 && static_cast<std::size_t>(op.stage) < stage_device_.size() &&
                      op.microbatch >= 0 && op.microbatch < microbatches_,
                  "op outside the schedule the sampled cost model was built for");
  BUBBLESIM_CHECK(stage_device_[static_cast<std::size_t>(op.stage)] == device,
                  "op on a device that does not hold its stage");
  const auto at = [&](int pass) {
    return durations_[index(op.stage, pass, op.microbatch)] +
           (pass == 1 || op.kind != sim::OpKind::BW
                ? sim::overhead_ns(base_.devices()[static_cast<std::size_t>(device)].overheads,
                                   op.kind)
                : 0);
  };
  switch (op.kind) {
    case sim::OpKind::F:
      return at(0);
    case sim::OpKind::B:
      return at(1);
    case sim::OpKind::W:
      return at(2);
    case sim::OpKind::BW:
      return at(1) + at(2);
  }
  BUBBLESIM_CHECK(false, "unknown op kind");
  return 0;
}

sim::TimeNs SampledCostModel::overlapped_ns(const sim::Op& forward, const sim::Op& backward,
                                            int device) const {
  return sim::overlapped_pair_ns(
      duration_ns(forward, device), duration_ns(backward, device),
      base_.devices()[static_cast<std::size_t>(device)].overlap_efficiency);
}

}  // namespace bubblesim::traces
