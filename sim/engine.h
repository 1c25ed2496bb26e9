// The discrete-event engine.
//
// What is modelled: every device runs its ops in schedule order on one compute stream. An op
// starts when the device is free and its data input (DESIGN.md §3) has arrived; an input made
// on another device arrives CostModel::transfer_ns after its producer ends, and the transfer
// occupies neither compute stream. With a sim::Network (set_network), a transfer instead
// carries CostModel::transfer_bytes over the network's route between the two devices and
// shares its links with the other transfers in flight (network.h); that run is a separate,
// plain event loop, so runs without a network are exactly what they were. An overlapped pair
// (Schedule::overlapped_pairs) is one compute slot: it starts when the device is free and both
// inputs have arrived, lasts CostModel::overlapped_ns, and both ops end with it. Times are
// integer nanoseconds, so a run is exact and deterministic.
//
// How: with observers attached, events (an op's end; a device waking up when the input of its
// next op arrives) are handled in time order from a tournament tree over devices (ties go to
// the lower device), so every start, end and transfer is reported at its time. Without,
// nothing needs those moments: an op starts at max(its device is free, its input is there)
// in any order of evaluation, so each device runs ahead through its ops until an input is not
// published yet, and publishing it resumes the device (no event queue). The timeline is
// identical (the tests check it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/cost_model.h"
#include "sim/network.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

struct OpTiming {
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  friend bool operator==(const OpTiming&, const OpTiming&) = default;
};

// When each op ran: device_ops[d][i] is the timing of schedule.device_ops[d][i]. Both ops of an
// overlapped pair have the pair's start and end.
struct Timeline {
  std::vector<std::vector<OpTiming>> device_ops;

  // Device d's span: its first op's start to its last op's end (0 without ops).
  TimeNs span_ns(std::size_t d) const {
    const auto& ops = device_ops[d];
    return ops.empty() ? 0 : ops.back().end_ns - ops.front().start_ns;
  }
  // The largest device span: the zero-bubble paper's cost.
  TimeNs max_span_ns() const {
    TimeNs span = 0;
    for (std::size_t d = 0; d < device_ops.size(); ++d)
      span = std::max(span, span_ns(d));
    return span;
  }
};

struct OpEvent {
  Op op;
  int device = 0;
  std::size_t index = 0;  // position of the op in its device's order
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  bool overlapped = false;  // one of an overlapped pair: the two share start, end and device
};

struct TransferEvent {
  Op producer;
  int src_device = 0;
  int dst_device = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  double bytes = 0;  // CostModel::transfer_bytes; reported only with a network (else 0)
};

// Receives events as the simulation runs, in nondecreasing order of the time they happen
// (on_op_start at the op's start, on_op_end at its end, on_transfer at the transfer's start;
// with a network, whose transfers' ends are known only when they arrive, on_transfer comes at
// the transfer's end instead).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void on_op_start(const OpEvent& /*event*/) {}
  virtual void on_op_end(const OpEvent& /*event*/) {}
  virtual void on_transfer(const TransferEvent& /*event*/) {}
};

// Records every transfer of a run, in the order the engine reports them (for exports and
// results files).
class TransferLog final : public EngineObserver {
 public:
  void on_transfer(const TransferEvent& event) override { transfers_.push_back(event); }
  const std::vector<TransferEvent>& transfers() const { return transfers_; }

 private:
  std::vector<TransferEvent> transfers_;
};

// How a transfer between two devices uses their compute streams.
enum class P2pMode : std::uint8_t {
  // A transfer occupies neither compute stream: it delays only its receiver, whose op may
  // start CostModel::transfer_ns after the producer ends. The default.
  Async,
  // As Megatron runs its point-to-point sends and receives (blocking NCCL kernels on the
  // compute stream). The sender holds its stream for the transfer right after the producing
  // op (every output that leaves the device, one after the other); the receiver holds its
  // stream for the transfer from when both sides are ready, max(the device is free, the
  // producer ended), and then starts the op (an overlapped pair waits for the longer of its
  // two receives). A strict rendezvous, where the sender also waits for the receiver to be
  // free, deadlocks the handcrafted orders (1F1B sends a forward to a device that is itself
  // sending): Megatron avoids it by batching each send with the matching receive, which this
  // approximates by letting the send start when its op ends. Time on either side counts as
  // idle, not busy (it is not compute). Not with a network (checked at run).
  Blocking,
};

// Which data inputs the ops wait for.
enum class InputRule : std::uint8_t {
  // Every op waits for its input (DESIGN.md §3), as the hardware has to. The default.
  All,
  // As the zero-bubble paper's evaluator (its public repository) times interleaved 1F1B for
  // the paper's 1F1B-I column (../shared/reference/zero-bubble.md §8). On a looped placement,
  // the input that wraps around from the last device to device 0 (the forward into stage s,
  // and the backward out of stage s into s-1, where s is a nonzero multiple of the device
  // count p, s is on device 0 and s-1 on device p-1) is waited for only by the first
  // microbatch of each round of p (microbatch mod p = 0); the others start as if it had
  // arrived. The transfer itself still happens and is reported to observers. This is
  // optimistic, since real devices must wait. Schedules where no input wraps around (one
  // chunk per device, V and bidirectional placements) run exactly as under All.
  PaperEvaluator,
};

class Engine {
 public:
  // The schedule, cost model and observers are borrowed and must outlive the engine. The cost
  // model must cover every device of the schedule.
  Engine(const Schedule& schedule, const CostModel& costs) : schedule_(schedule), costs_(costs) {}

  void add_observer(EngineObserver& observer) { observers_.push_back(&observer); }

  // Times transfers over `network` (borrowed, must outlive the engine) instead of
  // CostModel::transfer_ns. Precondition (checked at run): it has a route for every pair of
  // devices that exchange data, and at least the schedule's devices.
  void set_network(const Network& network) { network_ = &network; }

  // Which inputs the ops wait for (InputRule::All unless set). Precondition (checked at run,
  // InvalidArgument): InputRule::All with a network.
  void set_input_rule(InputRule rule) { input_rule_ = rule; }

  // How transfers use the compute streams (P2pMode::Async unless set). Precondition (checked
  // at run, InvalidArgument): P2pMode::Async with a network.
  void set_p2p(P2pMode mode) { p2p_ = mode; }

  // Validates the schedule (Schedule::validate) and runs it to the end. A schedule that
  // deadlocks throws DeadlockError naming the ops on a dependency cycle.
  Timeline run();
  // As run(), for a schedule already validated whose ops a search has since only reordered
  // within their devices (pairs and routes unchanged): skips Schedule::validate. A reordering
  // that deadlocks still throws DeadlockError.
  Timeline run_validated();
  // As run_validated(), but a reordering that deadlocks gives nothing instead of throwing:
  // no dependency graph is built to name the cycle, which for a search that tries many
  // orders (the improver) cost more than the runs themselves.
  std::optional<Timeline> try_run_validated();

 private:
  const Schedule& schedule_;
  const CostModel& costs_;
  std::vector<EngineObserver*> observers_;
  const Network* network_ = nullptr;
  InputRule input_rule_ = InputRule::All;
  P2pMode p2p_ = P2pMode::Async;
};

// The run of Engine::run with a network (network_engine.cpp).
Timeline run_with_network(const Schedule& schedule, const CostModel& costs, const Network& network,
                          const std::vector<EngineObserver*>& observers);

}  // namespace bubblesim::sim
