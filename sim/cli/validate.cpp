// `bubblesim validate [DIR]` (docs/validation.md): every row of the zero-bubble authors'
// reference sets run with bubblesim's schedulers, and how they compare, per family.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>

#include "analysis/validation.h"
#include "sim/cli/commands.h"
#include "sim/cli/progress.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

void write_summary(std::ostream& out, const std::vector<analysis::FamilySummary>& families) {
  fmt::print(out, "{:<8}  {:>5}  {:>14}  {:>14}  {:>10}  {:>11}  {:>8}  {:>10}  {:>16}\n", "family",
             "rows", "<= reference", "<= 1.001 ref", "mean ratio", "worst ratio", "bubble",
             "ref bubble", "ref failed/found");
  for (const analysis::FamilySummary& s : families) {
    fmt::print(out,
               "{:<8}  {:>5}  {:>7} ({:>3.0f}%)  {:>7} ({:>3.0f}%)  {:>10.4f}  {:>11.4f}  "
               "{:>8.4f}  {:>10.4f}  {:>16}\n",
               s.family, s.rows, s.at_or_below, 100.0 * s.at_or_below / std::max(1, s.rows),
               s.within_tenth_percent, 100.0 * s.within_tenth_percent / std::max(1, s.rows),
               s.mean_ratio, s.worst_ratio, s.mean_bubble_rate, s.mean_reference_bubble_rate,
               fmt::format("{}/{}", s.reference_failed, s.found_where_reference_failed));
  }
}

void write_rows(std::ostream& out, const std::vector<analysis::ValidationRow>& rows) {
  fmt::print(out, "{:<8}  {:>5}  {:>3}  {:>4}  {:>12}  {:>12}  {:>7}  {:>8}\n", "family", "line",
             "p", "m", "cost", "reference", "ratio", "peak");
  for (const analysis::ValidationRow& r : rows) {
    fmt::print(out, "{:<8}  {:>5}  {:>3}  {:>4}  {:>12.0f}  {:>12.0f}  {:>7.4f}  {:>8.6g}\n",
               r.family, r.line, r.pp, r.microbatches, r.cost, r.reference_cost, r.ratio(),
               r.peak_activation);
  }
  out << '\n';
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("dir", po::value<std::string>()->default_value(BUBBLESIM_REFERENCE_DIR),
     "folder with zb_auto_visible.csv, zbv_visible.csv and v_half_min_visible.csv")
    ("rows", "also list every row: bubblesim's cost, the reference's and their ratio")
    ("no-improve", "the generators' raw schedules, without the schedule improver")
    ("jobs,j", po::value<int>()->default_value(0, "all cores"),
     "rows run at once (the results do not depend on it)")
    ("progress", po::value<std::string>()->default_value("auto"),
     "on standard error: bar, lines, none, auto");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out,
                     "usage: bubblesim validate [DIR] [--rows] [--no-improve] [-j N]\n\n"
                     "Runs every row of the zero-bubble authors' reference sets (inputs and "
                     "the cost their own schedulers reached) with bubblesim's zb-auto, zb-v, "
                     "v-half and v-min, and prints per family how many rows bubblesim meets "
                     "or beats, the mean and worst cost ratio, and the mean bubble rates. "
                     "Cost is the largest device span.",
                     "dir")) {
    return 0;
  }
  const int jobs = read_jobs(vm);
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::unique_ptr<Progress> progress;
  const Progress::Mode mode = progress_mode(vm["progress"].as<std::string>(), err);
  const std::vector<analysis::ValidationRow> rows = analysis::run_reference_sets(
      vm["dir"].as<std::string>(), registry,
      [&](std::size_t done, std::size_t total) {
        if (!progress) {
          progress =
              std::make_unique<Progress>(err, mode, "bubblesim validate", "rows", total, 0, 1.0);
        }
        progress->update(done, done == total);
      },
      vm.count("no-improve") == 0, jobs);
  if (vm.count("rows") != 0) write_rows(out, rows);
  write_summary(out, analysis::summarize(rows));
  return 0;
}

}  // namespace bubblesim::cli
