#include "traces/profile.h"

#include <algorithm>
#include <map>

namespace bubblesim::traces {

namespace {

double quantile_ms(const std::vector<sim::TimeNs>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return (static_cast<double>(sorted[below]) * (1 - fraction) +
          static_cast<double>(sorted[above]) * fraction) /
         1e6;
}

}  // namespace

DurationStats duration_stats(std::vector<sim::TimeNs> samples_ns) {
  DurationStats stats;
  stats.count = samples_ns.size();
  if (samples_ns.empty()) return stats;
  std::sort(samples_ns.begin(), samples_ns.end());
  sim::TimeNs total_ns = 0;
  for (const sim::TimeNs s : samples_ns)
    total_ns += s;
  stats.total_ms = sim::ns_to_ms(total_ns);
  stats.median_ms = quantile_ms(samples_ns, 0.5);
  stats.p10_ms = quantile_ms(samples_ns, 0.1);
  stats.p90_ms = quantile_ms(samples_ns, 0.9);
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

}  // namespace bubblesim::traces
