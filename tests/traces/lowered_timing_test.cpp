// Lowered schedule files timed with their actions where they are: against the engine on every
// generated schedule, and by hand where the actions move the timeline.
#include "traces/lowered_timing.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/schedules/builtin.h"
#include "sim/simulation.h"

namespace bubblesim::traces {
namespace {

ScheduleFile lowered_file(const sim::Schedule& schedule) {
  std::ostringstream out;
  write_schedule_csv(out, schedule, CsvFormat::Comms);
  std::istringstream in(out.str());
  return parse_schedule_file(in, "lowered.csv");
}

ScheduleFile parse_file(const std::string& text) {
  std::istringstream in(text);
  return parse_schedule_file(in, "test.csv");
}

TEST(LoweredTiming, WrittenLoweredFilesTimeAsTheEngine) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  for (const sim::ScheduleGenerator* g : registry.all()) {
    for (const int p : {2, 4}) {
      const int v = g->default_chunks();
      const sim::Schedule schedule = g->generate({p, 3 * p, v});
      const ScheduleFile file = lowered_file(schedule);
      ASSERT_TRUE(file.has_actions()) << g->name();
      const auto costs = sim::PerDeviceCostModel::uniform(
          {sim::ms_to_ns(3), sim::ms_to_ns(4), sim::ms_to_ns(2), sim::ms_to_ns(0.7), 1, 0.5, 0.3},
          p, v);
      EXPECT_EQ(simulate_lowered(file, costs, sim::P2pMode::Async).device_ops,
                sim::simulate(schedule, costs).timeline.device_ops)
          << g->name() << " p=" << p << " async";
      if (!schedule.overlapped_pairs.empty()) continue;  // the engine waits for the longer receive
      EXPECT_EQ(
          simulate_lowered(file, costs, sim::P2pMode::Blocking).device_ops,
          sim::simulate(schedule, costs, {}, nullptr, sim::InputRule::All, sim::P2pMode::Blocking)
              .timeline.device_ops)
          << g->name() << " p=" << p << " blocking";
    }
  }
}

// GPipe on two ranks; F 1 ms, full backward 1 + 1 ms, transfers 0.5 ms.
const auto kCosts = sim::PerDeviceCostModel::uniform(
    {sim::ms_to_ns(1), sim::ms_to_ns(1), sim::ms_to_ns(1), sim::ms_to_ns(0.5), 1, 0.5}, 2);

TEST(LoweredTiming, MemoryActionsHoldTheStream) {
  const ScheduleFile file = parse_file(
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
      "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n");
  // UNSHARD 0.25 ms first: rank 0's F0 0.25-1.25, F1 1.25-2.25; rank 1's F0 1.75-2.75, F1
  // 2.75-3.75, B0 3.75-5.75, B1 5.75-7.75; rank 0's B0 6.25-8.25, B1 8.25-10.25, then
  // REDUCE_GRAD and RESHARD (no pass after them, so no op moves).
  const sim::Timeline t =
      simulate_lowered(file, kCosts, sim::P2pMode::Async, {sim::ms_to_ns(0.25), 0, 0});
  EXPECT_EQ(t.device_ops[0][0], (sim::OpTiming{sim::ms_to_ns(0.25), sim::ms_to_ns(1.25)}));
  EXPECT_EQ(t.device_ops[1][0], (sim::OpTiming{sim::ms_to_ns(1.75), sim::ms_to_ns(2.75)}));
  EXPECT_EQ(t.device_ops[0][3], (sim::OpTiming{sim::ms_to_ns(8.25), sim::ms_to_ns(10.25)}));
  // With no durations it is the engine's run of the same passes.
  EXPECT_EQ(simulate_lowered(file, kCosts, sim::P2pMode::Async).device_ops,
            sim::simulate(file.schedule, kCosts).timeline.device_ops);
}

TEST(LoweredTiming, ALateSendDelaysItsTransfer) {
  // Rank 0 sends F0's output only after F1: it arrives at 2 + 0.5 ms, not 1.5.
  const ScheduleFile file = parse_file(
      "0F0,0F1,0SEND_F0,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
      "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1\n");
  sim::Timeline t = simulate_lowered(file, kCosts, sim::P2pMode::Async);
  EXPECT_EQ(t.device_ops[1][0].start_ns, sim::ms_to_ns(2.5));
  // Blocking: rank 0 holds 2-2.5 and 2.5-3 sending; rank 1 receives F0 2-2.5 (from when it was
  // sent), F0 2.5-3.5, receives F1 3.5-4 (sent at 2.5), F1 4-5.
  t = simulate_lowered(file, kCosts, sim::P2pMode::Blocking);
  EXPECT_EQ(t.device_ops[1][0], (sim::OpTiming{sim::ms_to_ns(2.5), sim::ms_to_ns(3.5)}));
  EXPECT_EQ(t.device_ops[1][1], (sim::OpTiming{sim::ms_to_ns(4), sim::ms_to_ns(5)}));
}

TEST(LoweredTiming, ABlockingOrderThatDeadlocksNamesWhereEachRankWaits) {
  // Rank 0 waits to receive B0's gradient before it sends F1, which rank 1 needs before B0.
  // Asynchronous transfers only order: that runs.
  const ScheduleFile file = parse_file(
      "0F0,0SEND_F0,0RECV_B0,0F1,0SEND_F1,0B0,0RECV_B1,0B1\n"
      "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1\n");
  EXPECT_NO_THROW(simulate_lowered(file, kCosts, sim::P2pMode::Async));
  try {
    simulate_lowered(file, kCosts, sim::P2pMode::Blocking);
    FAIL() << "expected a deadlock";
  } catch (const ScheduleFileError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlocks: every rank waits (row 1 at column 3; row 2 "
                                         "at column 3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bubblesim::traces
