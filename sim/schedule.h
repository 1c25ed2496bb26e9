// Schedule: what every device runs, in which order, and where every stage lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/error.h"
#include "sim/op.h"

namespace bubblesim::sim {

// An invalid schedule. The subclasses name the problem; what() names the ops involved, and
// ops() lists those of them that the schedule holds (so a file reader can point at them).
class ScheduleError : public Error {
 public:
  explicit ScheduleError(const std::string& what, std::vector<Op> ops = {})
      : Error(what), ops_(std::move(ops)) {}
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
};
// An op the schedule must run (F, and BW or B and W, for every stage and microbatch) is absent.
class MissingOpError : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};
// An op appears twice, or a microbatch runs both BW and B/W on one stage.
class DuplicateOpError : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};
// A device runs an op of a stage placed on another device (a stage on two devices), an op's
// chunk disagrees with the placement, or an op names a stage or microbatch out of range.
class PlacementError : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};

struct Schedule {
  int num_microbatches = 0;
  // Placement: stage_device[s] is the device that holds stage s. Size = number of stages.
  std::vector<int> stage_device;
  // device_ops[d]: the ops device d runs, in order, on its compute stream.
  std::vector<std::vector<Op>> device_ops;

  int num_stages() const { return static_cast<int>(stage_device.size()); }
  int num_devices() const { return static_cast<int>(device_ops.size()); }
  std::size_t num_ops() const;

  // Chunk index of every stage: its rank among the stages of its device, by stage number.
  std::vector<int> stage_chunks() const;

  // Throws PlacementError, DuplicateOpError or MissingOpError (in that order of checking) for
  // the first problem found, naming the op and where it is. Does not look for deadlocks:
  // OpGraph::check_acyclic and the engine do.
  void validate() const;
};

// The three places an op can take per (stage, microbatch): its forward, its backward (B or the
// fused BW: a microbatch runs exactly one of them per stage) and its weight gradient W.
enum class Slot : std::uint8_t { Forward = 0, Backward = 1, Weight = 2 };
inline constexpr int kNumSlots = 3;
constexpr Slot slot_of(OpKind kind) {
  return kind == OpKind::F ? Slot::Forward : kind == OpKind::W ? Slot::Weight : Slot::Backward;
}

// Dense index of (slot, stage, microbatch), used by validation, the engine and the graph for
// flat per-op arrays.
class OpSlots {
 public:
  OpSlots(int num_stages, int num_microbatches)
      : num_microbatches_(static_cast<std::size_t>(num_microbatches)),
        size_(static_cast<std::size_t>(num_stages) * num_microbatches_ * kNumSlots) {}
  std::size_t size() const { return size_; }
  std::size_t operator()(Slot slot, int stage, int microbatch) const {
    return (static_cast<std::size_t>(stage) * num_microbatches_ +
            static_cast<std::size_t>(microbatch)) *
               kNumSlots +
           static_cast<std::size_t>(slot);
  }
  std::size_t operator()(const Op& op) const {
    return (*this)(slot_of(op.kind), op.stage, op.microbatch);
  }

 private:
  std::size_t num_microbatches_;
  std::size_t size_;
};

// Data dependencies (DESIGN.md §3). Every op has at most one data input, on the same
// microbatch: F(s) <- F(s-1); the backward of s (B or BW) <- the backward of s+1, or F(s) on the
// last stage; W(s) <- B(s). `data_outputs` is the same relation seen from the producer.
struct SlotRef {
  Slot slot;
  int stage;
};
// data_input returns false when the op has no data input (F of stage 0).
// data_outputs writes the consumers of an op into out[0..n) and returns n (at most 2).
inline bool data_input(OpKind kind, int stage, int num_stages, SlotRef& input) {
  switch (kind) {
    case OpKind::F:
      if (stage == 0) return false;
      input = {Slot::Forward, stage - 1};
      return true;
    case OpKind::B:
    case OpKind::BW:
      input = stage + 1 < num_stages ? SlotRef{Slot::Backward, stage + 1}
                                     : SlotRef{Slot::Forward, stage};
      return true;
    case OpKind::W:
      input = {Slot::Backward, stage};
      return true;
  }
  return false;
}

inline int data_outputs(OpKind kind, int stage, int num_stages, SlotRef out[2]) {
  switch (kind) {
    case OpKind::F:
      out[0] = stage + 1 < num_stages ? SlotRef{Slot::Forward, stage + 1}
                                      : SlotRef{Slot::Backward, stage};
      return 1;
    case OpKind::B:
      out[0] = {Slot::Weight, stage};
      if (stage == 0) return 1;
      out[1] = {Slot::Backward, stage - 1};
      return 2;
    case OpKind::BW:
      if (stage == 0) return 0;
      out[0] = {Slot::Backward, stage - 1};
      return 1;
    case OpKind::W:
      return 0;
  }
  return 0;
}

}  // namespace bubblesim::sim
