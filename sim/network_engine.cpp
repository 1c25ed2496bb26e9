// The engine's run with a network (engine.h, network.h): a plain event loop with a binary heap,
// since transfers now end at times that depend on each other. The rules for ops are those of
// the run without a network: a device runs its steps (an op or an overlapped pair) in schedule
// order, each starting when the device is free and its inputs have arrived.
#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>

#include "sim/device_events.h"
#include "sim/engine.h"
#include "sim/op_graph.h"

namespace bubblesim::sim {

namespace {

class NetworkRun {
 public:
  NetworkRun(const Schedule& schedule, const CostModel& costs, const Network& network,
             const std::vector<EngineObserver*>& observers)
      : s_(schedule),
        costs_(costs),
        net_(network),
        observers_(observers),
        slots_(schedule.num_stages(), schedule.num_microbatches),
        ready_ns_(slots_.size(), kNever),
        devices_(static_cast<std::size_t>(schedule.num_devices())),
        link_load_(network.links().size(), 0) {
    BUBBLESIM_CHECK(network.num_devices() >= schedule.num_devices(),
                    "the network has fewer devices than the schedule");
    for (int mb = 0; mb < s_.num_microbatches; ++mb)
      ready_ns_[slots_(Slot::Forward, s_.route(mb).first, mb)] = 0;
    timeline_.device_ops.resize(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d)
      timeline_.device_ops[d].reserve(s_.device_ops[d].size());
  }

  Timeline run() {
    for (std::size_t d = 0; d < devices_.size(); ++d)
      try_start(d, 0);
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      switch (e.kind) {
        case EventKind::StepEnd:
          finish_step(e.id, e.time_ns);
          break;
        case EventKind::DataDone:
          if (flows_[e.id].active && flows_[e.id].generation == e.generation) {
            advance(e.time_ns);
            end_data(e.id, e.time_ns);
            reshare(e.time_ns);
          }
          break;
        case EventKind::Arrive:
          arrive(e.id, e.time_ns);
          break;
      }
    }
    if (finished_ != s_.num_ops()) {
      OpGraph(s_, costs_).check_acyclic();
      BUBBLESIM_CHECK(false, "the engine stalled on a schedule whose graph has no cycle");
    }
    return std::move(timeline_);
  }

 private:
  enum class EventKind : std::uint8_t { StepEnd, DataDone, Arrive };
  struct Event {
    TimeNs time_ns;
    std::uint64_t seq;  // ties in time: in the order the events were made
    EventKind kind;
    std::size_t id;  // device (StepEnd) or flow
    std::uint64_t generation = 0;
    bool operator>(const Event& o) const {
      return time_ns != o.time_ns ? time_ns > o.time_ns : seq > o.seq;
    }
  };
  struct Device {
    std::size_t next = 0;  // index of the next op to start (or of the running step)
    std::size_t pair = 0;  // index into pairs_of(d): the first pair not started yet
    bool busy = false;
    int step_ops = 1;  // ops in the running step (2 for an overlapped pair)
  };
  // A transfer: data phase on its route's links, then the route's latency.
  struct Flow {
    Op producer;
    int src = 0, dst = 0;
    std::size_t slot = 0;  // the consumer's input
    TimeNs start_ns = 0;
    double bytes = 0;
    double remaining = 0;  // bytes not yet through
    double rate = 0;       // bytes per ns, current share
    std::uint64_t generation = 0;
    bool active = false;  // in its data phase
  };

  void push(TimeNs t, EventKind kind, std::size_t id, std::uint64_t generation = 0) {
    queue_.push(Event{t, seq_++, kind, id, generation});
  }

  bool is_pair(std::size_t d, const Device& dev) const {
    const auto& pairs = s_.pairs_of(static_cast<int>(d));
    return dev.pair < pairs.size() && pairs[dev.pair] == dev.next;
  }

  // Device d may be idle at `now`: start its next step if its inputs are there.
  void try_start(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    const auto& ops = s_.device_ops[d];
    if (dev.busy || dev.next >= ops.size()) return;
    const bool pair = is_pair(d, dev);
    const int n = pair ? 2 : 1;
    for (int k = 0; k < n; ++k)
      if (ready_ns_[slots_(ops[dev.next + static_cast<std::size_t>(k)])] > now) return;
    const int device = static_cast<int>(d);
    const TimeNs end =
        add_time(now, pair ? costs_.overlapped_ns(ops[dev.next], ops[dev.next + 1], device)
                           : costs_.duration_ns(ops[dev.next], device));
    for (int k = 0; k < n; ++k) {
      timeline_.device_ops[d].push_back(OpTiming{now, end});
      const OpEvent event{ops[dev.next + static_cast<std::size_t>(k)],
                          device,
                          dev.next + static_cast<std::size_t>(k),
                          now,
                          end,
                          pair};
      for (EngineObserver* o : observers_)
        o->on_op_start(event);
    }
    dev.busy = true;
    dev.step_ops = n;
    push(end, EventKind::StepEnd, d);
  }

  void finish_step(std::size_t d, TimeNs now) {
    Device& dev = devices_[d];
    const auto& ops = s_.device_ops[d];
    const bool pair = dev.step_ops == 2;
    for (int k = 0; k < dev.step_ops; ++k) {
      const std::size_t i = dev.next + static_cast<std::size_t>(k);
      const OpTiming& t = timeline_.device_ops[d][i];
      const OpEvent event{ops[i], static_cast<int>(d), i, t.start_ns, now, pair};
      for (EngineObserver* o : observers_)
        o->on_op_end(event);
    }
    const std::size_t first = dev.next;
    dev.next += static_cast<std::size_t>(dev.step_ops);
    if (pair) ++dev.pair;
    dev.busy = false;
    finished_ += static_cast<std::size_t>(dev.step_ops);
    bool started_flow = false;
    for (std::size_t i = first; i < dev.next; ++i)
      started_flow = publish(ops[i], static_cast<int>(d), now) || started_flow;
    if (started_flow) reshare(now);
    try_start(d, now);
  }

  // The outputs of `op` leave `device` at `now`; returns whether a transfer entered its data
  // phase (the shares then need recomputing).
  bool publish(const Op& op, int device, TimeNs now) {
    SlotRef out[2];
    const int n = data_outputs(op.kind, op.stage, s_.route(op.microbatch), out);
    bool started = false;
    for (int i = 0; i < n; ++i) {
      const std::size_t slot = slots_(out[i].slot, out[i].stage, op.microbatch);
      const int dst = s_.stage_device[static_cast<std::size_t>(out[i].stage)];
      if (dst == device) {
        ready_ns_[slot] = now;
        try_start(static_cast<std::size_t>(dst), now);
        continue;
      }
      const std::vector<int>& route = net_.route(device, dst);
      BUBBLESIM_CHECK(!route.empty(), "the network has no route from device " +
                                          std::to_string(device) + " to " + std::to_string(dst));
      Flow f;
      f.producer = op;
      f.src = device;
      f.dst = dst;
      f.slot = slot;
      f.start_ns = now;
      f.bytes = f.remaining = costs_.transfer_bytes(op, device, dst);
      flows_.push_back(f);
      const std::size_t id = flows_.size() - 1;
      const bool finite = std::isfinite(net_.route_bandwidth_bytes_per_s(device, dst));
      if (f.bytes > 0 && finite) {
        advance(now);  // the flows in flight are through up to now at their old shares
        flows_[id].active = true;
        active_.push_back(id);
        started = true;
      } else {
        end_data(id, now);
      }
    }
    return started;
  }

  // Every active flow's remaining bytes, at its current share, from the last update to `now`.
  void advance(TimeNs now) {
    const auto dt = static_cast<double>(now - updated_ns_);
    if (dt > 0) {
      for (const std::size_t id : active_) {
        Flow& f = flows_[id];
        f.remaining = std::max(0.0, f.remaining - f.rate * dt);
      }
    }
    updated_ns_ = now;
  }

  // Flow `id` is through its links at `now`: it arrives after its route's latency.
  void end_data(std::size_t id, TimeNs now) {
    Flow& f = flows_[id];
    if (f.active) {
      f.active = false;
      f.remaining = 0;
      active_.erase(std::find(active_.begin(), active_.end(), id));
    }
    push(now + net_.route_latency_ns(f.src, f.dst), EventKind::Arrive, id);
  }

  void arrive(std::size_t id, TimeNs now) {
    const Flow& f = flows_[id];
    ready_ns_[f.slot] = now;
    const TransferEvent event{f.producer, f.src, f.dst, f.start_ns, now, f.bytes};
    for (EngineObserver* o : observers_)
      o->on_transfer(event);
    try_start(static_cast<std::size_t>(f.dst), now);
  }

  // Max-min fair shares of the active flows (progressive filling): repeatedly the link with
  // the smallest equal share of its remaining bandwidth fixes the rate of its flows. Then each
  // flow's data end is scheduled anew (older events of the flow are stale).
  void reshare(TimeNs now) {
    const auto& links = net_.links();
    std::vector<double> capacity(links.size());
    for (std::size_t l = 0; l < links.size(); ++l)
      capacity[l] = links[l].bandwidth_bytes_per_s / 1e9;
    std::fill(link_load_.begin(), link_load_.end(), 0);
    std::vector<std::size_t> unfixed = active_;
    for (const std::size_t id : unfixed)
      for (const int l : net_.route(flows_[id].src, flows_[id].dst))
        ++link_load_[static_cast<std::size_t>(l)];
    while (!unfixed.empty()) {
      std::size_t bottleneck = 0;
      double share = std::numeric_limits<double>::infinity();
      for (std::size_t l = 0; l < links.size(); ++l) {
        if (link_load_[l] == 0 || std::isinf(capacity[l])) continue;
        const double s = capacity[l] / link_load_[l];
        if (s < share) share = s, bottleneck = l;
      }
      BUBBLESIM_CHECK(std::isfinite(share), "an active transfer crosses no finite link");
      // Rounding can leave a link a hair below zero once its flows are fixed; a share must
      // stay positive for the flow to end.
      share = std::max(share, 1e-12);
      std::vector<std::size_t> rest;
      for (const std::size_t id : unfixed) {
        const std::vector<int>& route = net_.route(flows_[id].src, flows_[id].dst);
        if (std::find(route.begin(), route.end(), static_cast<int>(bottleneck)) == route.end()) {
          rest.push_back(id);
          continue;
        }
        flows_[id].rate = share;
        for (const int l : route) {
          capacity[static_cast<std::size_t>(l)] -= share;
          --link_load_[static_cast<std::size_t>(l)];
        }
      }
      unfixed = std::move(rest);
    }
    for (const std::size_t id : active_) {
      Flow& f = flows_[id];
      ++f.generation;
      push(now + std::max<TimeNs>(data_time_ns(f.remaining, f.rate), 0), EventKind::DataDone, id,
           f.generation);
    }
  }

  const Schedule& s_;
  const CostModel& costs_;
  const Network& net_;
  const std::vector<EngineObserver*>& observers_;
  OpSlots slots_;
  std::vector<TimeNs> ready_ns_;  // per slot: when the op's input is there (kNever: not yet)
  std::vector<Device> devices_;
  std::vector<Flow> flows_;
  std::vector<std::size_t> active_;  // flows in their data phase
  std::vector<int> link_load_;       // scratch of reshare
  TimeNs updated_ns_ = 0;            // the active flows' `remaining` are as of this time
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::size_t finished_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline run_with_network(const Schedule& schedule, const CostModel& costs, const Network& network,
                          const std::vector<EngineObserver*>& observers) {
  return NetworkRun(schedule, costs, network, observers).run();
}

}  // namespace bubblesim::sim
