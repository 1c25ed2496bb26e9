// Schedule validation: every op exactly once, each stage on one device.
#include "sim/schedule.h"

#include <gtest/gtest.h>

#include "tests/sim/test_util.h"

namespace bubblesim::sim {
namespace {

using testing::generate;

// Expects `s.validate()` to throw E with a message containing `needle`.
template <typename E>
void expect_invalid(const Schedule& s, const std::string& needle) {
  try {
    s.validate();
    FAIL() << "expected an error containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ScheduleValidate, AcceptsGeneratedSchedules) {
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) {
    EXPECT_NO_THROW(generate(name, 4, 9).validate()) << name;
  }
}

TEST(ScheduleValidate, MissingOpIsNamed) {
  Schedule s = generate("zb-h1", 3, 4);
  auto& ops = s.device_ops[1];
  ops.erase(std::find(ops.begin(), ops.end(), Op{OpKind::W, 1, 0, 2}));
  expect_invalid<MissingOpError>(s, "missing op W(stage 1, mb 2)");
}

TEST(ScheduleValidate, MissingForwardIsNamed) {
  Schedule s = generate("1f1b", 2, 2);
  auto& ops = s.device_ops[0];
  ops.erase(std::find(ops.begin(), ops.end(), Op{OpKind::F, 0, 0, 1}));
  expect_invalid<MissingOpError>(s, "missing op F(stage 0, mb 1)");
}

TEST(ScheduleValidate, MissingBackwardIsNamed) {
  Schedule s = generate("1f1b", 2, 2);
  auto& ops = s.device_ops[1];
  ops.erase(std::find(ops.begin(), ops.end(), Op{OpKind::BW, 1, 0, 0}));
  expect_invalid<MissingOpError>(s, "missing op BW(stage 1, mb 0)");
}

TEST(ScheduleValidate, DuplicateOpIsNamedWithBothPositions) {
  Schedule s = generate("1f1b", 2, 3);
  s.device_ops[0].push_back(Op{OpKind::F, 0, 0, 1});
  expect_invalid<DuplicateOpError>(s, "F(stage 0, mb 1) appears twice: at device 0 position 1");
}

TEST(ScheduleValidate, FusedAndSplitBackwardTogetherIsADuplicate) {
  Schedule s = generate("zb-h1", 2, 2);
  s.device_ops[1].push_back(Op{OpKind::BW, 1, 0, 1});
  expect_invalid<DuplicateOpError>(s, "backward runs twice");
}

TEST(ScheduleValidate, StageOnTwoDevicesIsRejected) {
  Schedule s = generate("1f1b", 3, 3);
  // Device 2 also runs a forward of stage 1, which the placement puts on device 1.
  auto& ops = s.device_ops[1];
  ops.erase(std::find(ops.begin(), ops.end(), Op{OpKind::F, 1, 0, 2}));
  s.device_ops[2].push_back(Op{OpKind::F, 1, 0, 2});
  expect_invalid<PlacementError>(s, "stage 1 is on two devices");
}

TEST(ScheduleValidate, OutOfRangeOpIsRejected) {
  Schedule s = generate("1f1b", 2, 2);
  s.device_ops[0].push_back(Op{OpKind::F, 0, 0, 7});
  expect_invalid<PlacementError>(s, "out of range");
}

TEST(ScheduleValidate, WrongChunkIsRejected) {
  Schedule s = generate("1f1b", 2, 2);
  s.device_ops[0][0].chunk = 1;
  expect_invalid<PlacementError>(s, "says chunk 1");
}

TEST(ScheduleValidate, PlacementOnMissingDeviceIsRejected) {
  Schedule s = generate("1f1b", 2, 2);
  s.stage_device[1] = 5;
  expect_invalid<PlacementError>(s, "stage 1 is placed on device 5");
}

// Two routes over a V of 4 stages on 2 devices: mb 0 runs stages 0..1, mb 1 stages 2..3.
Schedule two_routes() {
  Schedule s;
  s.num_microbatches = 2;
  s.stage_device = {0, 1, 1, 0};
  s.routes = {{0, 1}, {2, 3}};
  s.device_ops = {
      {{OpKind::F, 0, 0, 0}, {OpKind::F, 3, 1, 1}, {OpKind::BW, 0, 0, 0}, {OpKind::BW, 3, 1, 1}},
      {{OpKind::F, 2, 1, 1}, {OpKind::F, 1, 0, 0}, {OpKind::BW, 1, 0, 0}, {OpKind::BW, 2, 1, 1}}};
  return s;
}

TEST(ScheduleValidate, RoutesLimitTheOpsEachMicrobatchNeeds) {
  Schedule s = two_routes();
  EXPECT_NO_THROW(s.validate());
  EXPECT_EQ(s.route_stages(), 2);
  EXPECT_EQ(s.route(1), (StageRange{2, 3}));
  s.device_ops[0].pop_back();
  expect_invalid<MissingOpError>(s, "missing op BW(stage 3, chunk 1, mb 1)");
  s = two_routes();
  s.device_ops[0].push_back(Op{OpKind::F, 0, 0, 1});
  expect_invalid<PlacementError>(
      s, "F(stage 0, mb 1) at device 0 position 4 is off its route: mb 1 runs stages 2 to 3");
  s = two_routes();
  s.routes[1] = {2, 4};
  expect_invalid<PlacementError>(s, "microbatch 1 runs stages 2 to 4");
  s.routes.pop_back();
  expect_invalid<PlacementError>(s, "1 routes for 2 microbatches");
  s = two_routes();
  s.routes[1] = {1, 3};
  EXPECT_EQ(s.route_stages(), 0);  // routes of different lengths
}

TEST(ScheduleValidate, OverlappedPairsMustBeAForwardThenABackward) {
  Schedule s = generate("1f1b", 2, 2);                // device 1: F0 BW0 F1 BW1
  std::swap(s.device_ops[1][1], s.device_ops[1][2]);  // F0 F1 BW0 BW1
  s.overlapped_pairs = {{}, {1}};
  EXPECT_NO_THROW(s.validate());
  s.overlapped_pairs = {{}, {0}};
  expect_invalid<OverlapError>(
      s, "F(stage 1, mb 0) and F(stage 1, mb 1) at device 1 position 0 cannot run overlapped");
  s.overlapped_pairs = {{}, {1, 2}};
  expect_invalid<OverlapError>(s, "at device 1 position 2 is out of order");
  s.overlapped_pairs = {{}, {3}};
  expect_invalid<OverlapError>(s, "past the device's last op");
  s.overlapped_pairs = {{1}};
  expect_invalid<OverlapError>(s, "1 lists of overlapped pairs for 2 devices");
}

TEST(ScheduleValidate, StageChunksFollowStageOrderOnEachDevice) {
  Schedule s;
  s.stage_device = {0, 1, 1, 0};  // a V: device 0 holds stages 0 and 3
  s.device_ops.resize(2);
  EXPECT_EQ(s.stage_chunks(), (std::vector<int>{0, 0, 1, 1}));
}

TEST(OpSlots, BackwardKindsShareASlot) {
  const OpSlots slots(3, 5);
  EXPECT_EQ(slots.size(), 3u * 5u * 3u);
  EXPECT_EQ(slots(Op{OpKind::B, 2, 0, 4}), slots(Op{OpKind::BW, 2, 0, 4}));
  EXPECT_NE(slots(Op{OpKind::F, 2, 0, 4}), slots(Op{OpKind::W, 2, 0, 4}));
  EXPECT_EQ(slots(Op{OpKind::W, 2, 0, 4}), slots.size() - 1);
}

TEST(Registry, UnknownNameListsValidNames) {
  const ScheduleRegistry registry = testing::handcrafted_registry();
  try {
    registry.get("zb-h3");
    FAIL();
  } catch (const UnknownScheduleError& e) {
    EXPECT_STREQ(e.what(), "unknown schedule 'zb-h3'; valid values are: gpipe, 1f1b, zb-h1, zb-h2");
  }
}

}  // namespace
}  // namespace bubblesim::sim
