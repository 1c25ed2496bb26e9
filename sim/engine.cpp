#include "sim/engine.h"

#include <algorithm>
#include <cstdint>

#include "sim/op_graph.h"

namespace bubblesim::sim {

namespace {

// An op ends on `device`, or a transfer delivers the input of the op in `slot`.
struct Event {
  TimeNs time_ns;
  std::uint64_t seq;      // insertion order: equal times are handled first-in, first-out
  std::uint64_t payload;  // device (op end) or slot (arrival)
  bool is_arrival;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq > b.seq;
  }
};

class Run {
 public:
  Run(const Schedule& schedule, const CostModel& costs,
      const std::vector<EngineObserver*>& observers)
      : s_(schedule),
        costs_(costs),
        observers_(observers),
        slots_(schedule.num_stages(), schedule.num_microbatches),
        pending_(slots_.size(), 0),
        cursor_(static_cast<std::size_t>(schedule.num_devices()), 0),
        busy_(static_cast<std::size_t>(schedule.num_devices()), false) {
    timeline_.device_ops.resize(cursor_.size());
    for (std::size_t d = 0; d < cursor_.size(); ++d) {
      const auto& ops = s_.device_ops[d];
      timeline_.device_ops[d].resize(ops.size());
      for (const Op& op : ops) {
        SlotRef input{};
        pending_[slots_(op)] = data_input(op.kind, op.stage, s_.num_stages(), input) ? 1 : 0;
      }
    }
    heap_.reserve(cursor_.size() * 4);
  }

  Timeline run() {
    for (int d = 0; d < s_.num_devices(); ++d)
      try_start(d, 0);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      const Event e = heap_.back();
      heap_.pop_back();
      if (e.is_arrival) {
        arrive(e.payload, e.time_ns);
      } else {
        finish(static_cast<int>(e.payload), e.time_ns);
      }
    }
    if (finished_ != s_.num_ops()) report_deadlock();
    return std::move(timeline_);
  }

 private:
  void push(TimeNs time_ns, std::uint64_t payload, bool is_arrival) {
    heap_.push_back(Event{time_ns, next_seq_++, payload, is_arrival});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }

  // Starts the device's next op if the device is idle and the op's input is there.
  void try_start(int device, TimeNs now) {
    const auto d = static_cast<std::size_t>(device);
    const auto& ops = s_.device_ops[d];
    if (busy_[d] || cursor_[d] == ops.size()) return;
    const Op& op = ops[cursor_[d]];
    if (pending_[slots_(op)] != 0) return;
    const TimeNs end = now + costs_.duration_ns(op, device);
    timeline_.device_ops[d][cursor_[d]] = OpTiming{now, end};
    busy_[d] = true;
    push(end, d, false);
    if (!observers_.empty()) {
      const OpEvent event{op, device, cursor_[d], now, end};
      for (EngineObserver* o : observers_)
        o->on_op_start(event);
    }
  }

  void arrive(std::size_t slot, TimeNs now) {
    --pending_[slot];
    const auto stage = static_cast<std::size_t>(slot / kNumSlots / s_.num_microbatches);
    try_start(s_.stage_device[stage], now);
  }

  void finish(int device, TimeNs now) {
    const auto d = static_cast<std::size_t>(device);
    const std::size_t index = cursor_[d]++;
    const Op& op = s_.device_ops[d][index];
    busy_[d] = false;
    ++finished_;
    if (!observers_.empty()) {
      const OpEvent event{op, device, index, timeline_.device_ops[d][index].start_ns, now};
      for (EngineObserver* o : observers_)
        o->on_op_end(event);
    }
    SlotRef out[2];
    const int n = data_outputs(op.kind, op.stage, s_.num_stages(), out);
    for (int i = 0; i < n; ++i) {
      const std::size_t slot = slots_(out[i].slot, out[i].stage, op.microbatch);
      const int dst = s_.stage_device[static_cast<std::size_t>(out[i].stage)];
      if (dst == device) {
        --pending_[slot];
        continue;
      }
      const TimeNs arrival = now + costs_.transfer_ns(device, dst);
      if (!observers_.empty()) {
        const TransferEvent event{op, device, dst, now, arrival};
        for (EngineObserver* o : observers_)
          o->on_transfer(event);
      }
      if (arrival == now) {
        arrive(slot, now);
      } else {
        push(arrival, slot, true);
      }
    }
    try_start(device, now);
  }

  [[noreturn]] void report_deadlock() const {
    OpGraph(s_, costs_).check_acyclic();
    BUBBLESIM_CHECK(false, "the engine stalled on a schedule whose graph has no cycle");
  }

  const Schedule& s_;
  const CostModel& costs_;
  const std::vector<EngineObserver*>& observers_;
  OpSlots slots_;
  std::vector<std::uint8_t> pending_;  // per slot: inputs not yet arrived
  std::vector<std::size_t> cursor_;    // per device: index of the next op to run
  std::vector<bool> busy_;
  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
  std::size_t finished_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline Engine::run() {
  schedule_.validate();
  return Run(schedule_, costs_, observers_).run();
}

}  // namespace bubblesim::sim
