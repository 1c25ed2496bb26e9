// The one rule for quantiles and medians (traces/statistics.h).
#include "traces/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace bubblesim::traces {
namespace {

TEST(Statistics, MedianRoundsTheMiddlePairsMeanUp) {
  EXPECT_EQ(median_ns({5}), 5);
  EXPECT_EQ(median_ns({9, 1, 5}), 5);
  EXPECT_EQ(median_ns({4, 1, 8, 2}), 3);  // (2 + 4) / 2
  EXPECT_EQ(median_ns({1, 2}), 2);        // 1.5 rounded up
  EXPECT_EQ(median_ns({-3, -2}), -2);     // -2.5 rounded up
}

TEST(Statistics, QuantilesInterpolateLinearlyAsNumpy) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 1), 50);
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 0.5), 30);
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 0.1), 14);  // position 0.4
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 0.9), 46);  // position 3.6
  EXPECT_DOUBLE_EQ(quantile_of_sorted(std::vector<double>{7}, 0.99), 7);
}

// The median in ns and the 0.5 quantile agree up to the half rounded up.
TEST(Statistics, MedianIsTheMiddleQuantile) {
  const std::vector<sim::TimeNs> samples = {3, 8, 1, 6, 10, 4};
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(quantile_of_sorted(sorted, 0.5), 5);
  EXPECT_EQ(median_ns(samples), 5);
}

}  // namespace
}  // namespace bubblesim::traces
