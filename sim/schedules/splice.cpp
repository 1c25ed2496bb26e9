#include "sim/schedules/splice.h"

#include <algorithm>
#include <optional>

#include "sim/metrics.h"

namespace bubblesim::sim {

Schedule splice(const Schedule& first, const Timeline& first_timeline, const Schedule& second,
                TimeNs cut_ns) {
  Schedule out = first;
  const OpSlots slots(first.num_stages(), first.num_microbatches);
  std::vector<bool> taken(slots.size(), false);
  for (std::size_t d = 0; d < out.device_ops.size(); ++d) {
    const std::vector<Op>& head = first.device_ops[d];
    const std::vector<OpTiming>& ran = first_timeline.device_ops[d];
    std::vector<Op>& ops = out.device_ops[d];
    ops.clear();
    for (std::size_t i = 0; i < head.size(); ++i) {
      if (ran[i].start_ns >= cut_ns) continue;
      ops.push_back(head[i]);
      taken[slots(head[i])] = true;
    }
    for (const Op& op : second.device_ops[d]) {
      if (!taken[slots(op)]) ops.push_back(op);
    }
  }
  return out;
}

namespace {

bool within(const Schedule& schedule, const CostModel& costs, const std::vector<double>& limit) {
  if (limit.empty()) return true;
  const std::vector<double> peaks = activation_peaks(schedule, costs);
  return std::equal(peaks.begin(), peaks.end(), limit.begin(),
                    [](double peak, double l) { return peak <= l + 1e-9; });
}

}  // namespace

void splice_best(std::vector<SpanRanked>& ranked, const CostModel& costs,
                 const std::vector<double>& memory_limit, std::size_t budget_ops) {
  if (ranked.size() < 2) return;
  const std::size_t ops = ranked.front().first.num_ops();
  std::size_t spent = 0;
  for (int round = 0; round < kSpliceRounds; ++round) {
    std::optional<SpanRanked> best;
    const TimeNs to_beat = ranked.front().second;
    std::vector<std::optional<Timeline>> runs(ranked.size());
    auto run_of = [&](std::size_t i) -> const Timeline& {
      if (!runs[i]) {
        spent += ops;
        runs[i] = Engine(ranked[i].first, costs).run();
      }
      return *runs[i];
    };
    for (std::size_t other = 1; other < ranked.size(); ++other) {
      for (const auto& [head, tail] : {std::pair{std::size_t{0}, other}, {other, std::size_t{0}}}) {
        for (int cut = 1; cut <= kSpliceCuts; ++cut) {
          if (spent + ops > budget_ops) break;
          const TimeNs cut_ns = ranked[head].second * cut / (kSpliceCuts + 1);
          Schedule joined = splice(ranked[head].first, run_of(head), ranked[tail].first, cut_ns);
          if (!within(joined, costs, memory_limit)) continue;
          spent += ops;
          std::optional<Timeline> timeline = Engine(joined, costs).try_run_validated();
          if (!timeline) continue;
          const TimeNs span = timeline->max_span_ns();
          if (span < to_beat && (!best || span < best->second)) best = {std::move(joined), span};
        }
      }
    }
    if (!best) return;
    ranked.insert(ranked.begin(), std::move(*best));
  }
}

}  // namespace bubblesim::sim
