#include "sim/schedule.h"

#include <string>

namespace bubblesim::sim {

namespace {

struct Position {
  int device = -1;
  std::size_t index = 0;
};

std::string where(const Position& pos) {
  return "device " + std::to_string(pos.device) + " position " + std::to_string(pos.index);
}

void check_placement(const Schedule& s) {
  if (s.num_microbatches < 1) throw PlacementError("schedule has no microbatches");
  if (s.num_stages() < 1) throw PlacementError("schedule has no stages");
  for (int stage = 0; stage < s.num_stages(); ++stage) {
    const int d = s.stage_device[static_cast<std::size_t>(stage)];
    if (d < 0 || d >= s.num_devices()) {
      throw PlacementError("stage " + std::to_string(stage) + " is placed on device " +
                           std::to_string(d) + ", but the schedule has " +
                           std::to_string(s.num_devices()) + " devices");
    }
  }
}

}  // namespace

std::size_t Schedule::num_ops() const {
  std::size_t n = 0;
  for (const auto& ops : device_ops)
    n += ops.size();
  return n;
}

std::vector<int> Schedule::stage_chunks() const {
  std::vector<int> next_chunk(device_ops.size(), 0);
  std::vector<int> chunks(stage_device.size(), 0);
  for (std::size_t s = 0; s < stage_device.size(); ++s) {
    const int d = stage_device[s];
    if (d >= 0 && d < num_devices()) chunks[s] = next_chunk[static_cast<std::size_t>(d)]++;
  }
  return chunks;
}

void Schedule::validate() const {
  check_placement(*this);
  const std::vector<int> chunks = stage_chunks();
  const OpSlots slots(num_stages(), num_microbatches);
  std::vector<Position> seen(slots.size());
  std::vector<OpKind> seen_kind(slots.size(), OpKind::F);

  for (int d = 0; d < num_devices(); ++d) {
    const auto& ops = device_ops[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const Position here{d, i};
      if (op.stage < 0 || op.stage >= num_stages() || op.microbatch < 0 ||
          op.microbatch >= num_microbatches || static_cast<int>(op.kind) >= kNumOpKinds) {
        throw PlacementError(to_string(op) + " at " + where(here) +
                             " is out of range: " + std::to_string(num_stages()) + " stages, " +
                             std::to_string(num_microbatches) + " microbatches");
      }
      const auto stage = static_cast<std::size_t>(op.stage);
      if (stage_device[stage] != d) {
        throw PlacementError("stage " + std::to_string(op.stage) +
                             " is on two devices: placed on device " +
                             std::to_string(stage_device[stage]) + ", but " + where(here) +
                             " runs " + to_string(op));
      }
      if (op.chunk != chunks[stage]) {
        throw PlacementError(to_string(op) + " at " + where(here) + " says chunk " +
                             std::to_string(op.chunk) + ", but stage " + std::to_string(op.stage) +
                             " is chunk " + std::to_string(chunks[stage]) + " of device " +
                             std::to_string(d));
      }
      const std::size_t slot = slots(op);
      if (seen[slot].device >= 0) {
        Op other = op;
        other.kind = seen_kind[slot];
        throw DuplicateOpError(
            other.kind == op.kind
                ? to_string(op) + " appears twice: at " + where(seen[slot]) + " and " + where(here)
                : "backward runs twice: " + to_string(other) + " at " + where(seen[slot]) +
                      " and " + to_string(op) + " at " + where(here));
      }
      seen[slot] = here;
      seen_kind[slot] = op.kind;
    }
  }

  for (int stage = 0; stage < num_stages(); ++stage) {
    for (int mb = 0; mb < num_microbatches; ++mb) {
      auto named = [&](OpKind kind) {
        return to_string(Op{kind, stage, chunks[static_cast<std::size_t>(stage)], mb});
      };
      const std::size_t back = slots(Slot::Backward, stage, mb);
      const bool has_f = seen[slots(Slot::Forward, stage, mb)].device >= 0;
      const bool has_back = seen[back].device >= 0;
      const bool has_w = seen[slots(Slot::Weight, stage, mb)].device >= 0;
      const bool split = has_back && seen_kind[back] == OpKind::B;
      if (!has_f) throw MissingOpError("missing op " + named(OpKind::F));
      if (!has_back && has_w) {
        throw MissingOpError("missing op " + named(OpKind::B) + " before " + named(OpKind::W));
      }
      if (!has_back) {
        throw MissingOpError("missing op " + named(OpKind::BW) + " (or " + named(OpKind::B) +
                             " and " + named(OpKind::W) + ")");
      }
      if (split && !has_w) {
        throw MissingOpError("missing op " + named(OpKind::W) + " after " + named(OpKind::B));
      }
      if (!split && has_w) {
        throw DuplicateOpError("backward runs twice: " + named(OpKind::BW) + " and " +
                               named(OpKind::W) + " are both scheduled");
      }
    }
  }
}

bool data_input(OpKind kind, int stage, int num_stages, SlotRef& input) {
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

int data_outputs(OpKind kind, int stage, int num_stages, SlotRef out[2]) {
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
