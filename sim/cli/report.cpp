// `bubblesim report FILE.h5 [--json] [--html FILE] [--svg DIR] [--transfers]`
// (docs/reports.md): the runs and sweep table of a results file as tables, and as pictures.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <optional>

#include "analysis/report.h"
#include "analysis/report_render.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

int cmd_report(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("file", po::value<std::string>(), "the HDF5 results file (positional)")
    ("json", po::bool_switch(), "print the tables as one JSON object instead")
    ("html", po::value<std::string>(),
     "also write one self-contained HTML page (inline SVG and CSS): the tables, each run's "
     "timeline and memory curve, the sweep's Pareto plots")
    ("svg", po::value<std::string>(),
     "also write the pictures as standalone SVG files into this folder (created if missing)")
    ("transfers", po::bool_switch(), "draw the transfers between devices on the timelines")
    ("max-boxes", po::value<std::string>()->default_value(std::to_string(analysis::kDefaultMaxBoxes)),
     "a run with more ops than this is drawn aggregated (1 px columns coloured by the kind "
     "busy longest); its memory curves likewise beyond this many changes per device");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out,
                     "usage: bubblesim report FILE.h5 [--json] [--html FILE.html] [--svg DIR] "
                     "[--transfers] [--max-boxes N]\n\n"
                     "Prints the runs of a results file side by side (schedule, p, m, v, "
                     "iteration time, bubble rate, peak memory, throughput) and the summary of "
                     "its sweep table; draws them with --html and --svg.",
                     "file")) {
    return 0;
  }
  if (vm.count("file") == 0) throw InvalidArgument("give a results file (see --help)");
  analysis::RenderOptions options;
  options.transfers = vm["transfers"].as<bool>();
  options.max_boxes = static_cast<std::size_t>(
      parse_whole_number("--max-boxes", vm["max-boxes"].as<std::string>(), 1, 1'000'000'000));
  for (const char* name : {"html", "svg"}) {
    if (vm.count(name) != 0 && vm[name].as<std::string>().empty()) {
      throw InvalidArgument(std::string("option --") + name + ": expected a file name");
    }
  }
  std::optional<sim::OutputFile> html;  // committed once everything else succeeded
  if (vm.count("html") != 0) html.emplace(vm["html"].as<std::string>());
  const analysis::ReportData data = analysis::load_report(vm["file"].as<std::string>());
  if (html) analysis::write_text_file(*html, analysis::report_html(data, options));
  if (vm.count("svg") != 0) analysis::write_svg_files(vm["svg"].as<std::string>(), data, options);
  if (html) html->commit();
  if (vm["json"].as<bool>()) {
    analysis::write_report_json(out, data);
  } else {
    analysis::write_report_text(out, data);
  }
  return 0;
}

}  // namespace bubblesim::cli
