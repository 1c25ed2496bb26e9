// The reference sets of the zero-bubble authors' own schedulers (../shared/data/reference/),
// run row by row: every schedule valid and within its memory limit, V-Half and V-Min at
// exactly the peak they exist for, and the costs against the authors'.
#include "analysis/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "sim/cli/commands.h"
#include "sim/schedules/builtin.h"
#include "tests/temp_path.h"

namespace bubblesim::analysis {
namespace {

using bubblesim::testing::temp_path;

const std::filesystem::path kReference = std::filesystem::path(BUBBLESIM_SHARED_DATA) / "reference";

// A copy of the reference sets with every `stride`-th row of each file.
std::filesystem::path sample_of_reference(int stride) {
  const std::filesystem::path dir = temp_path("reference_sample");
  std::filesystem::create_directories(dir);
  for (const char* name : {"zb_auto_visible.csv", "zbv_visible.csv", "v_half_min_visible.csv"}) {
    std::ifstream in(kReference / name);
    std::ofstream out(dir / name);
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (i == 0 || (i - 1) % stride == 0) out << line << '\n';
    }
  }
  return dir;
}

// One test for all of it: each ctest process would run the 272 rows again. The sanitizer
// build, where it takes minutes, runs one row in 24 and checks the rows, not the summary.
TEST(ReferenceSets, EveryRowValidWithinItsLimitAndCloseToTheAuthors) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
#ifdef BUBBLESIM_SANITIZED
  const std::vector<ValidationRow> rows = run_reference_sets(sample_of_reference(24), registry);
  ASSERT_EQ(rows.size(), 5u + 4u + 3u);
  constexpr bool kSample = true;
#else
  const std::vector<ValidationRow> rows = run_reference_sets(kReference, registry);
  constexpr bool kSample = false;
#endif

  // 120 zb-auto rows, 80 zb-v, 36 each of V-Half and V-Min (../shared/data/reference/README.md).
  if (!kSample) {
    ASSERT_EQ(rows.size(), 120u + 80u + 72u);
  }
  for (const ValidationRow& row : rows) {
    SCOPED_TRACE(row.family + " line " + std::to_string(row.line));
    EXPECT_TRUE(std::isfinite(row.cost) && row.cost > 0);
    EXPECT_LE(row.peak_activation, row.memory_limit * (1 + 1e-12));
    // V-Half and V-Min hold at most the memory they exist for, whatever the costs: in chunk
    // units (M_B = 2 per whole stage) p + 2 and 2 floor((p+4)/3). (A building block may need
    // less: the memory is a bound, not a quota.)
    if (row.family == "v-half") {
      EXPECT_LE(row.peak_activation, row.pp + 2);
    } else if (row.family == "v-min") {
      EXPECT_LE(row.peak_activation, 2 * ((row.pp + 4) / 3));
    }
  }

  if (kSample) return;
  const std::vector<FamilySummary> families = summarize(rows);
  ASSERT_EQ(families.size(), 4u);
  // Where the authors' heuristic failed (4 zb-auto rows), bubblesim schedules every one.
  EXPECT_EQ(families.front().family, "zb-auto");
  EXPECT_EQ(families.front().reference_failed, 4);
  EXPECT_EQ(families.front().found_where_reference_failed, 4);

  // Every family meets the bar: at or below the authors' cost on at least 95% of its
  // rows and within 0.1% of it on every one.
  for (const char* family : {"zb-auto", "zb-v", "v-half", "v-min"}) {
    SCOPED_TRACE(family);
    const auto it = std::find_if(families.begin(), families.end(),
                                 [&](const FamilySummary& s) { return s.family == family; });
    ASSERT_NE(it, families.end());
    EXPECT_GE(it->at_or_below, 0.95 * it->rows);
    EXPECT_LE(it->worst_ratio, 1.001);
  }

  // A guard against regressions: the bounds sit just above what this version reaches (zb-auto
  // mean 0.9911, worst 1.0010, 115 rows at or below; zb-v 0.9892 / 1.0010 / 78; V-Half 0.9948 /
  // 1.0000 / 36; V-Min 0.9836 / 1.0000 / 36) and below what earlier ones did (where the issue
  // started: zb-auto 0.998 / 1.035, zb-v 1.067 / 1.113, V-Half 1.043 / 1.167, V-Min 1.120 /
  // 1.288; the steps between are in docs/validation.md and in git's history of this file).
  struct Bound {
    const char* family;
    double mean, worst;
    int at_or_below;
  };
  const Bound bounds[] = {{"zb-auto", 0.9917, 1.001, 115},
                          {"zb-v", 0.9898, 1.001, 78},
                          {"v-half", 0.9955, 1.001, 36},
                          {"v-min", 0.9845, 1.001, 36}};
  for (const Bound& bound : bounds) {
    SCOPED_TRACE(bound.family);
    const auto it = std::find_if(families.begin(), families.end(),
                                 [&](const FamilySummary& s) { return s.family == bound.family; });
    ASSERT_NE(it, families.end());
    EXPECT_LE(it->mean_ratio, bound.mean);
    EXPECT_LE(it->worst_ratio, bound.worst);
    EXPECT_GE(it->at_or_below, bound.at_or_below);
  }
}

// Rows run at once come back in file order and the same as one at a time (the searches'
// budgets count simulated ops, not time), with one progress call a row, counting up.
TEST(ReferenceSets, RowsDoNotDependOnHowManyRunAtOnce) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  const std::filesystem::path sample = sample_of_reference(24);
  const std::vector<ValidationRow> serial = run_reference_sets(sample, registry, {}, true, 1);
  std::vector<std::size_t> calls;
  const std::vector<ValidationRow> parallel = run_reference_sets(
      sample, registry,
      [&](std::size_t done, std::size_t total) {
        calls.push_back(done);
        EXPECT_EQ(total, serial.size());
      },
      true, 3);
  ASSERT_EQ(serial.size(), 5u + 4u + 3u);
  ASSERT_EQ(parallel.size(), serial.size());
  for (std::size_t k = 0; k < serial.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(parallel[k].family, serial[k].family);
    EXPECT_EQ(parallel[k].line, serial[k].line);
    EXPECT_EQ(parallel[k].cost, serial[k].cost);
    EXPECT_EQ(parallel[k].peak_activation, serial[k].peak_activation);
  }
  EXPECT_LT(serial[0].line, serial[1].line);  // file order
  ASSERT_EQ(calls.size(), serial.size());
  for (std::size_t k = 0; k < calls.size(); ++k)
    EXPECT_EQ(calls[k], k + 1);
  std::filesystem::remove_all(sample);
}

TEST(ReferenceSetFiles, ErrorsNameTheFileAndLine) {
  const std::filesystem::path dir = temp_path("validation_bad");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kReference / "zbv_visible.csv", dir / "zbv_visible.csv",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(kReference / "v_half_min_visible.csv", dir / "v_half_min_visible.csv",
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::ofstream out(dir / "zb_auto_visible.csv");
    out << "kind,p,m,mem_limit_factor,f,b,w,comm,m_b,m_w,ref_cost,ref_seconds\n"
        << "zb-auto,2,4,1.0,1 1,1 1,1 1,0,1,1,10,0\n"
        << "zb-auto,2,4,1.0,1 x,1 1,1 1,0,1,1,10,0\n";
  }
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  try {
    run_reference_sets(dir, registry);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "zb_auto_visible.csv").string() + ":3: column 'f': 'x' is not a number >= 0");
  }
  std::filesystem::remove_all(dir);
  EXPECT_THROW(run_reference_sets(dir, registry), Error);  // missing files name the file
}

}  // namespace
}  // namespace bubblesim::analysis
