#include "sim/engine.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/device_events.h"
#include "sim/op_graph.h"

namespace bubblesim::sim {

namespace {

// One run of the engine. kWatched: observers are attached, so every start, end and transfer
// is reported at its time, in time order, from the event queue. Without observers nothing
// needs those moments in order: an op starts at max(its device is free, its input is there)
// whatever order the ops are looked at in, so each device runs ahead through its ops until
// one's input is not published yet, and publishing that input resumes it (a data-flow
// evaluation, no event queue). The timeline is the same either way (the tests check it).
// kPlain: the schedule has no routes and no overlapped pairs (all but the bidirectional
// schedules), so the checks for them compile away from the hot path.
template <bool kWatched, bool kPlain>
class Run {
 public:
  Run(const Schedule& schedule, const CostModel& costs,
      const std::vector<EngineObserver*>& observers, InputRule rule, P2pMode p2p)
      : s_(schedule),
        costs_(costs),
        observers_(observers),
        blocking_(p2p == P2pMode::Blocking),
        slots_(schedule.num_stages(), schedule.num_microbatches),
        ready_ns_(slots_.size(), kNever),
        recv_ns_(blocking_ ? slots_.size() : 0, 0),
        devices_(static_cast<std::size_t>(schedule.num_devices())),
        events_(kWatched ? devices_.size() : 0) {
    // The forwards of each route's first stage have no input: ready from the start.
    for (int mb = 0; mb < s_.num_microbatches; ++mb) {
      ready_ns_[slots_(Slot::Forward, route_of(mb).first, mb)] = 0;
    }
    if (rule == InputRule::PaperEvaluator) skip_wraparound_inputs();
    // Each device's pairs as pointers to their forwards, then a null end marker.
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      for (const std::size_t i : s_.pairs_of(static_cast<int>(d)))
        pairs_.push_back(s_.device_ops[d].data() + i);
      pairs_.push_back(nullptr);
    }
    timeline_.device_ops.resize(devices_.size());
    const Op* const* pairs = pairs_.data();
    next_pair_.resize(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      const auto& ops = s_.device_ops[d];
      auto& timings = timeline_.device_ops[d];
      timings.reserve(ops.size());  // no zero fill: every entry is written once, in order
      Device& dev = devices_[d];
      dev.first = dev.next = ops.data();
      dev.end = ops.data() + ops.size();
      dev.timings = &timings;
      next_pair_[d] = pairs;
      while (*pairs != nullptr)
        ++pairs;
      ++pairs;
      if (!ops.empty()) {
        dev.slots = slots_of(ops.front());
        dev.paired = *next_pair_[d] == dev.first;
      }
    }
  }

  // Nothing when the devices stall before every op ran (a dependency cycle).
  std::optional<Timeline> run() {
    if constexpr (kWatched) {
      for (std::size_t d = 0; d < devices_.size(); ++d)
        schedule_next(d, 0);
      wake_waiting(0);
      while (events_.next_time() != kNever) {
        const std::size_t d = events_.next_device();
        const TimeNs now = events_.next_time();
        Device& dev = devices_[d];
        if (dev.busy) {
          finish(d, now);
          if (dev.hold_ns > 0) [[unlikely]] {
            // P2pMode::Blocking: the device sends the step's outputs before it is free.
            events_.set(d, now + dev.hold_ns);
            dev.hold_ns = 0;
            wake_waiting(now);
            continue;
          }
        }
        schedule_next(d, now);  // the device is idle now: start or wait for its next op
        wake_waiting(now);
      }
    } else {
      for (std::size_t d = devices_.size(); d-- > 0;)
        woken_.push_back(d);
      while (!woken_.empty()) {
        const std::size_t d = woken_.back();
        woken_.pop_back();
        run_ahead(d);
      }
    }
    if (finished_ != s_.num_ops()) return std::nullopt;
    return std::move(timeline_);
  }

 private:
  static constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

  // Where an op's input waits and where its outputs go: computed once per op, when the op
  // before it on its device starts (and its memory is prefetched then).
  struct Slots {
    std::size_t input = 0;
    std::size_t outputs[2] = {};
    int stages[2] = {};  // the output slots' stages
    int num_outputs = 0;
  };
  Slots slots_of(const Op& op) const {
    Slots s;
    s.input = slots_(op);
    SlotRef out[2];
    s.num_outputs = data_outputs(op.kind, op.stage, route_of(op.microbatch), out);
    for (int i = 0; i < s.num_outputs; ++i) {
      s.outputs[i] = slots_(out[i].slot, out[i].stage, op.microbatch);
      s.stages[i] = out[i].stage;
    }
    return s;
  }

  StageRange route_of(int mb) const {
    if constexpr (kPlain) return StageRange{0, s_.num_stages() - 1};
    return routes_ != nullptr ? routes_[mb] : StageRange{0, s_.num_stages() - 1};
  }

  // InputRule::PaperEvaluator: the inputs that wrap around from the last device to device 0
  // are there from the start, except for the first microbatch of each round of p.
  void skip_wraparound_inputs() {
    const int p = s_.num_devices();
    for (int s = p; s < s_.num_stages(); s += p) {
      const auto at = [&](int stage) { return s_.stage_device[static_cast<std::size_t>(stage)]; };
      if (at(s) != 0 || at(s - 1) != p - 1) continue;
      for (int mb = 0; mb < s_.num_microbatches; ++mb) {
        if (mb % p == 0) continue;
        for (const std::size_t slot :
             {slots_(Slot::Forward, s, mb), slots_(Slot::Backward, s - 1, mb)}) {
          if (skipped_.empty()) skipped_.resize(slots_.size(), 0);
          skipped_[slot] = 1;
          ready_ns_[slot] = 0;
        }
      }
    }
  }

  struct Device {
    const Op* first = nullptr;
    const Op* next = nullptr;  // the next op to start, or the running op
    const Op* end = nullptr;
    std::vector<OpTiming>* timings = nullptr;  // filled in order: the ops started so far
    bool busy = false;                         // watched: running *next (or the pair at next)
    TimeNs free_ns = 0;                        // unwatched: when the last step started ends
    bool paired = false;       // *next and next[1] are an overlapped pair: one compute slot
    bool next_paired = false;  // the same for the step after it, once *next has started
    std::size_t waiting_for = kNoSlot;  // idle until the input in this slot is published
    TimeNs hold_ns = 0;     // watched, P2pMode::Blocking: sending after the running step
    bool received = false;  // watched, P2pMode::Blocking: the next step's receive is done
    Slots slots;            // of *next, the op to start or running
    Slots next_slots;       // of the op after this step, once *next has started
  };

  // When the inputs of device d's next step (its next op, or its next overlapped pair, whose
  // backward's slots go to `second`) are all there; kNever while one is not published yet,
  // and the device then waits for it (publish() resumes it). Precondition: a next step.
  TimeNs step_ready(Device& dev, Slots& second) {
    TimeNs ready = ready_ns_[dev.slots.input];
    if (!kPlain && dev.paired && ready != kNever) [[unlikely]] {
      second = slots_of(dev.next[1]);
      const TimeNs ready_second = ready_ns_[second.input];
      if (ready_second == kNever) {
        dev.waiting_for = second.input;
        return kNever;
      }
      return std::max(ready, ready_second);
    }
    if (ready == kNever) dev.waiting_for = dev.slots.input;
    return ready;
  }

  // Starts device d's next step at `start` and returns its end. Watched, the start is
  // reported; unwatched, the step's outputs are published at once.
  TimeNs start_step(std::size_t d, TimeNs start, const Slots& second) {
    Device& dev = devices_[d];
    const Op* ops = dev.next;
    if (!kPlain && dev.paired) [[unlikely]] {
      const TimeNs end = add_time(start, costs_.overlapped_ns(ops[0], ops[1], static_cast<int>(d)));
      dev.timings->push_back(OpTiming{start, end});
      dev.timings->push_back(OpTiming{start, end});
      if constexpr (kWatched) {
        report_start(dev, d, 0, start, end);
        report_start(dev, d, 1, start, end);
      } else {
        publish(ops[0], dev.slots, static_cast<int>(d), end);
        publish(ops[1], second, static_cast<int>(d), end);
      }
      ++next_pair_[d];
      prepare_next_step(dev, d, ops + 2);
      return end;
    }
    const TimeNs end = add_time(start, costs_.duration_ns(ops[0], static_cast<int>(d)));
    dev.timings->push_back(OpTiming{start, end});
    if constexpr (kWatched) {
      report_start(dev, d, 0, start, end);
    } else {
      publish(ops[0], dev.slots, static_cast<int>(d), end);
    }
    prepare_next_step(dev, d, ops + 1);
    return end;
  }

  // Watched: device d is idle at `now`. Its next step starts now if its inputs are there; if
  // they arrive later, the device wakes up then, to report the start on time.
  void schedule_next(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    Slots second;
    const TimeNs ready = dev.next == dev.end ? kNever : step_ready(dev, second);
    if (ready > now) {
      events_.set(d, ready);
      return;
    }
    if (blocking_) [[unlikely]] {
      if (!dev.received) {
        const TimeNs recv = receive_ns(dev, second);
        if (recv > 0) {  // the device receives the step's input first, then wakes up
          dev.received = true;
          events_.set(d, now + recv);
          return;
        }
      }
      dev.received = false;
      dev.hold_ns = send_ns(dev, d, second);
    }
    dev.busy = true;
    events_.set(d, start_step(d, now, second));
  }

  // P2pMode::Blocking: how long device d's next step receives its inputs from other devices
  // (the longer of a pair's two) and how long it sends its outputs to them (all of them).
  TimeNs receive_ns(const Device& dev, const Slots& second) const {
    TimeNs recv = recv_ns_[dev.slots.input];
    if (!kPlain && dev.paired) recv = std::max(recv, recv_ns_[second.input]);
    return recv;
  }
  TimeNs send_ns(const Device& dev, std::size_t d, const Slots& second) const {
    TimeNs send = 0;
    const auto add = [&](const Slots& slots) {
      for (int i = 0; i < slots.num_outputs; ++i) {
        const int dst = s_.stage_device[static_cast<std::size_t>(slots.stages[i])];
        if (dst != static_cast<int>(d)) send += costs_.transfer_ns(static_cast<int>(d), dst);
      }
    };
    add(dev.slots);
    if (!kPlain && dev.paired) add(second);
    return send;
  }

  // Unwatched: device d runs its steps, each at max(the device is free, its inputs are there),
  // until the inputs of one are not published yet.
  void run_ahead(std::size_t d) {
    Device& dev = devices_[d];
    while (dev.next != dev.end) {
      Slots second;
      const TimeNs ready = step_ready(dev, second);
      if (ready == kNever) return;
      if (blocking_) [[unlikely]] {
        const TimeNs recv = receive_ns(dev, second);
        const TimeNs send = send_ns(dev, d, second);
        dev.free_ns = start_step(d, std::max(dev.free_ns, ready) + recv, second) + send;
      } else {
        dev.free_ns = start_step(d, std::max(dev.free_ns, ready), second);
      }
      finish(d, dev.free_ns);
    }
  }

  // The step on device d (`dev`) has started; `after` is the op that follows it.
  void prepare_next_step(Device& dev, std::size_t d, const Op* after) {
    // Devices interleave their ops, so each device is its own stream through memory: fetch
    // what this device needs next while the other devices are handled.
    const auto left = dev.end - after;  // the ops after this step
    if (left > 3) {
      __builtin_prefetch(after + 3);
      __builtin_prefetch(dev.timings->data() + dev.timings->size() + 3, 1);  // op after + 3
    }
    if (left > 0) {
      if (!kPlain) dev.next_paired = *next_pair_[d] == after;
      dev.next_slots = prefetched(slots_of(*after));
    }
  }

  // The event of op k (0, or 1 for a pair's backward) of device d's current step.
  OpEvent event_of(const Device& dev, std::size_t d, int k, TimeNs start, TimeNs end) const {
    const std::size_t i = index(dev) + static_cast<std::size_t>(k);
    return OpEvent{dev.next[k], static_cast<int>(d), i, start, end, dev.paired};
  }
  void report_start(const Device& dev, std::size_t d, int k, TimeNs start, TimeNs end) const {
    const OpEvent event = event_of(dev, d, k, start, end);
    for (EngineObserver* o : observers_)
      o->on_op_start(event);
  }

  Slots prefetched(const Slots& s) const {
    __builtin_prefetch(&ready_ns_[s.input]);
    for (int i = 0; i < s.num_outputs; ++i)
      __builtin_prefetch(&ready_ns_[s.outputs[i]], 1);
    return s;
  }

  // The running op (or overlapped pair) of device d ends at `now`.
  void finish(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    const int ops = !kPlain && dev.paired ? 2 : 1;
    if constexpr (kWatched) {
      for (int k = 0; k < ops; ++k) {
        const OpEvent event = event_of(dev, d, k, dev.timings->back().start_ns, now);
        for (EngineObserver* o : observers_)
          o->on_op_end(event);
      }
      publish(dev.next[0], dev.slots, static_cast<int>(d), now);
      if (dev.paired) publish(dev.next[1], slots_of(dev.next[1]), static_cast<int>(d), now);
    }
    dev.next += ops;
    dev.slots = dev.next_slots;
    if (!kPlain) dev.paired = dev.next_paired;
    dev.busy = false;
    finished_ += static_cast<std::size_t>(ops);
  }

  // The outputs of `op` (in `slots`), which ends at `end_ns` on `device`, leave for their
  // consumers.
  void publish(const Op& op, const Slots& slots, int device, TimeNs end_ns) {
    for (int i = 0; i < slots.num_outputs; ++i) {
      const std::size_t slot = slots.outputs[i];
      const int dst = s_.stage_device[static_cast<std::size_t>(slots.stages[i])];
      if (dst == device) {
        ready_ns_[slot] = end_ns;
        continue;
      }
      const TimeNs hop = costs_.transfer_ns(device, dst);
      const TimeNs arrival = add_time(end_ns, hop);
      if constexpr (kWatched) {
        const TransferEvent event{op, device, dst, end_ns, arrival};
        for (EngineObserver* o : observers_)
          o->on_transfer(event);
      } else {
        (void)op;
      }
      if (!skipped_.empty() && skipped_[slot] != 0) [[unlikely]]
        continue;  // its consumer does not wait for it (InputRule::PaperEvaluator)
      if (blocking_) [[unlikely]] {
        ready_ns_[slot] = end_ns;  // the receiver takes `hop` on its own stream from then on
        recv_ns_[slot] = hop;
      } else {
        ready_ns_[slot] = arrival;
      }
      const auto c = static_cast<std::size_t>(dst);
      if (devices_[c].waiting_for == slot) {
        devices_[c].waiting_for = kNoSlot;
        woken_.push_back(c);
      }
    }
  }

  // Watched: schedules the devices whose input was published.
  void wake_waiting(TimeNs now) {
    while (!woken_.empty()) {
      const std::size_t c = woken_.back();
      woken_.pop_back();
      schedule_next(c, now);
    }
  }

  static std::size_t index(const Device& dev) {
    return static_cast<std::size_t>(dev.next - dev.first);
  }

  const Schedule& s_;
  const CostModel& costs_;
  const std::vector<EngineObserver*>& observers_;
  const bool blocking_;  // P2pMode::Blocking
  OpSlots slots_;
  const StageRange* routes_ = s_.routes.empty() ? nullptr : s_.routes.data();
  std::vector<const Op*> pairs_;  // per device: its overlapped pairs' forwards, then null
  std::vector<const Op* const*> next_pair_;  // per device: its first pair not started yet
  std::vector<TimeNs> ready_ns_;       // per slot: when the op's input is there (kNever: not yet)
  std::vector<TimeNs> recv_ns_;        // P2pMode::Blocking, per slot: the input's transfer time
  std::vector<std::uint8_t> skipped_;  // per slot, or empty: 1 where the input is not awaited
  std::vector<Device> devices_;
  DeviceEvents events_;  // watched only
  // Devices whose awaited input was just published; unwatched, also the devices that have
  // not run ahead yet.
  std::vector<std::size_t> woken_;
  std::size_t finished_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline Engine::run() {
  schedule_.validate();
  return run_validated();
}

Timeline Engine::run_validated() {
  if (std::optional<Timeline> timeline = try_run_validated()) return std::move(*timeline);
  OpGraph(schedule_, costs_).check_acyclic();  // throws DeadlockError naming the cycle
  BUBBLESIM_CHECK(false, "the engine stalled on a schedule whose graph has no cycle");
}

std::optional<Timeline> Engine::try_run_validated() {
  if (network_ != nullptr) {
    if (input_rule_ != InputRule::All) {
      throw InvalidArgument("the paper's evaluator rule cannot time transfers over a network");
    }
    if (p2p_ != P2pMode::Async) {
      throw SettingError("p2p",
                         "blocking transfers cannot be timed over a network (give per-hop "
                         "transfer times instead of a cluster)");
    }
    try {
      return run_with_network(schedule_, costs_, *network_, observers_);
    } catch (const DeadlockError&) {
      return std::nullopt;
    }
  }
  const bool plain =
      schedule_.routes.empty() &&
      std::all_of(schedule_.overlapped_pairs.begin(), schedule_.overlapped_pairs.end(),
                  [](const auto& pairs) { return pairs.empty(); });
  if (!observers_.empty())
    return Run<true, false>(schedule_, costs_, observers_, input_rule_, p2p_).run();
  if (plain) return Run<false, true>(schedule_, costs_, observers_, input_rule_, p2p_).run();
  return Run<false, false>(schedule_, costs_, observers_, input_rule_, p2p_).run();
}

}  // namespace bubblesim::sim
