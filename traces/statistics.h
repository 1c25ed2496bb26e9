// The statistics of samples, one rule for all of bubblesim: a quantile interpolates linearly
// between the sorted values (numpy's default, "linear"); a median in whole nanoseconds is the
// 0.5 quantile with a half rounded up. Profiles, replays, Monte Carlo runs and reports all use
// these.
#pragma once

#include <span>
#include <vector>

#include "sim/op.h"

namespace bubblesim::traces {

// The `q` quantile (0 <= q <= 1) of `sorted`, ascending. Precondition: not empty.
double quantile_of_sorted(std::span<const double> sorted, double q);

// The median of `samples` (the mean of the middle two for an even count, a half rounded up),
// in ns. Precondition: not empty.
sim::TimeNs median_ns(std::vector<sim::TimeNs> samples);

}  // namespace bubblesim::traces
