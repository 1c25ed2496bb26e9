// The bounded least-squares fitter on problems with closed-form answers, and the calibration
// file: a round trip, and malformed files named by file, line and key.
#include "analysis/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "analysis/least_squares.h"
#include "tests/temp_path.h"

namespace bubblesim::analysis {
namespace {

// y = 2 x + 1 sampled without noise: the fit finds a = 2, b = 1.
TEST(LeastSquares, FitsALineExactly) {
  const std::vector<double> xs = {0, 1, 2, 3, 4};
  const Residuals r = [&](const std::vector<double>& p) {
    std::vector<double> out;
    for (const double x : xs)
      out.push_back(p[0] * x + p[1] - (2 * x + 1));
    return out;
  };
  const LeastSquaresResult fit = fit_least_squares(r, {0, 0}, {-10, -10}, {10, 10});
  EXPECT_NEAR(fit.x[0], 2, 1e-6);
  EXPECT_NEAR(fit.x[1], 1, 1e-6);
  EXPECT_NEAR(fit.cost, 0, 1e-10);
}

// Minimising (a - 3)^2 + (a + b - 1)^2 with a <= 2 and b >= 0.5: the unbounded minimum
// (a = 3, b = -2) is outside. With b at its bound 0.5, (a - 3)^2 + (a - 0.5)^2 is smallest at
// a = 1.75 (inside a's bound), where d/db = 2 (a + b - 1) = 2.5 > 0 keeps b at the bound.
// Cost 1.25^2 + 1.25^2 = 3.125.
TEST(LeastSquares, StopsAtActiveBounds) {
  const Residuals r = [](const std::vector<double>& p) {
    return std::vector<double>{p[0] - 3, p[0] + p[1] - 1};
  };
  const LeastSquaresResult fit = fit_least_squares(r, {1, 1}, {-5, 0.5}, {2, 5});
  EXPECT_NEAR(fit.x[0], 1.75, 1e-6);
  EXPECT_DOUBLE_EQ(fit.x[1], 0.5);
  EXPECT_NEAR(fit.cost, 3.125, 1e-10);
}

// A relative error of a piecewise-linear model, like calibrate's: t(o) = max(10 + 4 o, 12 + 2 o)
// measured at o = 1.5 (t = 16): the fit finds o = 1.5.
TEST(LeastSquares, FitsAPiecewiseLinearModel) {
  const auto t = [](double o, double k) { return std::max(10 + k * o, 12 + 2 * o); };
  const Residuals r = [&](const std::vector<double>& p) {
    return std::vector<double>{t(p[0], 4) / t(1.5, 4) - 1, t(p[0], 6) / t(1.5, 6) - 1};
  };
  const LeastSquaresResult fit = fit_least_squares(r, {0.5}, {0}, {100});
  EXPECT_NEAR(fit.x[0], 1.5, 1e-6);
}

TEST(CalibrationFile, RoundTripsExactly) {
  Calibration c;
  c.overheads = {994816, 1764750, 2051310};
  c.p2p = sim::P2pMode::Blocking;
  c.efficiency = 0.4123456789;
  c.runs = "runs: with \"quotes\".yaml";
  c.num_runs = 12;
  c.mape = 0.0114;
  c.worst = 0.0296;
  c.loo_mape = 0.0128;
  const std::string path = bubblesim::testing::temp_path("calibration_round_trip.yaml");
  write_calibration(path, c);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.overheads, c.overheads);
  EXPECT_EQ(back.p2p, c.p2p);
  EXPECT_EQ(back.efficiency, c.efficiency);
  EXPECT_EQ(back.runs, c.runs);
  EXPECT_EQ(back.num_runs, 12);
  EXPECT_NEAR(back.mape, c.mape, 1e-6);
  std::remove(path.c_str());
}

TEST(CalibrationFile, MalformedFilesNameFileLineAndKey) {
  const std::string path = bubblesim::testing::temp_path("calibration_bad.yaml");
  const struct {
    std::string text, expected;
  } cases[] = {
      {"format: bubblesim-calibration\nop_overhead_ms: {F: 1, B: 1, W: 1}\nspeed: 2\n",
       ":3: key 'speed': unknown key"},
      {"format: bubblesim-calibration\nop_overhead_ms: {F: 1, B: -1, W: 1}\n",
       ":2: key 'op_overhead_ms.B': expected a number from 0 to"},
      {"format: bubblesim-calibration\nop_overhead_ms: {F: 1, B: 1, W: 1}\np2p: sometimes\n",
       ":3: key 'p2p': expected async or blocking"},
      {"format: bubblesim-calibration\np2p: async\n", ":1: key 'op_overhead_ms': missing"},
      {"op_overhead_ms: {F: 1, B: 1, W: 1}\n",
       ":1: key 'format': expected 'bubblesim-calibration'"},
  };
  for (const auto& c : cases) {
    std::ofstream(path) << c.text;
    try {
      load_calibration(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const CalibrationError& e) {
      EXPECT_NE(std::string(e.what()).find(path + c.expected), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace bubblesim::analysis
