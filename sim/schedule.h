// Schedule: what every device runs, in which order, where every stage lives, and which stages
// each microbatch runs.
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
// chunk disagrees with the placement, an op names a stage or microbatch out of range or a
// stage outside its microbatch's route, or a route is out of range.
class PlacementError : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};
// An overlapped pair that is not a forward followed by a backward (B or BW) of the same device,
// or pair positions out of order or range.
class OverlapError : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};

// The stages a microbatch runs, `first` to `last` (inclusive): its forward enters at `first`
// and runs up to `last`, its backward runs from `last` back down to `first`.
struct StageRange {
  int first = 0;
  int last = 0;
  int size() const { return last - first + 1; }
  friend bool operator==(const StageRange&, const StageRange&) = default;
};

struct Schedule {
  int num_microbatches = 0;
  // Placement: stage_device[s] is the device that holds stage s. Size = number of stages.
  std::vector<int> stage_device;
  // device_ops[d]: the ops device d runs, in order, on its compute stream.
  std::vector<std::vector<Op>> device_ops;
  // Routes: routes[k] is the range of stages microbatch k runs. Empty (every schedule but the
  // bidirectional ones): every microbatch runs every stage, 0 to num_stages() - 1. Otherwise
  // one entry per microbatch. DualPipe's two directions are two routes over 2p stages: the
  // first half of the microbatches runs stages 0..p-1, the second half the mirrored copy
  // p..2p-1 (sim/schedules/dual_pipe.h).
  std::vector<StageRange> routes;
  // Overlapped pairs: empty, or one list per device. overlapped_pairs[d] holds, in increasing
  // order, the positions i in device_ops[d] where op i (a forward) and op i+1 (a backward, B or
  // BW) run overlapped as ONE compute slot, as DeepSeek's DualPipe does to hide its all-to-all
  // traffic: the slot starts when the device is free and the inputs of both ops have arrived,
  // lasts CostModel::overlapped_ns, and both ops' outputs leave when it ends. Pairs do not
  // share ops (each position is at least 2 past the one before).
  std::vector<std::vector<std::size_t>> overlapped_pairs;

  friend bool operator==(const Schedule&, const Schedule&) = default;

  int num_stages() const { return static_cast<int>(stage_device.size()); }
  int num_devices() const { return static_cast<int>(device_ops.size()); }
  std::size_t num_ops() const;

  // overlapped_pairs[device], or an empty list when the schedule has no pairs.
  const std::vector<std::size_t>& pairs_of(int device) const;
  // The route of microbatch `mb` (0 <= mb < num_microbatches).
  StageRange route(int mb) const {
    return routes.empty() ? StageRange{0, num_stages() - 1} : routes[static_cast<std::size_t>(mb)];
  }
  // Stages one microbatch runs when every route has the same length (always without routes);
  // 0 when routes differ in length. num_stages() / route_stages() is how many copies of the
  // model the schedule holds (2 for DualPipe).
  int route_stages() const;

  // Chunk index of every stage: its rank among the stages of its device, by stage number.
  std::vector<int> stage_chunks() const;

  // Throws PlacementError, DuplicateOpError, MissingOpError or OverlapError (in that order of
  // checking) for the first problem found, naming the op and where it is. Does not look for
  // deadlocks: OpGraph::check_acyclic and the engine do.
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

// Data dependencies (DESIGN.md §3), along the microbatch's route. Every op has at most one
// data input, on the same microbatch: F(s) <- F(s-1); the backward of s (B or BW) <- the
// backward of s+1, or F(s) on the route's last stage; W(s) <- B(s). `data_outputs` is the same
// relation seen from the producer.
struct SlotRef {
  Slot slot;
  int stage;
};
// data_input returns false when the op has no data input (F of the route's first stage).
// data_outputs writes the consumers of an op into out[0..n) and returns n (at most 2).
// Precondition: route.first <= stage <= route.last.
inline bool data_input(OpKind kind, int stage, StageRange route, SlotRef& input) {
  switch (kind) {
    case OpKind::F:
      if (stage == route.first) return false;
      input = {Slot::Forward, stage - 1};
      return true;
    case OpKind::B:
    case OpKind::BW:
      input =
          stage < route.last ? SlotRef{Slot::Backward, stage + 1} : SlotRef{Slot::Forward, stage};
      return true;
    case OpKind::W:
      input = {Slot::Backward, stage};
      return true;
  }
  return false;
}

inline int data_outputs(OpKind kind, int stage, StageRange route, SlotRef out[2]) {
  switch (kind) {
    case OpKind::F:
      out[0] =
          stage < route.last ? SlotRef{Slot::Forward, stage + 1} : SlotRef{Slot::Backward, stage};
      return 1;
    case OpKind::B:
      out[0] = {Slot::Weight, stage};
      if (stage == route.first) return 1;
      out[1] = {Slot::Backward, stage - 1};
      return 2;
    case OpKind::BW:
      if (stage == route.first) return 0;
      out[0] = {Slot::Backward, stage - 1};
      return 1;
    case OpKind::W:
      return 0;
  }
  return 0;
}

}  // namespace bubblesim::sim
