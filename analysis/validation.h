// Validation against the zero-bubble authors' own schedulers: the reference sets of
// ../shared/data/reference/ (zb_auto_visible.csv, zbv_visible.csv, v_half_min_visible.csv),
// each row an input and the cost (largest device span) that the authors' code reached on it.
// Every row is generated and simulated with bubblesim's own scheduler and compared.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "sim/schedule_registry.h"

namespace bubblesim::analysis {

// One row of a reference set, after bubblesim ran it. Times in the files' integer units.
struct ValidationRow {
  std::string family;  // the schedule bubblesim ran: zb-auto, zb-v, v-half, v-min
  int line = 0;        // line in its file (the header is line 1)
  int pp = 0;
  int microbatches = 0;
  double cost = 0;                   // bubblesim's largest device span
  double reference_cost = 0;         // the authors'; NaN where their scheduler failed
  double bubble_rate = 0;            // 1 - work per device / cost (work: the costliest device's)
  double reference_bubble_rate = 0;  // the same for reference_cost (NaN where it failed)
  double peak_activation = 0;        // bubblesim's largest device peak, in the file's memory unit
                                     // (chunk units for V-Half and V-Min)
  double memory_limit = 0;  // the limit the row sets, same unit: zb-auto its factor x p M_B,
                            // zb-v p M_B, V-Half (p+2)/2 M_B, V-Min floor((p+4)/3) M_B
  bool reference_failed() const { return reference_cost != reference_cost; }
  double ratio() const { return cost / reference_cost; }
};

// Per family: how bubblesim compares on its rows.
struct FamilySummary {
  std::string family;
  int rows = 0;                  // rows with a reference cost
  int at_or_below = 0;           // of those, bubblesim's cost <= the reference's
  int within_tenth_percent = 0;  // of those, cost <= 1.001 x the reference's
  double mean_ratio = 0;         // mean of cost / reference cost
  double worst_ratio = 0;
  double mean_bubble_rate = 0;            // bubblesim's, over the rows with a reference
  double mean_reference_bubble_rate = 0;  // the authors'
  int reference_failed = 0;               // rows where the authors' scheduler failed
  int found_where_reference_failed = 0;   // of those, rows bubblesim scheduled
};

// Runs every row of the three files in `dir` with the generators of `registry`, with the
// schedule improver or without (`improve`, ScheduleParams::improve), `jobs` rows at once
// (0: all cores). The rows come back in file order and do not depend on `jobs` (the
// generators' budgets count simulated ops, not time). `progress` (may be empty) is called
// after each row with (done, total), one call at a time. Throws InputError naming the file
// and line for a malformed file or a missing one, before any row runs.
std::vector<ValidationRow> run_reference_sets(
    const std::filesystem::path& dir, const sim::ScheduleRegistry& registry,
    const std::function<void(std::size_t, std::size_t)>& progress = {}, bool improve = true,
    int jobs = 0);

// One summary per family, in the order the families first appear in `rows`.
std::vector<FamilySummary> summarize(const std::vector<ValidationRow>& rows);

}  // namespace bubblesim::analysis
