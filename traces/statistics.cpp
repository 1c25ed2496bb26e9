#include "traces/statistics.h"

#include <algorithm>

#include "sim/error.h"

namespace bubblesim::traces {

double quantile_of_sorted(std::span<const double> sorted, double q) {
  BUBBLESIM_CHECK(!sorted.empty(), "quantile of no samples");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] * (1 - fraction) + sorted[above] * fraction;
}

sim::TimeNs median_ns(std::vector<sim::TimeNs> samples) {
  BUBBLESIM_CHECK(!samples.empty(), "median of no samples");
  const std::size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid),
                   samples.end());
  const sim::TimeNs upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  const sim::TimeNs lower =
      *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower + 1) / 2;  // the mean, a half rounded up
}

}  // namespace bubblesim::traces
