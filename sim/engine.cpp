#include "sim/engine.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/op_graph.h"

namespace bubblesim::sim {

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

// The event queue: each device has at most one next event (its running op ends, or it wakes
// up when the input of its next op arrives), so the queue is a tournament tree over devices.
// An update is one walk from a leaf to the root; ties go to the lower device index, so the
// order of events is a function of the input alone.
class DeviceEvents {
 public:
  explicit DeviceEvents(std::size_t devices) {
    while (leaves_ < devices)
      leaves_ *= 2;
    node_.resize(2 * leaves_);
    for (std::size_t i = 0; i < leaves_; ++i)
      node_[leaves_ + i] = Entry{kNever, i};
    for (std::size_t n = leaves_ - 1; n >= 1; --n) {
      node_[n] = node_[2 * n + 1].time_ns < node_[2 * n].time_ns ? node_[2 * n + 1] : node_[2 * n];
    }
  }

  std::size_t next_device() const { return node_[1].device; }
  TimeNs next_time() const { return node_[1].time_ns; }

  void set(std::size_t device, TimeNs time_ns) {
    // Carry the winner up in registers, reading only the sibling at each level; on a tie the
    // left subtree (lower device indices) wins. Branch-free: the comparisons are unpredictable.
    std::size_t n = leaves_ + device;
    TimeNs best_ns = time_ns;
    std::size_t best = device;
    node_[n] = Entry{best_ns, best};
    for (; n > 1; n /= 2) {
      const Entry sibling = node_[n ^ 1];
      const bool sibling_is_left = (n & 1) != 0;
      const bool take =
          sibling.time_ns < best_ns || (sibling_is_left && sibling.time_ns == best_ns);
      best_ns = take ? sibling.time_ns : best_ns;
      best = take ? sibling.device : best;
      Entry& parent = node_[n / 2];
      // Nothing above changes when this node keeps its winner (common when a waiting
      // device gets a late event).
      if (parent.device == best && parent.time_ns == best_ns) break;
      parent = Entry{best_ns, best};
    }
  }

 private:
  struct Entry {
    TimeNs time_ns;  // the device's next event, kNever if none
    std::size_t device;
  };
  std::size_t leaves_ = 1;
  std::vector<Entry> node_;  // node_[leaves_ + d]: device d; node_[n]: the earliest below n
};

class Run {
 public:
  Run(const Schedule& schedule, const CostModel& costs,
      const std::vector<EngineObserver*>& observers)
      : s_(schedule),
        costs_(costs),
        observers_(observers),
        slots_(schedule.num_stages(), schedule.num_microbatches),
        ready_ns_(slots_.size(), kNever),
        devices_(static_cast<std::size_t>(schedule.num_devices())),
        events_(devices_.size()) {
    // The forwards of stage 0 have no input: ready from the start.
    for (int mb = 0; mb < s_.num_microbatches; ++mb)
      ready_ns_[slots_(Slot::Forward, 0, mb)] = 0;
    timeline_.device_ops.resize(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      const auto& ops = s_.device_ops[d];
      timeline_.device_ops[d].resize(ops.size());
      devices_[d] =
          Device{ops.data(), ops.data(), ops.data() + ops.size(), timeline_.device_ops[d].data()};
    }
  }

  Timeline run() {
    for (std::size_t d = 0; d < devices_.size(); ++d)
      schedule_next(d, 0);
    while (events_.next_time() != kNever) {
      const std::size_t d = events_.next_device();
      const TimeNs now = events_.next_time();
      if (devices_[d].busy) finish(d, now);
      schedule_next(d, now);  // the device is idle now: start or wait for its next op
    }
    if (finished_ != s_.num_ops()) report_deadlock();
    return std::move(timeline_);
  }

 private:
  static constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

  struct Device {
    const Op* first = nullptr;
    const Op* next = nullptr;  // the next op to start, or the running op
    const Op* end = nullptr;
    OpTiming* timing = nullptr;  // timing of `next`
    bool busy = false;
    std::size_t waiting_for = kNoSlot;  // idle until the producer of this slot ends
  };

  // Device d is idle at `now`: start its next op if the input is there, else wait for it.
  void schedule_next(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    if (dev.next == dev.end) {
      events_.set(d, kNever);
      return;
    }
    const Op& op = *dev.next;
    const std::size_t slot = slots_(op);
    const TimeNs ready = ready_ns_[slot];
    dev.waiting_for = kNoSlot;
    if (ready == kNever) {
      dev.waiting_for = slot;  // the producer has not ended: its finish() wakes us
      events_.set(d, kNever);
      return;
    }
    if (ready > now && !observers_.empty()) {
      events_.set(d, ready);  // wake up when the input arrives, to report the start on time
      return;
    }
    // Nobody watches the start: commit it now, at its known time, and save an event.
    const TimeNs start = std::max(now, ready);
    const TimeNs end = start + costs_.duration_ns(op, static_cast<int>(d));
    *dev.timing = OpTiming{start, end};
    dev.busy = true;
    events_.set(d, end);
    // Devices interleave their ops, so each device is its own stream through memory: fetch
    // what this device needs next while its op runs and the other devices are handled.
    if (dev.next + 1 != dev.end) {
      __builtin_prefetch(dev.next + 4);
      __builtin_prefetch(&ready_ns_[slots_(dev.next[1])]);
    }
    if (!observers_.empty()) {
      const OpEvent event{op, static_cast<int>(d), index(dev), start, end};
      for (EngineObserver* o : observers_)
        o->on_op_start(event);
    }
  }

  // The running op of device d ends at `now`: its outputs leave for their consumers.
  void finish(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    const Op& op = *dev.next;
    const int device = static_cast<int>(d);
    if (!observers_.empty()) {
      const OpEvent event{op, device, index(dev), dev.timing->start_ns, now};
      for (EngineObserver* o : observers_)
        o->on_op_end(event);
    }
    ++dev.next;
    ++dev.timing;
    dev.busy = false;
    ++finished_;
    SlotRef out[2];
    const int n = data_outputs(op.kind, op.stage, s_.num_stages(), out);
    for (int i = 0; i < n; ++i) {
      const std::size_t slot = slots_(out[i].slot, out[i].stage, op.microbatch);
      const int dst = s_.stage_device[static_cast<std::size_t>(out[i].stage)];
      if (dst == device) {
        ready_ns_[slot] = now;
        continue;
      }
      const TimeNs arrival = now + costs_.transfer_ns(device, dst);
      ready_ns_[slot] = arrival;
      if (!observers_.empty()) {
        const TransferEvent event{op, device, dst, now, arrival};
        for (EngineObserver* o : observers_)
          o->on_transfer(event);
      }
      const auto c = static_cast<std::size_t>(dst);
      if (devices_[c].waiting_for == slot) schedule_next(c, now);
    }
  }

  static std::size_t index(const Device& dev) {
    return static_cast<std::size_t>(dev.next - dev.first);
  }

  [[noreturn]] void report_deadlock() const {
    OpGraph(s_, costs_).check_acyclic();
    BUBBLESIM_CHECK(false, "the engine stalled on a schedule whose graph has no cycle");
  }

  const Schedule& s_;
  const CostModel& costs_;
  const std::vector<EngineObserver*>& observers_;
  OpSlots slots_;
  std::vector<TimeNs> ready_ns_;  // per slot: when the op's input is there (kNever: not yet)
  std::vector<Device> devices_;
  DeviceEvents events_;
  std::size_t finished_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline Engine::run() {
  schedule_.validate();
  return Run(schedule_, costs_, observers_).run();
}

}  // namespace bubblesim::sim
