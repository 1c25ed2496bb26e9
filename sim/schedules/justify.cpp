#include "sim/schedules/justify.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "sim/engine.h"

namespace bubblesim::sim {

namespace {

constexpr int kNone = -1;

// One op of the schedule, with what the passes need of it.
struct Node {
  Op op;
  int device = 0;
  TimeNs duration_ns = 0;
  double delta = 0;
  int input = kNone;  // the op whose output it needs
  TimeNs input_lag_ns = 0;
  int outputs[2] = {kNone, kNone};
  TimeNs output_lag_ns[2] = {0, 0};
};

// An op placed on its device, in time.
struct Interval {
  TimeNs start_ns;
  TimeNs end_ns;
  int node;
};

class Justifier {
 public:
  Justifier(const Schedule& schedule, const CostModel& costs, const std::vector<double>& limit)
      : schedule_(schedule), limit_(limit) {
    const OpSlots slots(schedule.num_stages(), schedule.num_microbatches);
    std::vector<int> id(slots.size(), kNone);
    for (int d = 0; d < schedule.num_devices(); ++d) {
      for (const Op& op : schedule.device_ops[static_cast<std::size_t>(d)]) {
        id[slots(op)] = static_cast<int>(nodes_.size());
        nodes_.push_back(Node{op, d, costs.duration_ns(op, d), costs.activation_delta(op, d)});
      }
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      Node& node = nodes_[i];
      SlotRef input{};
      if (!data_input(node.op.kind, node.op.stage, schedule.route(node.op.microbatch), input)) {
        continue;
      }
      const int from = id[slots(input.slot, input.stage, node.op.microbatch)];
      Node& producer = nodes_[static_cast<std::size_t>(from)];
      const TimeNs lag =
          producer.device == node.device ? 0 : costs.transfer_ns(producer.device, node.device);
      node.input = from;
      node.input_lag_ns = lag;
      const int k = producer.outputs[0] == kNone ? 0 : 1;
      producer.outputs[k] = static_cast<int>(i);
      producer.output_lag_ns[k] = lag;
    }
  }

  std::optional<Schedule> run(const Timeline& timeline) {
    std::vector<TimeNs> end(nodes_.size());
    std::vector<TimeNs> start(nodes_.size());
    std::size_t i = 0;
    for (std::size_t d = 0; d < timeline.device_ops.size(); ++d) {
      for (const OpTiming& t : timeline.device_ops[d]) {
        start[i] = t.start_ns;
        end[i++] = t.end_ns;
      }
    }
    const std::vector<TimeNs> late_start = backward(start, end);
    return forward(late_start);
  }

 private:
  // Latest starts: ops by latest end first (once their consumers are placed), each ending as
  // late as its consumers and its device's free intervals allow.
  std::vector<TimeNs> backward(const std::vector<TimeNs>& start, const std::vector<TimeNs>& end) {
    const TimeNs horizon = *std::max_element(end.begin(), end.end());
    auto later = [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
      if (end[ua] != end[ub]) return end[ua] < end[ub];
      if (start[ua] != start[ub]) return start[ua] < start[ub];
      return a < b;
    };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    std::vector<int> waiting(nodes_.size(), 0);  // consumers not placed yet
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      for (const int out : nodes_[n].outputs)
        waiting[n] += out != kNone ? 1 : 0;
      if (waiting[n] == 0) ready.push(static_cast<int>(n));
    }
    std::vector<std::vector<Interval>> device(static_cast<std::size_t>(schedule_.num_devices()));
    std::vector<TimeNs> late(nodes_.size(), 0);
    while (!ready.empty()) {
      const int n = ready.top();
      ready.pop();
      const Node& node = nodes_[static_cast<std::size_t>(n)];
      TimeNs latest_end = horizon;
      for (int k = 0; k < 2; ++k) {
        if (node.outputs[k] == kNone) continue;
        latest_end = std::min(
            latest_end, late[static_cast<std::size_t>(node.outputs[k])] - node.output_lag_ns[k]);
      }
      auto& placed = device[static_cast<std::size_t>(node.device)];
      // The last interval starting before latest_end, then leftwards until the op fits.
      auto it = std::lower_bound(placed.begin(), placed.end(), latest_end,
                                 [](const Interval& a, TimeNs t) { return a.start_ns < t; });
      TimeNs e = latest_end;
      auto at = it;
      while (at != placed.begin()) {
        const Interval& before = *(at - 1);
        if (before.end_ns <= e - node.duration_ns) break;
        e = std::min(e, before.start_ns);
        --at;
      }
      late[static_cast<std::size_t>(n)] = e - node.duration_ns;
      placed.insert(at, Interval{e - node.duration_ns, e, n});
      if (node.input != kNone && --waiting[static_cast<std::size_t>(node.input)] == 0) {
        ready.push(node.input);
      }
    }
    return late;
  }

  // Earliest starts, ops by latest start first (once their input is placed), each in the
  // earliest free interval of its device after its input that keeps the memory limit.
  std::optional<Schedule> forward(const std::vector<TimeNs>& late) {
    auto after = [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
      if (late[ua] != late[ub]) return late[ua] > late[ub];
      return a > b;
    };
    std::priority_queue<int, std::vector<int>, decltype(after)> ready(after);
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].input == kNone) ready.push(static_cast<int>(n));
    }
    const auto devices = static_cast<std::size_t>(schedule_.num_devices());
    std::vector<std::vector<Interval>> device(devices);
    std::vector<std::vector<int>> blocked(devices);  // F's waiting for memory
    std::vector<TimeNs> early_end(nodes_.size(), 0);
    std::vector<double> held, peak_after;  // per position of one device, reused
    std::size_t placed_count = 0;
    while (!ready.empty()) {
      const int n = ready.top();
      ready.pop();
      const Node& node = nodes_[static_cast<std::size_t>(n)];
      const auto d = static_cast<std::size_t>(node.device);
      auto& placed = device[d];
      const TimeNs ready_ns =
          node.input == kNone ? 0
                              : early_end[static_cast<std::size_t>(node.input)] + node.input_lag_ns;
      const bool check_memory = node.delta > 0 && !limit_.empty();
      if (check_memory) {
        // held[j]: memory after the j-th op; peak_after[j]: the largest of held[j..].
        held.resize(placed.size());
        peak_after.assign(placed.size() + 1, -std::numeric_limits<double>::infinity());
        double h = 0;
        for (std::size_t j = 0; j < placed.size(); ++j) {
          h += nodes_[static_cast<std::size_t>(placed[j].node)].delta;
          held[j] = h;
        }
        for (std::size_t j = placed.size(); j-- > 0;)
          peak_after[j] = std::max(peak_after[j + 1], held[j]);
      }
      const double room = check_memory ? limit_[d] + 1e-9 - node.delta : 0;
      auto fits_memory = [&](std::size_t j) {
        if (!check_memory) return true;
        const double before = j == 0 ? 0 : held[j - 1];
        return std::max(before, peak_after[j]) <= room;
      };
      std::size_t j = static_cast<std::size_t>(
          std::partition_point(placed.begin(), placed.end(),
                               [&](const Interval& a) { return a.end_ns <= ready_ns; }) -
          placed.begin());
      std::optional<std::size_t> slot;
      TimeNs t = 0;
      for (; j <= placed.size(); ++j) {
        t = j == 0 ? ready_ns : std::max(ready_ns, placed[j - 1].end_ns);
        const bool free_time = j == placed.size() || t + node.duration_ns <= placed[j].start_ns;
        if (free_time && fits_memory(j)) {
          slot = j;
          break;
        }
      }
      if (!slot) {
        blocked[d].push_back(n);
        continue;
      }
      placed.insert(placed.begin() + static_cast<std::ptrdiff_t>(*slot),
                    Interval{t, t + node.duration_ns, n});
      early_end[static_cast<std::size_t>(n)] = t + node.duration_ns;
      ++placed_count;
      if (node.delta < 0) {
        for (const int b : blocked[d])
          ready.push(b);
        blocked[d].clear();
      }
      for (const int out : node.outputs) {
        if (out != kNone) ready.push(out);
      }
    }
    if (placed_count != nodes_.size()) return std::nullopt;
    Schedule out = schedule_;
    for (std::size_t d = 0; d < devices; ++d) {
      auto& ops = out.device_ops[d];
      for (std::size_t j = 0; j < ops.size(); ++j)
        ops[j] = nodes_[static_cast<std::size_t>(device[d][j].node)].op;
    }
    return out;
  }

  const Schedule& schedule_;
  const std::vector<double>& limit_;
  std::vector<Node> nodes_;
};

}  // namespace

std::optional<Schedule> justify(const Schedule& schedule, const Timeline& timeline,
                                const CostModel& costs, const std::vector<double>& memory_limit) {
  return Justifier(schedule, costs, memory_limit).run(timeline);
}

}  // namespace bubblesim::sim
