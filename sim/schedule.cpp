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
  if (s.routes.empty()) return;
  if (s.routes.size() != static_cast<std::size_t>(s.num_microbatches)) {
    throw PlacementError("the schedule has " + std::to_string(s.routes.size()) + " routes for " +
                         std::to_string(s.num_microbatches) + " microbatches");
  }
  for (int mb = 0; mb < s.num_microbatches; ++mb) {
    const StageRange r = s.route(mb);
    if (r.first < 0 || r.first > r.last || r.last >= s.num_stages()) {
      throw PlacementError("microbatch " + std::to_string(mb) + " runs stages " +
                           std::to_string(r.first) + " to " + std::to_string(r.last) +
                           ", but the schedule has stages 0 to " +
                           std::to_string(s.num_stages() - 1));
    }
  }
}

void check_pairs(const Schedule& s) {
  if (s.overlapped_pairs.empty()) return;
  if (s.overlapped_pairs.size() != s.device_ops.size()) {
    throw OverlapError("the schedule has " + std::to_string(s.overlapped_pairs.size()) +
                       " lists of overlapped pairs for " + std::to_string(s.num_devices()) +
                       " devices");
  }
  for (int d = 0; d < s.num_devices(); ++d) {
    const auto& ops = s.device_ops[static_cast<std::size_t>(d)];
    std::size_t free_from = 0;  // the first position no earlier pair uses
    for (const std::size_t i : s.overlapped_pairs[static_cast<std::size_t>(d)]) {
      if (i < free_from || i + 1 >= ops.size()) {
        throw OverlapError("overlapped pair at " + where({d, i}) +
                           " is out of order or past the device's last op");
      }
      const Op& f = ops[i];
      const Op& b = ops[i + 1];
      if (f.kind != OpKind::F || (b.kind != OpKind::B && b.kind != OpKind::BW)) {
        throw OverlapError(to_string(f) + " and " + to_string(b) + " at " + where({d, i}) +
                               " cannot run overlapped: a pair is a forward followed by a "
                               "backward (B or BW)",
                           {f, b});
      }
      free_from = i + 2;
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

const std::vector<std::size_t>& Schedule::pairs_of(int device) const {
  static const std::vector<std::size_t> kNone;
  return overlapped_pairs.empty() ? kNone : overlapped_pairs[static_cast<std::size_t>(device)];
}

int Schedule::route_stages() const {
  const int stages = route(0).size();
  for (const StageRange& r : routes) {
    if (r.size() != stages) return 0;
  }
  return stages;
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
  // Per slot: 0 while unseen, else 1 + the kind of the op that took it. One byte per slot
  // keeps validation cheap next to simulation; positions are looked up only for errors.
  std::vector<std::uint8_t> seen(slots.size(), 0);
  auto first_position = [&](std::size_t slot) {
    for (int d = 0; d < num_devices(); ++d) {
      const auto& ops = device_ops[static_cast<std::size_t>(d)];
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (slots(ops[i]) == slot) return Position{d, i};
      }
    }
    return Position{};
  };

  // The hot loop reads plain locals: unsigned compares check both ends of each range.
  const auto stages = static_cast<std::uint32_t>(num_stages());
  const auto microbatches = static_cast<std::uint32_t>(num_microbatches);
  const int* placement = stage_device.data();
  const int* chunk_of = chunks.data();
  std::uint8_t* taken = seen.data();
  const StageRange* route_of = routes.empty() ? nullptr : routes.data();
  for (int d = 0; d < num_devices(); ++d) {
    const auto& ops = device_ops[static_cast<std::size_t>(d)];
    const std::size_t count = ops.size();
    for (std::size_t i = 0; i < count; ++i) {
      const Op& op = ops[i];
      if (static_cast<std::uint32_t>(op.stage) >= stages ||
          static_cast<std::uint32_t>(op.microbatch) >= microbatches ||
          static_cast<unsigned>(op.kind) >= kNumOpKinds) {
        throw PlacementError(to_string(op) + " at " + where({d, i}) +
                                 " is out of range: " + std::to_string(num_stages()) + " stages, " +
                                 std::to_string(num_microbatches) + " microbatches",
                             {op});
      }
      if (placement[op.stage] != d) {
        throw PlacementError("stage " + std::to_string(op.stage) +
                                 " is on two devices: placed on device " +
                                 std::to_string(placement[op.stage]) + ", but " + where({d, i}) +
                                 " runs " + to_string(op),
                             {op});
      }
      if (op.chunk != chunk_of[op.stage]) {
        throw PlacementError(
            to_string(op) + " at " + where({d, i}) + " says chunk " + std::to_string(op.chunk) +
                ", but stage " + std::to_string(op.stage) + " is chunk " +
                std::to_string(chunk_of[op.stage]) + " of device " + std::to_string(d),
            {op});
      }
      if (route_of != nullptr &&
          (op.stage < route_of[op.microbatch].first || op.stage > route_of[op.microbatch].last)) {
        const StageRange r = route_of[op.microbatch];
        throw PlacementError(to_string(op) + " at " + where({d, i}) + " is off its route: mb " +
                                 std::to_string(op.microbatch) + " runs stages " +
                                 std::to_string(r.first) + " to " + std::to_string(r.last),
                             {op});
      }
      const std::size_t slot = slots(op);
      if (taken[slot] != 0) {
        Op other = op;
        other.kind = static_cast<OpKind>(taken[slot] - 1);
        const std::string first = where(first_position(slot));
        throw DuplicateOpError(
            other.kind == op.kind
                ? to_string(op) + " appears twice: at " + first + " and " + where({d, i})
                : "backward runs twice: " + to_string(other) + " at " + first + " and " +
                      to_string(op) + " at " + where({d, i}),
            {other, op});
      }
      taken[slot] = static_cast<std::uint8_t>(static_cast<int>(op.kind) + 1);
    }
  }

  // A quick branch-free pass over the slots; the slow one below only names what is missing.
  // Off-route slots are empty (checked above): without routes there are none.
  bool complete = true;
  constexpr std::uint8_t kB = static_cast<int>(OpKind::B) + 1;
  auto slot_complete = [&](std::size_t i) {
    const std::uint8_t back = taken[i + 1];
    return taken[i] != 0 && back != 0 && ((back == kB) == (taken[i + 2] != 0));
  };
  if (route_of == nullptr) {
    for (std::size_t i = 0; i + kNumSlots <= seen.size(); i += kNumSlots)
      complete &= slot_complete(i);
  } else {
    for (int mb = 0; mb < num_microbatches; ++mb) {
      for (int stage = route_of[mb].first; stage <= route_of[mb].last; ++stage)
        complete &= slot_complete(slots(Slot::Forward, stage, mb));
    }
  }
  if (complete) {
    check_pairs(*this);
    return;
  }

  for (int stage = 0; stage < num_stages(); ++stage) {
    for (int mb = 0; mb < num_microbatches; ++mb) {
      if (stage < route(mb).first || stage > route(mb).last) continue;
      auto op_of = [&](OpKind kind) {
        return Op{kind, stage, chunks[static_cast<std::size_t>(stage)], mb};
      };
      auto named = [&](OpKind kind) { return to_string(op_of(kind)); };
      const std::uint8_t back = seen[slots(Slot::Backward, stage, mb)];
      const bool has_f = seen[slots(Slot::Forward, stage, mb)] != 0;
      const bool has_w = seen[slots(Slot::Weight, stage, mb)] != 0;
      const bool split = back == static_cast<int>(OpKind::B) + 1;
      if (!has_f) throw MissingOpError("missing op " + named(OpKind::F));
      if (back == 0 && has_w) {
        throw MissingOpError("missing op " + named(OpKind::B) + " before " + named(OpKind::W),
                             {op_of(OpKind::W)});
      }
      if (back == 0) {
        throw MissingOpError("missing op " + named(OpKind::BW) + " (or " + named(OpKind::B) +
                             " and " + named(OpKind::W) + ")");
      }
      if (split && !has_w) {
        throw MissingOpError("missing op " + named(OpKind::W) + " after " + named(OpKind::B),
                             {op_of(OpKind::B)});
      }
      if (!split && has_w) {
        throw DuplicateOpError("backward runs twice: " + named(OpKind::BW) + " and " +
                                   named(OpKind::W) + " are both scheduled",
                               {op_of(OpKind::BW), op_of(OpKind::W)});
      }
    }
  }
  BUBBLESIM_CHECK(false, "the quick completeness check failed but no op is missing");
}

}  // namespace bubblesim::sim
