#include "traces/profile.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "traces/statistics.h"

namespace bubblesim::traces {

DurationStats duration_stats(std::vector<sim::TimeNs> samples_ns) {
  DurationStats stats;
  stats.count = samples_ns.size();
  if (samples_ns.empty()) return stats;
  std::sort(samples_ns.begin(), samples_ns.end());
  sim::TimeNs total_ns = 0;
  for (const sim::TimeNs s : samples_ns)
    total_ns += s;
  stats.total_ms = sim::ns_to_ms(total_ns);
  const std::vector<double> sorted(samples_ns.begin(), samples_ns.end());
  stats.median_ms = quantile_of_sorted(sorted, 0.5) / 1e6;
  stats.p10_ms = quantile_of_sorted(sorted, 0.1) / 1e6;
  stats.p90_ms = quantile_of_sorted(sorted, 0.9) / 1e6;
  return stats;
}

std::vector<PassStats> pass_stats(const Profile& profile) {
  struct Samples {
    std::vector<sim::TimeNs> kernel_ns, span_ns;
  };
  std::map<std::pair<std::int32_t, sim::OpKind>, Samples> groups;
  for (const PassSample& p : profile.passes) {
    Samples& s = groups[{p.label.stage, p.label.pass}];
    s.kernel_ns.push_back(p.kernel_ns);
    s.span_ns.push_back(p.span_ns());
  }
  std::vector<PassStats> stats;
  for (auto& [key, samples] : groups) {
    stats.push_back(PassStats{key.first, key.second, duration_stats(std::move(samples.kernel_ns)),
                              duration_stats(std::move(samples.span_ns))});
  }
  return stats;
}

std::vector<CommStats> comm_stats(const Profile& profile) {
  std::vector<std::vector<sim::TimeNs>> durations(kNumCollectives);
  std::vector<CommStats> stats(kNumCollectives);
  for (const CommSample& c : profile.comms) {
    const auto i = static_cast<std::size_t>(c.collective);
    durations[i].push_back(c.duration_ns);
    if (c.in_bytes >= 0) {
      stats[i].in_bytes += c.in_bytes;
      ++stats[i].sized;
    }
  }
  std::vector<CommStats> present;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    if (durations[i].empty()) continue;
    stats[i].collective = static_cast<Collective>(i);
    stats[i].duration = duration_stats(std::move(durations[i]));
    present.push_back(stats[i]);
  }
  return present;
}

namespace {

// Per stage: the gaps (as stage_overheads defines them) and the in-pass idle times, in ns.
std::map<std::int32_t, std::pair<std::vector<sim::TimeNs>, std::vector<sim::TimeNs>>> idle_times(
    const Profile& profile) {
  std::map<std::int32_t, std::pair<std::vector<sim::TimeNs>, std::vector<sim::TimeNs>>> out;
  // NCCL kernels per trace, by start, to find those inside a gap.
  std::map<std::int32_t, std::vector<std::pair<sim::TimeNs, sim::TimeNs>>> comms;
  for (const CommSample& c : profile.comms)
    comms[c.trace].emplace_back(c.start_ns, c.start_ns + c.duration_ns);
  for (auto& [trace, list] : comms)
    std::sort(list.begin(), list.end());
  const auto comm_between = [&](std::int32_t trace, sim::TimeNs from, sim::TimeNs to) {
    const auto it = comms.find(trace);
    if (it == comms.end()) return false;
    // Kernels are sorted by start; any that starts before `to` and ends after `from`.
    for (const auto& [start, end] : it->second) {
      if (start >= to) break;
      if (end > from) return true;
    }
    return false;
  };
  // The ends of every pass by (trace, stage, slot, microbatch), sorted: a labelled pass may
  // repeat (several iterations in one trace), and the one that fed a pass is the last to end
  // before it started. Slots: 0 forward, 1 backward (B or BW), 2 weight.
  using Key = std::tuple<std::int32_t, std::int32_t, int, std::int32_t>;
  const auto slot = [](sim::OpKind kind) {
    return kind == sim::OpKind::F ? 0 : kind == sim::OpKind::W ? 2 : 1;
  };
  std::map<Key, std::vector<sim::TimeNs>> ends;
  std::int32_t last_stage = 0;
  for (const PassSample& p : profile.passes) {
    ends[{p.trace, p.label.stage, slot(p.label.pass), p.label.microbatch}].push_back(p.gpu_end_ns);
    last_stage = std::max(last_stage, p.label.stage);
  }
  for (auto& [key, list] : ends)
    std::sort(list.begin(), list.end());
  // Whether the input of `p` (DESIGN.md §3: F from the F before it, a backward from the
  // backward after it or, on the last stage, from its F; W from its B) was there by `from`.
  // Unknown (its producer is not in the same trace, or the labels carry no stage or
  // microbatch): the NCCL rule alone decides.
  const auto input_there = [&](const PassSample& p, sim::TimeNs from) {
    const RangeLabel& l = p.label;
    if (l.stage == kNoNumber || l.microbatch == kNoNumber) return true;
    Key producer;
    if (l.pass == sim::OpKind::F) {
      if (l.stage == 0) return true;  // no input
      producer = {p.trace, l.stage - 1, 0, l.microbatch};
    } else if (l.pass == sim::OpKind::W) {
      producer = {p.trace, l.stage, 1, l.microbatch};
    } else if (l.stage == last_stage) {
      producer = {p.trace, l.stage, 0, l.microbatch};
    } else {
      producer = {p.trace, l.stage + 1, 1, l.microbatch};
    }
    const auto it = ends.find(producer);
    if (it == ends.end()) return true;
    const auto after = std::upper_bound(it->second.begin(), it->second.end(), p.gpu_start_ns);
    if (after == it->second.begin()) return true;
    return *std::prev(after) <= from;
  };
  std::map<std::tuple<std::int32_t, std::int64_t, std::int32_t>, std::vector<const PassSample*>>
      streams;
  for (const PassSample& p : profile.passes) {
    streams[{p.trace, p.process, p.label.stage}].push_back(&p);
    out[p.label.stage].second.push_back(p.span_ns() - p.kernel_ns);
  }
  for (auto& [key, passes] : streams) {
    std::sort(passes.begin(), passes.end(), [](const PassSample* a, const PassSample* b) {
      return a->gpu_start_ns < b->gpu_start_ns;
    });
    for (std::size_t i = 1; i < passes.size(); ++i) {
      const sim::TimeNs from = passes[i - 1]->gpu_end_ns, to = passes[i]->gpu_start_ns;
      if (to < from || comm_between(std::get<0>(key), from, to) || !input_there(*passes[i], from)) {
        continue;
      }
      out[std::get<2>(key)].first.push_back(to - from);
    }
  }
  return out;
}

}  // namespace

std::vector<StageOverheads> stage_overheads(const Profile& profile) {
  std::vector<StageOverheads> stats;
  for (auto& [stage, times] : idle_times(profile)) {
    stats.push_back(StageOverheads{stage, duration_stats(std::move(times.first)),
                                   duration_stats(std::move(times.second))});
  }
  return stats;
}

sim::TimeNs median_gap_ns(const Profile& profile) {
  std::vector<sim::TimeNs> all;
  for (auto& [stage, times] : idle_times(profile))
    all.insert(all.end(), times.first.begin(), times.first.end());
  if (all.empty()) return -1;
  return median_ns(std::move(all));
}

}  // namespace bubblesim::traces
