// Perfetto export: valid Chrome-trace JSON with the documented tracks, and export -> import
// gives back every op's times to the nanosecond.
#include "traces/perfetto_export.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <map>
#include <sstream>

#include "sim/cli/cli.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/v_shape.h"
#include "traces/kineto_trace.h"

namespace bubblesim::traces {
namespace {

struct Exported {
  sim::Schedule schedule;
  sim::Timeline timeline;
  std::vector<sim::TransferEvent> transfers;
};

// Per-device costs with sub-microsecond parts, so that the times test the exact conversion.
Exported export_run(const char* name, int p, int m, const std::string& path) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  sim::add_v_shape_schedules(registry);
  const sim::ScheduleGenerator& g = registry.get(name);
  std::vector<sim::DeviceCosts> devices;
  for (int d = 0; d < p; ++d) {
    devices.push_back({1000123 + 17 * d, 1200456, 600789 + d, 50001, 1.0, 0.5});
  }
  const sim::PerDeviceCostModel costs(devices, g.default_chunks());
  sim::ScheduleParams params{p, m, g.default_chunks()};
  params.costs = &costs;
  Exported e;
  e.schedule = g.generate(params);
  sim::Engine engine(e.schedule, costs);
  sim::TransferLog log;
  engine.add_observer(log);
  e.timeline = engine.run();
  e.transfers = log.transfers();
  save_perfetto_trace(path, e.schedule, e.timeline, e.transfers, costs);
  return e;
}

TEST(PerfettoExport, IsValidJsonWithComputeTransferFlowAndMemoryTracks) {
  const std::string path = bubblesim::testing::temp_path("zbh1.json");
  const Exported e = export_run("zb-h1", 4, 8, path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  ASSERT_FALSE(doc.HasParseError()) << doc.GetParseError();
  std::map<std::string, int> by_phase;
  std::map<std::uint64_t, int> flows_out, flows_in;
  for (const auto& event : doc["traceEvents"].GetArray()) {
    ++by_phase[event["ph"].GetString()];
    if (std::string(event["ph"].GetString()) == "X" &&
        std::string(event["cat"].GetString()) == "bubblesim_op" &&
        event["args"]["stage"].GetInt() == 2 && event["args"]["microbatch"].GetInt() == 3 &&
        std::string(event["args"]["pass"].GetString()) == "W") {
      EXPECT_STREQ(event["name"].GetString(), "W3");
      EXPECT_EQ(event["pid"].GetInt(), 2);
    }
    if (event.HasMember("flow_out")) ++flows_out[event["bind_id"].GetUint64()];
    if (event.HasMember("flow_in")) ++flows_in[event["bind_id"].GetUint64()];
  }
  const std::size_t ops = e.schedule.num_ops();
  EXPECT_EQ(by_phase["X"], static_cast<int>(ops + e.transfers.size()));
  EXPECT_EQ(by_phase["C"], static_cast<int>(ops));
  EXPECT_EQ(by_phase["M"], 4 * 3);  // process name, two thread names
  EXPECT_EQ(by_phase.size(), 3u);
  // Every transfer crosses devices and has exactly one consumer there, which has one input.
  EXPECT_EQ(flows_out.size(), e.transfers.size());
  EXPECT_EQ(flows_in, flows_out);
  EXPECT_GT(flows_out.size(), 0u);
  for (const auto& [id, count] : flows_out)
    EXPECT_EQ(count, 1) << id;
}

void expect_round_trip(const char* name, int p, int m) {
  const std::string path = bubblesim::testing::temp_path(std::string(name) + ".json");
  const Exported e = export_run(name, p, m, path);
  const Profile profile = import_kineto_traces({path}, PipeliningLabeller());
  ASSERT_EQ(profile.passes.size(), e.schedule.num_ops()) << name;
  std::map<std::tuple<int, int, int>, const PassSample*> imported;
  for (const PassSample& s : profile.passes) {
    imported[{s.label.stage, static_cast<int>(s.label.pass), s.label.microbatch}] = &s;
  }
  for (int d = 0; d < e.schedule.num_devices(); ++d) {
    for (std::size_t i = 0; i < e.schedule.device_ops[d].size(); ++i) {
      const sim::Op& op = e.schedule.device_ops[d][i];
      const PassSample& s = *imported.at({op.stage, static_cast<int>(op.kind), op.microbatch});
      EXPECT_EQ(s.gpu_start_ns, e.timeline.device_ops[d][i].start_ns) << sim::to_string(op);
      EXPECT_EQ(s.gpu_end_ns, e.timeline.device_ops[d][i].end_ns) << sim::to_string(op);
      EXPECT_EQ(s.kernel_ns, s.span_ns());
      EXPECT_EQ(s.label.chunk, op.chunk);
      EXPECT_EQ(s.process, d);
    }
  }
}

TEST(PerfettoExport, ImportGivesBackEveryOpsTimes) {
  expect_round_trip("zb-h1", 4, 8);
  expect_round_trip("1f1b", 3, 5);  // fused BW
  expect_round_trip("zb-v", 4, 8);  // two chunks per device
}

TEST(PerfettoExport, SimulateWritesTheTraceAndNothingOnError) {
  const std::string path = bubblesim::testing::temp_path("cli.json");
  std::remove(path.c_str());
  std::ostringstream out, err;
  ASSERT_EQ(
      cli::run({"simulate", "-s", "zb-h1", "-p", "2", "-m", "2", "--trace-json", path}, out, err),
      0)
      << err.str();
  const Profile profile = import_kineto_traces({path}, PipeliningLabeller());
  EXPECT_EQ(profile.passes.size(), 12u);

  const std::string bad = ::testing::TempDir() + "no-such-dir/t.json";
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::run({"simulate", "-s", "zb-h1", "--trace-json", bad}, out2, err2), 2);
  EXPECT_EQ(out2.str(), "");
  const std::string message = err2.str();
  EXPECT_NE(message.find("no-such-dir/t.json: its folder"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1);
}

TEST(PerfettoExport, ImportCommandPrintsTablesAndJson) {
  const std::string path = bubblesim::testing::temp_path("cli2.json");
  std::ostringstream out, err;
  ASSERT_EQ(cli::run({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--f", "2", "--b", "3", "--w",
                      "1", "--trace-json", path},
                     out, err),
            0);
  std::ostringstream json, table;
  ASSERT_EQ(cli::run({"import", path, "--json"}, json, err), 0) << err.str();
  rapidjson::Document doc;
  doc.Parse(json.str().c_str());
  ASSERT_TRUE(doc.IsArray()) << json.str();
  ASSERT_EQ(doc.Size(), 4u);  // stages 0 and 1, F and BW
  EXPECT_EQ(doc[1]["stage"].GetInt(), 0);
  EXPECT_STREQ(doc[1]["pass"].GetString(), "BW");
  EXPECT_EQ(doc[1]["count"].GetInt(), 4);
  EXPECT_DOUBLE_EQ(doc[1]["total_kernel_ms"].GetDouble(), 16);
  EXPECT_DOUBLE_EQ(doc[1]["median_ms"].GetDouble(), 4);
  ASSERT_EQ(cli::run({"import", path, "--summary"}, table, err), 0);
  EXPECT_NE(table.str().find("    0  BW         4           16.000       4.000"), std::string::npos)
      << table.str();

  std::ostringstream out3, err3;
  const std::string bad = bubblesim::testing::temp_path("bad.json");
  std::ofstream(bad) << "{\"traceEvents\": [";
  EXPECT_EQ(cli::run({"import", bad}, out3, err3), 2);
  EXPECT_EQ(out3.str(), "");
  EXPECT_EQ(err3.str(),
            "bubblesim import: error: " + bad + ": byte 17: not valid JSON: Invalid value.\n");
}

}  // namespace
}  // namespace bubblesim::traces
