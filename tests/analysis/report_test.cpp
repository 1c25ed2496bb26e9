// The report renderer's library functions on rows built here: the sweep plot of a large
// sweep and the Pareto front against a brute force. The command: tests/sim/cli/report_cli_test.cpp.
#include "analysis/report.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "analysis/report_render.h"
#include "analysis/results_file.h"

namespace bubblesim::analysis {
namespace {

// How many times `pattern` matches in `text`.
std::size_t count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(SweepPlotTest, LargeSweepsDrawTheFrontAndASampleOfTheRest) {
  // 50,000 ok rows: memory i % 100, bubble rate 1 / (1 + memory) + i / 1e9. The front is the
  // first row of each memory value (the lowest rate there): 100 rows. The other 49,900 are
  // drawn one in ceil(50000 / 20000) = 3: 16,634 of them.
  std::vector<SweepRow> rows(50000);
  for (int i = 0; i < 50000; ++i) {
    SweepRow& r = rows[static_cast<std::size_t>(i)];
    r.index = i;
    r.schedule = "zb-h1";
    r.pp = 4;
    r.microbatches = 8;
    r.iteration_time_ms = 100;
    r.peak_activation_memory = i % 100;
    r.bubble_rate = 1.0 / (1 + i % 100) + i / 1e9;
    r.status = "ok";
  }
  const std::string svg = sweep_svg(rows, SweepPlot::kBubbleVsMemory);
  EXPECT_EQ(count(svg, "<circle class=\"point pareto\""), 100u);
  EXPECT_EQ(count(svg, "<circle class=\"point\""), (49900u + 2) / 3);
  EXPECT_NE(svg.find("50000 rows: the front and every 3-th other row drawn"), std::string::npos);
}

TEST(ParetoFrontTest, MatchesBruteForceWithTies) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coordinate(0, 9);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<double, double>> points(40);
    for (auto& p : points)
      p = {coordinate(rng), coordinate(rng)};
    std::vector<std::size_t> brute;
    for (std::size_t i = 0; i < points.size(); ++i) {
      bool dominated = false;
      for (const auto& q : points) {
        dominated = dominated ||
                    (q.first <= points[i].first && q.second <= points[i].second && q != points[i]);
      }
      if (!dominated) brute.push_back(i);
    }
    EXPECT_EQ(pareto_front(points), brute);
  }
}

}  // namespace
}  // namespace bubblesim::analysis
