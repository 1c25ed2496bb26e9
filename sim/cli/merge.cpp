// `bubblesim merge A.h5 B.h5 ... --out ALL.h5` (docs/sweeps.md): joins the sweep tables of
// shards of one study (`sweep --shard K/N`) into one table, the same as one run's.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <map>
#include <optional>

#include "analysis/results_file.h"
#include "sim/cli/commands.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

int cmd_merge(const std::vector<std::string>& args, const std::string& command_line,
              std::ostream& out) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("files", po::value<std::vector<std::string>>(), "the results files to join (positional)")
    ("out", po::value<std::string>(),
     "the results file that receives the joined /sweep/table (its runs are kept; a sweep table "
     "it holds of the same study is joined too)");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out,
                     "usage: bubblesim merge A.h5 B.h5 ... --out ALL.h5\n\n"
                     "Joins the sweep tables of the shards of one study (bubblesim sweep "
                     "--shard K/N) into one table in configuration order: the table one run of "
                     "the whole study writes. Tables of different studies are refused.",
                     "files")) {
    return 0;
  }
  if (vm.count("files") == 0) throw InvalidArgument("give the results files to join (see --help)");
  if (vm.count("out") == 0 || vm["out"].as<std::string>().empty()) {
    throw InvalidArgument("option --out: give the HDF5 file that receives the joined table");
  }
  const std::string out_path = vm["out"].as<std::string>();
  std::vector<std::string> files = vm["files"].as<std::vector<std::string>>();
  // A table already in --out of the same study is joined as well (so shards can be added as
  // they finish); another study's is refused like any input's.
  std::error_code ec;
  const bool out_is_input = std::find(files.begin(), files.end(), out_path) != files.end();
  if (!out_is_input && std::filesystem::exists(out_path, ec) &&
      analysis::ResultsReader(out_path).has_sweep_table()) {
    files.push_back(out_path);
  }

  std::optional<analysis::SweepInfo> study;  // of the first file
  std::string first;
  std::map<std::int32_t, std::pair<analysis::SweepRow, std::string>> rows;  // index -> row, file
  for (const std::string& file : files) {
    const analysis::ResultsReader reader(file);
    if (!reader.has_sweep_table()) {
      throw InvalidArgument(file + ": has no sweep table (/sweep/table) to join");
    }
    const std::optional<analysis::SweepInfo> info = reader.sweep_info();
    if (!info) {
      throw InvalidArgument(file +
                            ": its sweep table does not name its study (written by an older "
                            "bubblesim); rerun its sweep to join it");
    }
    if (!study) {
      study = info;
      first = file;
    } else if (info->study_fingerprint != study->study_fingerprint ||
               info->study_configurations != study->study_configurations) {
      throw InvalidArgument(fmt::format(
          "{}: its sweep table is of another study than {}'s ({} configurations, fingerprint "
          "{}, against {} and {})",
          file, first, info->study_configurations, info->study_fingerprint,
          study->study_configurations, study->study_fingerprint));
    }
    for (analysis::SweepRow& row : reader.read_sweep_table()) {
      if (row.index < 0 || row.index >= study->study_configurations) {
        throw InvalidArgument(fmt::format("{}: row {} is outside the study's {} configurations",
                                          file, row.index, study->study_configurations));
      }
      const auto [it, added] = rows.try_emplace(row.index, row, file);
      if (!added && !(it->second.first == row)) {
        throw InvalidArgument(
            fmt::format("{} and {} hold different rows for configuration {} ('{}')",
                        it->second.second, file, row.index, row.key));
      }
    }
  }

  std::vector<analysis::SweepRow> table;
  table.reserve(rows.size());
  std::size_t failed = 0;
  for (auto& [index, entry] : rows) {
    failed += entry.first.status != "ok";
    table.push_back(std::move(entry.first));
  }
  const analysis::SweepInfo info{study->study_fingerprint, study->study_configurations, 0, 0};
  analysis::write_sweep_table(out_path, table, {BUBBLESIM_VERSION, command_line}, info);
  fmt::print(out,
             "{}: /sweep/table holds {} of {} configurations, joined from {} files ({} "
             "failed, see their 'error')\n",
             out_path, table.size(), study->study_configurations, files.size(), failed);
  const std::size_t missing = static_cast<std::size_t>(study->study_configurations) - table.size();
  if (missing > 0) {
    fmt::print(out, "{} configurations are missing: finish their shards and merge again\n",
               missing);
  }
  return 0;
}

}  // namespace bubblesim::cli
