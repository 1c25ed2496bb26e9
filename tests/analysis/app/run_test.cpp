// The application library called directly (no command line): settings are validated and
// assembled into a Scenario, run() reproduces closed forms of the schedules, the derived metrics
// follow their definitions, and a study configuration gives the same scenario as the same
// settings given one by one.
#include "analysis/app/run.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/error.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::analysis::app {
namespace {

ScenarioSettings uniform(int p, int m, double f, double b, double w, double comm = 0) {
  ScenarioSettings s;
  s.pp = p;
  s.microbatches = m;
  s.f_ms = {f};
  s.b_ms = {b};
  s.w_ms = {w};
  s.comm_ms = {comm};
  return s;
}

RunSummary run_named(const Scenario& scenario, const std::string& name) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  RunRequest request;
  request.generator = &registry.get(name);
  request.params = params_for(scenario, *request.generator, false);
  return run(scenario, request);
}

TEST(AppScenario, DefaultsAreThePapersExample) {
  const Scenario s = make_scenario({});
  EXPECT_TRUE(s.default_example);
  EXPECT_EQ(s.params.pp, DefaultExample::kPp);
  EXPECT_EQ(s.params.microbatches, DefaultExample::kMicrobatches);
  ASSERT_EQ(s.device_costs.size(), 8u);
  EXPECT_EQ(s.device_costs[3].f_ns, 18'522'000);
  EXPECT_EQ(s.device_costs[3].comm_ns, 601'000);
  EXPECT_FALSE(s.replicated);
}

TEST(AppScenario, PerDeviceTimesMustMatchTheDevices) {
  ScenarioSettings s = uniform(4, 8, 1, 1, 1);
  s.f_ms = std::vector<double>{1, 2, 3};
  EXPECT_THROW(make_scenario(s), InvalidArgument);
  s.f_ms = std::vector<double>{1, 2, 3, 4};
  EXPECT_EQ(make_scenario(s).device_costs[2].f_ns, 3'000'000);
}

// A bad setting is named as a setting, in no front end's words; the command line and a study
// word it themselves (the CLI: "option --dp: ...").
TEST(AppScenario, ErrorsNameTheSetting) {
  ScenarioSettings s = uniform(4, 8, 1, 1, 1);
  s.dp = 0;
  try {
    make_scenario(s);
    FAIL() << "dp = 0 was accepted";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "dp");
    EXPECT_EQ(std::string(e.what()), "setting 'dp': " + e.problem());
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
  }
  try {
    parse_ms_list("comm", "1,x");
    FAIL() << "'x' was accepted as a time";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "comm");
  }
}

TEST(AppScenario, AMemoryLimitGoesOnlyToSchedulesThatTakeOne) {
  ScenarioSettings settings = uniform(4, 8, 1, 1, 1);
  settings.mem_limit = 3;
  const Scenario s = make_scenario(settings);
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  EXPECT_THROW(params_for(s, registry.get("1f1b"), false), InvalidArgument);
  EXPECT_EQ(params_for(s, registry.get("zb-auto"), false).mem_limit, 3);
}

TEST(AppScenario, AStudyConfigurationIsTheSameSettings) {
  StudyConfiguration c;
  c.settings = {{"schedule", "1f1b", 1}, {"pp", "4", 2},        {"microbatches", "8", 3},
                {"f", "1,2,1,2", 4},     {"mem-limit", "0", 5}, {"p2p", "blocking", 6}};
  const ScenarioSettings s = settings_from_study(c);
  EXPECT_EQ(s.pp, 4);
  EXPECT_EQ(s.microbatches, 8);
  EXPECT_EQ(s.f_ms, (std::vector<double>{1, 2, 1, 2}));
  EXPECT_FALSE(s.mem_limit.has_value());  // 0 in a study: the schedule's default
  EXPECT_EQ(s.p2p, sim::P2pMode::Blocking);
  c.settings.push_back({"dp", "two", 7});
  EXPECT_THROW(settings_from_study(c), InvalidArgument);
}

// The unit of memory figures is carried, not guessed: bytes with a model, else M_B's own.
TEST(AppScenario, MemoryIsInBytesExactlyWithAModel) {
  const Scenario plain = make_scenario(uniform(2, 4, 1, 1, 1));
  EXPECT_EQ(plain.memory_unit, MemoryUnit::kGiven);
  EXPECT_DOUBLE_EQ(plain.device_costs[0].m_b, 1);
  ScenarioSettings settings = uniform(2, 4, 1, 1, 1);
  settings.model = BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml";
  const Scenario model = make_scenario(settings);
  EXPECT_EQ(model.memory_unit, MemoryUnit::kBytes);
  EXPECT_GT(model.device_costs[0].m_b, 1e6);  // an activation of a 1.5B model, in bytes
  const RunSummary r = run_named(model, "1f1b");
  EXPECT_EQ(r.memory_unit, MemoryUnit::kBytes);
  EXPECT_DOUBLE_EQ(r.metrics.peak_activation_memory, 2 * model.device_costs[0].m_b);
}

// 1F1B with fused backwards and free transfers: (m + p - 1)(F + B + W), each device busy
// m (F + B + W) of it.
TEST(AppRun, OneFOneBIsItsClosedForm) {
  const int p = 4, m = 8;
  const RunSummary r = run_named(make_scenario(uniform(p, m, 2, 2, 1)), "1f1b");
  EXPECT_EQ(r.metrics.iteration_time_ns, (m + p - 1) * 5'000'000);
  EXPECT_DOUBLE_EQ(r.metrics.bubble_rate, 1 - static_cast<double>(m) * 5 / ((m + p - 1) * 5));
  EXPECT_EQ(r.schedule, "1f1b");
  EXPECT_EQ(iteration_time_ns(r), r.metrics.iteration_time_ns);
  EXPECT_FALSE(r.record.has_value());
}

// GPipe: all forwards, then all backwards: (m + p - 1)(F) + (m + p - 1)(B + W) with free
// transfers, and a peak of m M_B on every device.
TEST(AppRun, GPipeIsItsClosedForm) {
  const int p = 3, m = 5;
  const RunSummary r = run_named(make_scenario(uniform(p, m, 1, 2, 1)), "gpipe");
  EXPECT_EQ(r.metrics.iteration_time_ns, (m + p - 1) * 1'000'000 + (m + p - 1) * 3'000'000);
  EXPECT_DOUBLE_EQ(r.metrics.peak_activation_memory, m * 1.0);
}

TEST(AppRun, AKeptRecordHoldsEveryOp) {
  const Scenario s = make_scenario(uniform(2, 4, 1, 1, 1));
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  RunRequest request;
  request.generator = &registry.get("zb-h1");
  request.params = params_for(s, *request.generator, false);
  request.keep_record = true;
  request.record_name = "mine";
  sim::Schedule schedule;
  const RunSummary r = run(s, request, schedule);
  ASSERT_TRUE(r.record.has_value());
  EXPECT_EQ(r.record->name, "mine");
  EXPECT_EQ(r.record->ops.size(), 3u * 2 * 4);  // F, B, W of 4 microbatches on 2 stages
  std::size_t ops = 0;
  for (const auto& device : schedule.device_ops)
    ops += device.size();
  EXPECT_EQ(ops, r.record->ops.size());
}

TEST(AppRun, TheExactModeRefusesReplicas) {
  ScenarioSettings settings = uniform(2, 4, 1, 1, 1);
  settings.optimizer_sync = "allreduce";
  const Scenario s = make_scenario(settings);
  ASSERT_TRUE(s.replicated);
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  RunRequest request;
  request.generator = &registry.get("zb-2p");
  request.params = params_for(s, *request.generator, false);
  request.exact_time_limit_s = 1;
  EXPECT_THROW(run(s, request), InvalidArgument);
}

TEST(AppSummary, ThroughputAndMfuFollowTheirDefinitions) {
  RunSummary r;
  r.params.pp = 4;
  r.params.microbatches = 8;
  r.dp = 2;
  r.samples_per_microbatch = 4;
  r.metrics.iteration_time_ns = 2'000'000'000;  // 2 s
  // dp m b samples in 2 s, over dp p GPUs.
  EXPECT_DOUBLE_EQ(throughput_samples_per_s(r), 2.0 * 8 * 4 / 2);
  EXPECT_DOUBLE_EQ(samples_per_gpu_per_s(r), 2.0 * 8 * 4 / 2 / 8);
  r.flops_per_iteration = 1e15;
  r.peak_flops_total = 1e15;
  EXPECT_DOUBLE_EQ(mfu(r), 0.5);
}

TEST(AppSummary, OutOfMemoryIsStaticPlusActivationsOverCapacity) {
  RunSummary r;
  r.static_memory_bytes = {10, 10};
  r.capacity_bytes = {20, 20};
  r.metrics.devices.resize(2);
  r.metrics.devices[0] = {.device = 0, .peak_activation_memory = 5};
  r.metrics.devices[1] = {.device = 1, .peak_activation_memory = 10};
  EXPECT_DOUBLE_EQ(max_peak_memory_bytes(r), 20);
  EXPECT_FALSE(oom(r));
  r.metrics.devices[1].peak_activation_memory = 11;
  EXPECT_TRUE(oom(r));
  EXPECT_DOUBLE_EQ(over_capacity_bytes(r, r.metrics.devices[1]), 1);
}

TEST(AppSummary, QuantilesInterpolateLinearly) {
  const Distribution d = distribution({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.p50, 2.5);
  EXPECT_DOUBLE_EQ(d.p90, 3.7);  // position 0.9 * 3 = 2.7 between 3 and 4
  EXPECT_DOUBLE_EQ(d.p99, 3.97);
}

}  // namespace
}  // namespace bubblesim::analysis::app
