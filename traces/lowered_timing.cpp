#include "traces/lowered_timing.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace bubblesim::traces {

namespace {

using sim::Op;
using sim::OpKind;
using sim::TimeNs;
using Kind = FileAction::Kind;

constexpr TimeNs kUnknown = -1;

// One step of a rank's program: a pass (or an overlapped pair) or an action.
struct Item {
  const FileAction* action = nullptr;  // null: the pass at `op`
  std::size_t op = 0;
  bool pair = false;
};

using TransferKey = std::tuple<Kind, int, int>;  // SEND kind, its stage, microbatch

}  // namespace

sim::Timeline simulate_lowered(const ScheduleFile& file, const sim::CostModel& costs,
                               sim::P2pMode p2p, const ActionDurations& durations) {
  const sim::Schedule& s = file.schedule;
  const std::size_t devices = s.device_ops.size();
  const bool blocking = p2p == sim::P2pMode::Blocking;
  const sim::OpSlots slots(s.num_stages(), s.num_microbatches);
  const auto device_of = [&](int stage) { return s.stage_device[static_cast<std::size_t>(stage)]; };

  // The programs, and which inputs arrive through a RECV of the file.
  std::vector<std::vector<Item>> programs(devices);
  std::map<TransferKey, bool> received;  // SEND key -> the file has its RECV
  for (std::size_t d = 0; d < devices; ++d) {
    const auto& ops = s.device_ops[d];
    const auto& pairs = s.pairs_of(static_cast<int>(d));
    const std::vector<FileAction> none;
    const auto& actions = d < file.actions.size() ? file.actions[d] : none;
    auto action = actions.begin();
    auto pair = pairs.begin();
    for (std::size_t i = 0; i <= ops.size(); ++i) {
      for (; action != actions.end() && action->passes_before <= i; ++action)
        programs[d].push_back(Item{&*action, 0, false});
      if (i == ops.size()) break;
      const bool paired = pair != pairs.end() && *pair == i;
      programs[d].push_back(Item{nullptr, i, paired});
      if (paired) {
        ++pair;
        ++i;
      }
    }
    for (const FileAction& a : actions) {
      if (a.kind == Kind::RecvF) received[{Kind::SendF, a.stage - 1, a.microbatch}] = true;
      if (a.kind == Kind::RecvB) received[{Kind::SendB, a.stage + 1, a.microbatch}] = true;
    }
  }

  std::vector<TimeNs> end_of(slots.size(), kUnknown);  // each pass's end
  std::map<TransferKey, TimeNs> issued;                // SEND key -> when it was reached
  std::map<TransferKey, TimeNs> arrived;               // SEND key -> when the RECV has it
  sim::Timeline timeline;
  timeline.device_ops.resize(devices);
  for (std::size_t d = 0; d < devices; ++d)
    timeline.device_ops[d].resize(s.device_ops[d].size());
  std::vector<std::size_t> next(devices, 0);
  std::vector<TimeNs> free_at(devices, 0);

  // When the input of `op` (on device d) is there; kUnknown while it is not known yet.
  const auto input_at = [&](const Op& op, int d) -> TimeNs {
    sim::SlotRef in{};
    if (!sim::data_input(op.kind, op.stage, s.route(op.microbatch), in)) return 0;
    const TimeNs produced = end_of[slots(in.slot, in.stage, op.microbatch)];
    if (device_of(in.stage) == d) return produced;
    const TransferKey key{op.kind == OpKind::F ? Kind::SendF : Kind::SendB, in.stage,
                          op.microbatch};
    if (received.count(key) != 0) {
      const auto it = arrived.find(key);
      return it == arrived.end() ? kUnknown : it->second;
    }
    return produced == kUnknown ? kUnknown : produced + costs.transfer_ns(device_of(in.stage), d);
  };

  // Runs device d's next item if what it needs is known; false otherwise.
  const auto step = [&](std::size_t d) -> bool {
    const Item& item = programs[d][next[d]];
    const int device = static_cast<int>(d);
    TimeNs& t = free_at[d];
    if (item.action != nullptr) {
      const FileAction& a = *item.action;
      switch (a.kind) {
        case Kind::Unshard:
          t += durations.unshard_ns;
          return true;
        case Kind::Reshard:
          t += durations.reshard_ns;
          return true;
        case Kind::ReduceGrad:
          t += durations.reduce_grad_ns;
          return true;
        case Kind::SendF:
        case Kind::SendB: {
          const TransferKey key{a.kind, a.stage, a.microbatch};
          const int to = device_of(a.kind == Kind::SendF ? a.stage + 1 : a.stage - 1);
          const TimeNs transfer = to == device ? 0 : costs.transfer_ns(device, to);
          issued[key] = t;
          if (!blocking) arrived[key] = t + transfer;
          if (blocking) t += transfer;
          return true;
        }
        case Kind::RecvF:
        case Kind::RecvB: {
          const TransferKey key{a.kind == Kind::RecvF ? Kind::SendF : Kind::SendB,
                                a.kind == Kind::RecvF ? a.stage - 1 : a.stage + 1, a.microbatch};
          if (!blocking) return true;  // the transfer arrives on its own
          const auto sent = issued.find(key);
          if (sent == issued.end()) return false;
          const int from = device_of(std::get<1>(key));
          const TimeNs transfer = from == device ? 0 : costs.transfer_ns(from, device);
          t = std::max(t, sent->second) + transfer;
          arrived[key] = t;
          return true;
        }
      }
      return true;
    }
    const auto& ops = s.device_ops[d];
    const Op& op = ops[item.op];
    TimeNs ready = input_at(op, device);
    if (item.pair) {
      const TimeNs other = input_at(ops[item.op + 1], device);
      ready = ready == kUnknown || other == kUnknown ? kUnknown : std::max(ready, other);
    }
    if (ready == kUnknown) return false;
    const TimeNs start = std::max(t, ready);
    const TimeNs end = start + (item.pair ? costs.overlapped_ns(op, ops[item.op + 1], device)
                                          : costs.duration_ns(op, device));
    t = end;
    for (std::size_t k = item.op; k <= item.op + (item.pair ? 1 : 0); ++k) {
      timeline.device_ops[d][k] = sim::OpTiming{start, end};
      end_of[slots(ops[k])] = end;
    }
    return true;
  };

  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t d = 0; d < devices; ++d) {
      while (next[d] < programs[d].size() && step(d)) {
        ++next[d];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (std::size_t d = 0; d < devices; ++d) {
    if (next[d] == programs[d].size()) continue;
    const Item& item = programs[d][next[d]];
    stuck += (stuck.empty() ? "" : "; ") + std::string("row ") + std::to_string(d + 1) + " at " +
             (item.action != nullptr ? "column " + std::to_string(item.action->column)
                                     : sim::to_string(s.device_ops[d][item.op]));
  }
  if (!stuck.empty()) {
    throw ScheduleFileError("the file's order deadlocks: every rank waits (" + stuck + ")");
  }
  return timeline;
}

}  // namespace bubblesim::traces
