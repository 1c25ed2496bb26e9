// `bubblesim report` (the command line): the tables and the pictures drawn from a results file
// that the tool wrote, checked against what the runs must hold (closed forms for the op counts,
// the file's own records, a brute-force Pareto front), and the errors on bad files. The
// renderer's own functions on rows built here: tests/analysis/report_test.cpp.
#include "analysis/report.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/report_render.h"
#include "analysis/results_file.h"
#include "tests/sim/cli/cli_test_util.h"

namespace bubblesim::analysis {
namespace {

using cli::testing::parse_json;
using cli::testing::run_cli;
namespace fs = std::filesystem;

// p = 2, 4 x m = 4, 6 x three schedules: 12 configurations, with a memory limit axis so that
// the fronts have some shape.
constexpr const char* kStudy = R"(fixed:
  f: 1
  b: 1
  w: 0.5
  comm: 0.05
axes:
  schedule: [1f1b, zb-h1, zb-2p]
  p: [2, 4]
  m: [4, 6]
  mem_limit: [0, inf]
)";

class ReportTest : public bubblesim::testing::TempDirTest {
 protected:
  static std::string read(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // compare -s zb-h1,1f1b,zb-v -p 4 -m 8 into results.h5 (zb-v as its generator builds it:
  // the report is under test, not the schedule improver), and a sweep table.
  std::string results_with_sweep() {
    const std::string file = path("results.h5");
    EXPECT_EQ(run_cli({"compare", "-s", "zb-h1,1f1b,zb-v", "-p", "4", "-m", "8", "--no-improve",
                       "--out", file})
                  .status,
              0);
    std::ofstream(path("study.yaml")) << kStudy;
    const auto sweep =
        run_cli({"sweep", path("study.yaml"), "--out", file, "--progress", "none", "-j", "2"});
    EXPECT_EQ(sweep.status, 0) << sweep.err;
    return file;
  }
};

// Every match of `pattern` in `text`, with its groups.
std::vector<std::smatch> matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return {std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()};
}

// The <svg> elements of a page whose class starts with `cls`.
std::vector<std::string> svgs(const std::string& page, const std::string& cls) {
  std::vector<std::string> found;
  for (std::size_t at = 0; (at = page.find("<svg ", at)) != std::string::npos;) {
    const std::size_t end = page.find("</svg>", at);
    const std::string svg = page.substr(at, end - at);
    if (svg.find("class=\"" + cls) != std::string::npos &&
        svg.find("class=\"" + cls) < svg.find('>')) {
      found.push_back(svg);
    }
    at = end;
  }
  return found;
}

std::string attribute(const std::string& element, const std::string& name) {
  const std::smatch m = matches(element, " " + name + "=\"([^\"]*)\"").front();
  return m[1].str();
}

// The brute-force Pareto front: rows not dominated by any other (both coordinates minimised).
std::set<int> brute_front(const std::vector<SweepRow>& rows, bool throughput) {
  std::set<int> front;
  const auto y = [&](const SweepRow& r) {
    return throughput ? -r.microbatches / (r.pp * r.iteration_time_ms / 1e3) : r.bubble_rate;
  };
  for (const SweepRow& a : rows) {
    if (a.status != "ok") continue;
    bool dominated = false;
    for (const SweepRow& b : rows) {
      if (b.status != "ok") continue;
      const double ax = a.peak_activation_memory, bx = b.peak_activation_memory;
      dominated = dominated || (bx <= ax && y(b) <= y(a) && (bx < ax || y(b) < y(a)));
    }
    if (!dominated) front.insert(a.index);
  }
  return front;
}

TEST_F(ReportTest, HtmlHasOneTimelinePerRunOneBoxPerOpAndKindColours) {
  const std::string file = results_with_sweep();
  const std::string html = path("report.html");
  const auto r = run_cli({"report", file, "--html", html, "--transfers"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = read(html);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  for (const char* fetch : {"src=", "href=", "url(", "@import", "<link", "https:"})
    EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;  // nothing fetched

  // p = 4, m = 8: zb-h1 runs F, B, W of every microbatch on every device; 1f1b F and BW; zb-v
  // the same as zb-h1 on two chunks. Transfers: (p - 1) hops each way per microbatch and chunk,
  // and zb-v's V turns on the last device (no transfer).
  struct Expected {
    std::map<std::string, int> per_kind;
    int transfers;
  };
  const std::map<std::string, Expected> expected = {
      {"zb-h1", {{{"F", 32}, {"B", 32}, {"W", 32}}, 2 * 3 * 8}},
      {"1f1b", {{{"F", 32}, {"BW", 32}}, 2 * 3 * 8}},
      {"zb-v", {{{"F", 64}, {"B", 64}, {"W", 64}}, 2 * 2 * 3 * 8}},
  };
  const std::vector<std::string> timelines = svgs(page, "timeline");
  ASSERT_EQ(timelines.size(), 3u);
  std::map<std::string, std::set<std::string>> fills;
  for (const std::string& svg : timelines) {
    const std::string run = attribute(svg, "data-run");
    SCOPED_TRACE(run);
    ASSERT_EQ(expected.count(run), 1u);
    std::map<std::string, int> per_kind;
    for (const std::smatch& m :
         matches(svg, "<rect class=\"op (BW|F|B|W)(?: [^\"]*)?\"[^>]* fill=\"([^\"]+)\"")) {
      ++per_kind[m[1].str()];
      fills[m[1].str()].insert(m[2].str());
    }
    EXPECT_EQ(per_kind, expected.at(run).per_kind);
    int ops = 0;
    for (const auto& [kind, n] : expected.at(run).per_kind)
      ops += n;
    EXPECT_EQ(attribute(svg, "data-ops"), std::to_string(ops));
    // Boxes this wide all carry their microbatch number: each of 0..7 once per op of it.
    std::map<int, int> numbers;
    for (const std::smatch& m : matches(svg, "<text class=\"mb\"[^>]*>([0-9]+)</text>"))
      ++numbers[std::stoi(m[1].str())];
    ASSERT_EQ(numbers.size(), 8u);
    for (const auto& [mb, n] : numbers)
      EXPECT_EQ(n, ops / 8) << "microbatch " << mb;
    // One background row per device, so idle time shows.
    EXPECT_EQ(matches(svg, "<rect class=\"idle\"").size(), 4u);
    EXPECT_EQ(static_cast<int>(matches(svg, "<line class=\"transfer\"").size()),
              expected.at(run).transfers);
  }
  // One colour per kind, different kinds different colours.
  std::set<std::string> all;
  for (const auto& [kind, colours] : fills) {
    EXPECT_EQ(colours.size(), 1u) << kind;
    all.insert(colours.begin(), colours.end());
  }
  EXPECT_EQ(all.size(), 4u);

  // Memory: a step curve per device, two points per change plus the start and the end; each
  // op is one change (docs/results-format.md), so 3m ops per device for zb-h1.
  const std::vector<std::string> curves = svgs(page, "memory");
  ASSERT_EQ(curves.size(), 3u);
  const ResultsReader reader(file);
  for (const std::string& svg : curves) {
    const std::string run = attribute(svg, "data-run");
    const RunRecord record = reader.read_run(run);
    const auto lines = matches(svg,
                               "<polyline class=\"memory\" data-device=\"([0-9]+)\"[^>]* "
                               "points=\"([^\"]*)\"");
    ASSERT_EQ(lines.size(), 4u) << run;
    for (const std::smatch& m : lines) {
      const int device = std::stoi(m[1].str());
      const std::size_t points = matches(m[2].str(), "[-0-9.]+,[-0-9.]+").size();
      const int ops_on_device = expected.at(run).per_kind.begin()->second *
                                static_cast<int>(expected.at(run).per_kind.size()) / 4;
      EXPECT_EQ(points, 2u + 2u * static_cast<std::size_t>(ops_on_device)) << run << device;
      EXPECT_EQ(std::count_if(record.memory.begin(), record.memory.end(),
                              [&](const MemoryRecord& r) { return r.device == device; }),
                ops_on_device);
    }
  }

  // Sweep plots: one point per ok row, the front's rows marked.
  const std::vector<SweepRow> rows = reader.read_sweep_table();
  ASSERT_EQ(rows.size(), 24u);
  const auto ok =
      std::count_if(rows.begin(), rows.end(), [](const SweepRow& r) { return r.status == "ok"; });
  for (const bool throughput : {false, true}) {
    const std::vector<std::string> plot =
        svgs(page, "sweep\" width");  // the class attribute is exactly "sweep"
    ASSERT_EQ(plot.size(), 2u);
    const std::string& svg = plot[throughput ? 1 : 0];
    EXPECT_EQ(attribute(svg, "data-plot"), throughput ? "throughput" : "bubble");
    const auto plain = matches(svg, "<circle class=\"point\"");
    const auto pareto = matches(svg, "<circle class=\"point pareto\"[^>]*><title>row ([0-9]+):");
    EXPECT_EQ(static_cast<long>(plain.size() + pareto.size()), ok);
    std::set<int> marked;
    for (const std::smatch& m : pareto)
      marked.insert(std::stoi(m[1].str()));
    const std::set<int> front = brute_front(rows, throughput);
    EXPECT_FALSE(front.empty());
    EXPECT_LT(front.size(), static_cast<std::size_t>(ok));
    EXPECT_EQ(marked, front) << (throughput ? "throughput" : "bubble");
  }
}

TEST_F(ReportTest, TextAndJsonListEveryRunAndTheFronts) {
  const std::string file = results_with_sweep();
  const auto text = run_cli({"report", file});
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* run : {"zb-h1 ", "1f1b ", "zb-v "})
    EXPECT_NE(text.out.find(run), std::string::npos) << run;
  EXPECT_NE(text.out.find("sweep table: 24 configurations, "), std::string::npos) << text.out;
  const auto json = run_cli({"report", file, "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const rapidjson::Document doc = parse_json(json.out);
  ASSERT_EQ(doc["runs"].Size(), 3u);
  const ResultsReader reader(file);
  for (const auto& run : doc["runs"].GetArray()) {
    const RunRecord record = reader.read_run(run["name"].GetString());
    EXPECT_EQ(run["ops"].GetUint64(), record.ops.size());
    EXPECT_EQ(run["bubble_rate"].GetDouble(), record.summary.bubble_rate);
    EXPECT_DOUBLE_EQ(run["microbatches_per_gpu_per_s"].GetDouble(),
                     8 / (4 * record.summary.iteration_time_ms / 1e3));
  }
  const std::vector<SweepRow> rows = reader.read_sweep_table();
  for (const bool throughput : {false, true}) {
    std::set<int> listed;
    for (const auto& i :
         doc["sweep"][throughput ? "pareto_throughput_vs_memory" : "pareto_bubble_vs_memory"]
             .GetArray())
      listed.insert(i.GetInt());
    EXPECT_EQ(listed, brute_front(rows, throughput));
  }
}

TEST_F(ReportTest, SvgFilesAreStandaloneOnePerPicture) {
  const std::string file = results_with_sweep();
  const auto r = run_cli({"report", file, "--svg", path("svg")});
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(path("svg")))
    names.insert(entry.path().filename().string());
  EXPECT_EQ(names,
            (std::set<std::string>{"1f1b.memory.svg", "1f1b.timeline.svg", "zb-h1.memory.svg",
                                   "zb-h1.timeline.svg", "zb-v.memory.svg", "zb-v.timeline.svg",
                                   "sweep-bubble.svg", "sweep-throughput.svg"}));
  const std::string svg = read(path("svg/zb-h1.timeline.svg"));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(matches(svg, "<svg ").size(), 1u);
  EXPECT_EQ(matches(svg, "<rect class=\"op ").size(), 96u);
}

TEST_F(ReportTest, LargeRunsAreDrawnAggregated) {
  const std::string file = path("big.h5");
  ASSERT_EQ(run_cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "64", "--out", file}).status, 0);
  const RunRecord run = ResultsReader(file).read_run("zb-h1");
  ASSERT_EQ(run.ops.size(), 768u);
  RenderOptions options;
  options.max_boxes = 100;
  options.width_px = 300;
  const std::string svg = timeline_svg(run, options);
  EXPECT_NE(svg.find("class=\"timeline aggregated\""), std::string::npos);
  const std::size_t boxes = matches(svg, "<rect class=\"op ").size();
  EXPECT_GT(boxes, 0u);
  EXPECT_LE(boxes, 4u * 300u);
  EXPECT_LT(boxes, run.ops.size());
  EXPECT_TRUE(matches(svg, "<text class=\"mb\"").empty());
  // The boxes of a device cover about its busy time: here the pipeline is mostly busy.
  double covered = 0;
  for (const std::smatch& m : matches(svg, "<rect class=\"op [^\"]*\"[^>]* width=\"([0-9.]+)\""))
    covered += std::stod(m[1].str());
  double busy_ms = 0;
  for (const DeviceRecord& d : run.devices)
    busy_ms += d.busy_ms;
  const double px_per_ms = 300 / run.summary.iteration_time_ms;
  EXPECT_NEAR(covered, busy_ms * px_per_ms, 4 * 4 * 2.0);  // a column's rounding per box edge
  // Its 2 (p - 1) m = 384 transfers are more than 100: asked for, they are left out, saying so.
  options.transfers = true;
  const std::string with_transfers = timeline_svg(run, options);
  EXPECT_TRUE(matches(with_transfers, "<line class=\"transfer\"").empty());
  EXPECT_NE(with_transfers.find("384 transfers, more than 100: not drawn"), std::string::npos);
  // Unaggregated, the same run has one box per op, and every transfer.
  options.max_boxes = kDefaultMaxBoxes;
  const std::string exact = timeline_svg(run, options);
  EXPECT_EQ(matches(exact, "<rect class=\"op ").size(), 768u);
  EXPECT_EQ(matches(exact, "<line class=\"transfer\"").size(), 384u);
}

TEST_F(ReportTest, BadFilesAreOneLineErrorsWithStatus2AndNoPage) {
  const std::string html = path("page.html");
  const auto missing = run_cli({"report", path("none.h5"), "--html", html});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("none.h5"), std::string::npos) << missing.err;
  std::ofstream(path("notes.txt")) << "not hdf5\n";
  const auto foreign = run_cli({"report", path("notes.txt"), "--html", html});
  EXPECT_EQ(foreign.status, 2);
  EXPECT_NE(foreign.err.find("not an HDF5 file"), std::string::npos) << foreign.err;
  const std::string file = path("r.h5");
  ASSERT_EQ(run_cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--out", file}).status, 0);
  fs::resize_file(file, fs::file_size(file) / 2);
  const auto cut = run_cli({"report", file, "--html", html});
  EXPECT_EQ(cut.status, 2);
  EXPECT_NE(cut.err.find("r.h5"), std::string::npos) << cut.err;
  EXPECT_EQ(std::count(cut.err.begin(), cut.err.end(), '\n'), 1);
  EXPECT_FALSE(fs::exists(html));
  // A page that cannot be written: the error names it, and nothing is left behind.
  const std::string good = path("good.h5");
  ASSERT_EQ(run_cli({"simulate", "-s", "zb-h1", "-p", "2", "-m", "2", "--out", good}).status, 0);
  const auto unwritable = run_cli({"report", good, "--html", path("no/such/dir/page.html")});
  EXPECT_EQ(unwritable.status, 2);
  EXPECT_NE(unwritable.err.find("page.html"), std::string::npos) << unwritable.err;
  EXPECT_FALSE(fs::exists(path("no")));
}

}  // namespace
}  // namespace bubblesim::analysis
