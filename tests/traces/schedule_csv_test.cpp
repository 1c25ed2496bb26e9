// Schedule files: round trips of every generated schedule (DualPipe's routes and pairs in
// their own test), and errors that name the cell.
#include "traces/schedule_csv.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/schedules/builtin.h"
#include "sim/schedules/dual_pipe.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/interleaved.h"
#include "sim/schedules/v_shape.h"
#include "sim/schedules/zb_auto.h"
#include "sim/simulation.h"

namespace bubblesim::traces {
namespace {

using sim::Op;
using sim::OpKind;

sim::Schedule parse(const std::string& text) {
  std::istringstream in(text);
  return parse_schedule_csv(in, "test.csv");
}

std::string write(const sim::Schedule& s) {
  std::ostringstream out;
  write_schedule_csv(out, s);
  return out.str();
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse(text);
    FAIL() << "expected an error containing '" << needle << "' for:\n" << text;
  } catch (const ScheduleFileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("test.csv: ", 0), 0u) << e.what();
  }
}

TEST(ScheduleCsv, EveryGeneratedScheduleRoundTrips) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  sim::add_zb_auto_schedules(registry);
  sim::add_interleaved_schedules(registry);
  sim::add_v_shape_schedules(registry);
  for (const sim::ScheduleGenerator* g : registry.all()) {
    for (const int p : {1, 2, 4}) {
      for (const int m : {p, 2 * p, 3 * p}) {
        const int v = g->default_chunks();
        const sim::Schedule original = g->generate({p, m, v});
        const sim::Schedule back = parse(write(original));
        EXPECT_EQ(back.stage_device, original.stage_device) << g->name();
        EXPECT_EQ(back.num_microbatches, original.num_microbatches) << g->name();
        ASSERT_EQ(back.device_ops, original.device_ops) << g->name() << " p=" << p << " m=" << m;
        // Hence the same simulation, to the nanosecond.
        const auto costs = sim::PerDeviceCostModel::uniform(
            {sim::ms_to_ns(3), sim::ms_to_ns(4), sim::ms_to_ns(2), sim::ms_to_ns(0.3), 1, 0.5}, p,
            v);
        const auto a = sim::simulate(original, costs).metrics;
        const auto b = sim::simulate(back, costs).metrics;
        EXPECT_EQ(a.iteration_time_ns, b.iteration_time_ns) << g->name();
        EXPECT_EQ(a.bubble_rate, b.bubble_rate) << g->name();
        EXPECT_EQ(a.peak_activation_memory, b.peak_activation_memory) << g->name();
      }
    }
  }
}

TEST(ScheduleCsv, DualPipeRoundTripsWithRoutesAndPairs) {
  sim::ScheduleRegistry registry;
  sim::add_dual_pipe_schedules(registry);
  struct Case {
    const char* name;
    int p, m;
  };
  for (const Case c :
       {Case{"dualpipe", 2, 4}, Case{"dualpipe", 4, 10}, Case{"dualpipe", 6, 24},
        Case{"dualpipe-v", 1, 2}, Case{"dualpipe-v", 3, 7}, Case{"dualpipe-v", 4, 12}}) {
    const int v = registry.get(c.name).default_chunks();
    const sim::Schedule original = registry.get(c.name).generate({c.p, c.m, v});
    const sim::Schedule back = parse(write(original));
    EXPECT_EQ(back.stage_device, original.stage_device) << c.name;
    EXPECT_EQ(back.num_microbatches, original.num_microbatches) << c.name;
    EXPECT_EQ(back.routes, original.routes) << c.name << " p=" << c.p;
    EXPECT_EQ(back.overlapped_pairs, original.overlapped_pairs) << c.name << " p=" << c.p;
    ASSERT_EQ(back.device_ops, original.device_ops) << c.name << " p=" << c.p;
    const auto costs = sim::PerDeviceCostModel::uniform(
        {sim::ms_to_ns(3), sim::ms_to_ns(4), sim::ms_to_ns(2), sim::ms_to_ns(0.3), 1, 0.5, 0.4},
        c.p, v);
    const auto a = sim::simulate(original, costs).metrics;
    const auto b = sim::simulate(back, costs).metrics;
    EXPECT_EQ(a.iteration_time_ns, b.iteration_time_ns) << c.name;
    EXPECT_EQ(a.bubble_rate, b.bubble_rate) << c.name;
    EXPECT_EQ(a.peak_activation_memory, b.peak_activation_memory) << c.name;
  }
}

TEST(ScheduleCsv, WritesOverlappedPairsInOneCell) {
  sim::ScheduleRegistry registry;
  sim::add_dual_pipe_schedules(registry);
  // p = 2: rank 0 holds stage 0 (microbatches 0, 1 enter there) and stage 3 (the mirrored
  // direction's last stage, microbatches 2, 3); rank 1 stages 1 and 2.
  EXPECT_EQ(write(registry.get("dualpipe").generate({2, 4, 1})),
            "0F0,3F2,0F1,3B2,(3F3;0B0)OVERLAP_F_B,3B3,0I1,0W1\n"
            "2F2,1F0,2F3,1B0,(1F1;2B2)OVERLAP_F_B,1B1,2I3,2W3\n");
}

TEST(ScheduleCsv, WritesPyTorchActionTokens) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  EXPECT_EQ(write(registry.get("zb-h1").generate({2, 2, 1})),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
  EXPECT_EQ(write(registry.get("1f1b").generate({2, 1, 1})), "0F0,0B0\n1F0,1B0\n");
}

TEST(ScheduleCsv, InfersAVPlacementAndSkipsIdleCells) {
  // Two ranks, four stages in a V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
  const sim::Schedule s = parse(
      "0F0,,,3F0,3I0,3W0,,,0I0,0W0\r\n"
      ",1F0,2F0,,,2I0,1I0,2W0,1W0\r\n");
  EXPECT_EQ(s.stage_device, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(s.num_microbatches, 1);
  ASSERT_EQ(s.device_ops[0].size(), 6u);
  EXPECT_EQ(s.device_ops[0][1], (Op{OpKind::F, 3, 1, 0}));  // stage 3 is rank 0's chunk 1
  EXPECT_EQ(s.device_ops[1][1], (Op{OpKind::F, 2, 1, 0}));
}

TEST(ScheduleCsv, ReadsQuotedCellsAndAByteOrderMark) {
  // As Python's csv.QUOTE_ALL and spreadsheets write a file: a UTF-8 byte order mark, every
  // cell in double quotes (an idle one as ""), CRLF line ends. The same schedule as plain.
  const std::string plain =
      "0F0,0F1,0I0,0W0,0I1,0W1\n"
      ",1F0,1I0,1F1,1I1,1W0,1W1\n";
  const std::string quoted =
      "\xEF\xBB\xBF\"0F0\",\"0F1\",\"0I0\",\"0W0\",\"0I1\",\"0W1\"\r\n"
      "\"\",\"1F0\",\"1I0\",\" 1F1 \",\"1I1\",\"1W0\",\"1W1\"\r\n";
  const sim::Schedule read = parse(quoted);
  EXPECT_EQ(read.device_ops, parse(plain).device_ops);
  EXPECT_EQ(read.device_ops[1][2], (Op{OpKind::F, 1, 0, 1}));
  // A quote that does not close its cell is no action.
  expect_error("\"0F0,0I0,0W0\n", "row 1, column 1: '\"0F0' is not an action");
}

TEST(ScheduleCsv, ErrorsNameTheCell) {
  expect_error("0F0,0X0\n", "row 1, column 2: '0X0' has an unknown action 'X'");
  expect_error("0F0,0SEND_F0,0B0\n", "row 1, column 2: '0SEND_F0' has no matching 1RECV_F0");
  expect_error("0F0,F1\n", "row 1, column 2: 'F1' is not an action");
  expect_error("0F0,0F\n", "row 1, column 2: '0F' is not an action");
  expect_error("0F0,(0F1;0W0)OVERLAP_F_B\n",
               "row 1, column 2: '(0F1;0W0)OVERLAP_F_B' is not a forward overlapped with a "
               "backward");
  expect_error("0F0,(0F1;0B0)\n", "row 1, column 2: '(0F1;0B0)' is not an overlapped pair");
  expect_error("0F0,(0F1,0B0)OVERLAP_F_B\n", "row 1, column 2: '(0F1' is not an overlapped pair");
  expect_error("0F0,(0F1;0X0)OVERLAP_F_B\n", "row 1, column 2: '0X0' has an unknown action 'X'");
  // A pair whose backward needs its own forward's output deadlocks: its cell is named.
  expect_error("(0F0;0B0)OVERLAP_F_B\n", "[0F0 at row 1 column 1, 0B0 at row 1 column 1]");
  // Stage 0 runs microbatch 1 nowhere: that is a missing op, not a route of stage 1 alone.
  expect_error("0F0,0I0,0W0\n1F0,1I0,1W0,1F1,1I1,1W1\n", "missing op F(stage 0, mb 1)");
  // Stage 0 on rank 0 (row 1) and rank 1 (row 2).
  expect_error("0F0,0B0\n1F0,1B0,0F1\n", "row 2, column 3: stage 0 is on two ranks: row 1");
  // An I without its W: the I's cell is named.
  expect_error("0F0,,0I0\n,1F0,1I0,1W0\n",
               "missing op W(stage 0, mb 0) after B(stage 0, mb 0) [0I0 at row 1 column 3]");
  // Rank 1 runs the backward of microbatch 0 before its forward: a cycle, with both cells.
  expect_error("0F0,0B0\n1B0,1F0\n", "1F0 at row 2 column 2, 1B0 at row 2 column 1");
  expect_error("0F0,0B0\n0F0,0B0\n", "stage 0 is on two ranks");
  expect_error("0F0,0F0,0B0\n", "F(stage 0, mb 0) appears twice");
  expect_error("0F0,0B0\n2F0,2B0\n", "stage 1 has no actions");
  expect_error("\n\n", "the schedule has no actions");
  // A huge microbatch number is refused before anything is sized by it.
  expect_error("0F0,0B0,0F99999999,0B99999999\n",
               "need at least 200000000 actions, the file has 4");
}

std::string write_lowered(const sim::Schedule& s) {
  std::ostringstream out;
  write_schedule_csv(out, s, CsvFormat::Comms);
  return out.str();
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

TEST(ScheduleCsv, LoweredAndComputeOnlyFilesSimulateToTheSameTimeline) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  for (const sim::ScheduleGenerator* g : registry.all()) {
    for (const int p : {2, 4}) {
      const int v = g->default_chunks();
      const sim::Schedule original = g->generate({p, 2 * p, v});
      const std::string lowered = write_lowered(original);
      const sim::Schedule compute = parse(write(original)), comms = parse(lowered);
      ASSERT_EQ(comms.device_ops, compute.device_ops) << g->name() << " p=" << p;
      EXPECT_EQ(comms.stage_device, compute.stage_device) << g->name();
      EXPECT_EQ(comms.routes, compute.routes) << g->name();
      EXPECT_EQ(comms.overlapped_pairs, compute.overlapped_pairs) << g->name();
      // Async transfers of no time: the same timeline, op by op.
      const auto costs = sim::PerDeviceCostModel::uniform(
          {sim::ms_to_ns(3), sim::ms_to_ns(4), sim::ms_to_ns(2), 0, 1, 0.5}, p, v);
      EXPECT_EQ(sim::simulate(comms, costs).timeline.device_ops,
                sim::simulate(compute, costs).timeline.device_ops)
          << g->name() << " p=" << p;
      EXPECT_EQ(count_of(lowered, "SEND_F"), count_of(lowered, "RECV_F")) << g->name();
      EXPECT_EQ(count_of(lowered, "SEND_B"), count_of(lowered, "RECV_B")) << g->name();
    }
  }
  // 1F1B on p devices, one stage each: every microbatch crosses p - 1 links forward and p - 1
  // backward.
  const std::string lowered = write_lowered(registry.get("1f1b").generate({4, 8, 1}));
  EXPECT_EQ(count_of(lowered, "RECV_F"), 3u * 8u);
  EXPECT_EQ(count_of(lowered, "SEND_B"), 3u * 8u);
}

TEST(ScheduleCsv, ReadsAHandWrittenLoweredFile) {
  // GPipe on two ranks as PyTorch lowers it, with FSDP's memory actions.
  const sim::Schedule lowered = parse(
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
      "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n");
  const sim::Schedule compute = parse("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  EXPECT_EQ(lowered.device_ops, compute.device_ops);
  EXPECT_EQ(write_lowered(compute),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
            "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1\n");
  // F 1 ms, full backward 1 + 1 ms, no transfer time: by hand, rank 1 runs its backwards 3-5
  // and 5-7 ms, rank 0 its own 5-7 and 7-9 ms.
  const auto costs = sim::PerDeviceCostModel::uniform(
      {sim::ms_to_ns(1), sim::ms_to_ns(1), sim::ms_to_ns(1), 0, 1, 0.5}, 2);
  const sim::Timeline t = sim::simulate(lowered, costs).timeline;
  EXPECT_EQ(t.device_ops[0][3].end_ns, sim::ms_to_ns(9));
  EXPECT_EQ(t.device_ops[1][2].start_ns, sim::ms_to_ns(3));
}

TEST(ScheduleCsv, LoweredTransfersMustMatch) {
  // Rank 1 receives microbatch 1's forward, which rank 0 never sends: the RECV's cell.
  expect_error("0F0,0SEND_F0,0F1,0B0,0B1\n1RECV_F0,1F0,1RECV_F1,1F1,1B0,1B1\n",
               "row 2, column 3: '1RECV_F1' has no matching 0SEND_F1 in the file");
  expect_error("0F0,0B0,0SEND_B0\n1F0,1B0\n",
               "row 1, column 3: '0SEND_B0' has no stage to exchange with (stage 0 is the first)");
  expect_error("0F0,0SEND_F0,0B0\n1F0,1RECV_F0,1B0\n",
               "row 2, column 2: '1RECV_F0' comes after 1F0, the pass that needs it");
  expect_error("0SEND_F0,0F0,0B0\n1RECV_F0,1F0,1B0\n",
               "row 1, column 1: '0SEND_F0' comes before 0F0, the pass that makes it");
  expect_error("0F0,0B0,1SEND_B0\n1F0,1B0,0RECV_B0\n",
               "row 1, column 3: '1SEND_B0' is on another row than its stage's passes (row 2)");
}

TEST(ScheduleCsv, OlderNamingIsReadOnRequestAndHinted) {
  // B = input gradient, W, BW = full backward.
  std::istringstream legacy("0F0,0B0,0W0,0F1,0BW1\n");
  const sim::Schedule s = parse_schedule_csv(legacy, "old.csv", CsvNaming::Legacy);
  EXPECT_EQ(s.device_ops[0],
            (std::vector<Op>{Op{OpKind::F, 0, 0, 0}, Op{OpKind::B, 0, 0, 0}, Op{OpKind::W, 0, 0, 0},
                             Op{OpKind::F, 0, 0, 1}, Op{OpKind::BW, 0, 0, 1}}));
  // In today's naming B is the full backward, so a W after it is one too many; BW is unknown.
  expect_error("0F0,0B0,0W0\n", "give --csv-naming legacy");
  expect_error("0F0,0BW0\n", "row 1, column 2: '0BW0' has an unknown action 'BW'");
  expect_error("0F0,0BW0\n", "(the file reads as PyTorch's older naming");
  // A file wrong in both namings gets no hint.
  try {
    parse("0F0,0X0\n");
  } catch (const ScheduleFileError& e) {
    EXPECT_EQ(std::string(e.what()).find("legacy"), std::string::npos) << e.what();
  }
  // The legacy reader does not know I.
  std::istringstream today("0F0,0I0,0W0\n");
  EXPECT_THROW(parse_schedule_csv(today, "new.csv", CsvNaming::Legacy), ScheduleFileError);
}

TEST(ScheduleCsv, SaveIsAtomicAndReadable) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  const sim::Schedule s = registry.get("zb-h2").generate({3, 6, 1});
  const std::string path = bubblesim::testing::temp_path("schedule_test.csv");
  save_schedule_csv(path, s);
  EXPECT_EQ(read_schedule_csv(path).device_ops, s.device_ops);
  EXPECT_THROW(save_schedule_csv("/nonexistent-dir/x.csv", s), Error);
  EXPECT_THROW(read_schedule_csv("/nonexistent-dir/x.csv"), ScheduleFileError);
}

}  // namespace
}  // namespace bubblesim::traces
