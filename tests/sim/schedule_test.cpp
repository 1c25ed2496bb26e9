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
