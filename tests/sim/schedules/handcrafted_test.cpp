// The handcrafted schedules against the closed forms of ../shared/reference/zero-bubble.md §2.
#include "sim/schedules/handcrafted.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "tests/sim/test_util.h"

namespace bubblesim::sim {
namespace {

using testing::generate;
using testing::uniform_costs;

struct Costs {
  double f, b, w, comm;
};

void PrintTo(const Costs& c, std::ostream* os) {
  *os << "F " << c.f << " B " << c.b << " W " << c.w << " comm " << c.comm;
}

// Unequal costs in the paper's regime (T_W <= T_F, T_B): B slower than F, and F slower than B.
constexpr Costs kCosts[] = {{5, 7, 3, 0}, {6, 5, 2, 0}, {18.522, 18.086, 9.337, 0}};

class ClosedForm : public ::testing::TestWithParam<std::tuple<int, int, Costs>> {
 protected:
  int p() const { return std::get<0>(GetParam()); }
  // m in {p, 2p, 3p+1}
  int m() const {
    const int k = std::get<1>(GetParam());
    return k == 0 ? p() : k == 1 ? 2 * p() : 3 * p() + 1;
  }
  Costs costs() const { return std::get<2>(GetParam()); }

  struct Outcome {
    TimeNs bubble_ns;  // max device span - m (T_F + T_B + T_W)
    Metrics metrics;
  };
  Outcome run(const std::string& name, double comm_ms = 0) const {
    const Costs c = costs();
    const auto model = uniform_costs(p(), c.f, c.b, c.w, comm_ms);
    const Metrics metrics = simulate(generate(name, p(), m()), model).metrics;
    const TimeNs work = m() * (ms_to_ns(c.f) + ms_to_ns(c.b) + ms_to_ns(c.w));
    return {metrics.max_device_span_ns - work, metrics};
  }
  TimeNs ns(double ms) const { return ms_to_ns(ms); }
};

TEST_P(ClosedForm, GPipeBubbleAndPeak) {
  const Costs c = costs();
  const Outcome o = run("gpipe");
  EXPECT_EQ(o.bubble_ns, (p() - 1) * (ns(c.f) + ns(c.b) + ns(c.w)));
  EXPECT_DOUBLE_EQ(o.metrics.peak_activation_memory, m() * 1.0);
}

TEST_P(ClosedForm, OneFOneBBubbleAndPeak) {
  const Costs c = costs();
  const Outcome o = run("1f1b");
  EXPECT_EQ(o.bubble_ns, (p() - 1) * (ns(c.f) + ns(c.b) + ns(c.w)));
  EXPECT_DOUBLE_EQ(o.metrics.peak_activation_memory, p() * 1.0);
}

TEST_P(ClosedForm, ZbH1BubbleAndPeak) {
  const Costs c = costs();
  const Outcome o = run("zb-h1");
  EXPECT_EQ(o.bubble_ns, (p() - 1) * (ns(c.f) + ns(c.b) - ns(c.w)));
  // Worker i (1-based) peaks at (p-i+1) M_B + (i-1) M_W, with M_B = 1, M_W = 0.5.
  for (const DeviceMetrics& d : o.metrics.devices) {
    EXPECT_DOUBLE_EQ(d.peak_activation_memory, (p() - d.device) + d.device * 0.5) << d.device;
  }
  EXPECT_DOUBLE_EQ(o.metrics.peak_activation_memory, p() * 1.0);
}

TEST_P(ClosedForm, ZbH2BubbleAndPeak) {
  const Costs c = costs();
  if (m() >= 2 * p() - 1) {
    for (const double comm : {0.0, 0.75}) {
      const Outcome o = run("zb-h2", comm);
      EXPECT_EQ(o.bubble_ns, (p() - 1) * (ns(c.f) + ns(c.b) + 2 * ns(comm) - 2 * ns(c.w)))
          << "comm " << comm;
      // Worker i (1-based) peaks at (2p-2i+1) M_B + (2i-2) M_W.
      for (const DeviceMetrics& d : o.metrics.devices) {
        EXPECT_DOUBLE_EQ(d.peak_activation_memory,
                         (2 * p() - 2 * d.device - 1) + 2 * d.device * 0.5);
      }
      EXPECT_DOUBLE_EQ(o.metrics.peak_activation_memory, 2 * p() - 1.0);
    }
    return;
  }
  // Warm-up capped at m (the header's statement): each of the 2p-1-m missing microbatches
  // costs one T_W of bubble, and the peak is m M_B.
  const Outcome o = run("zb-h2");
  EXPECT_EQ(o.bubble_ns,
            (p() - 1) * (ns(c.f) + ns(c.b) - 2 * ns(c.w)) + (2 * p() - 1 - m()) * ns(c.w));
  EXPECT_DOUBLE_EQ(o.metrics.peak_activation_memory, m() * 1.0);
  // Device r runs min(2(p-1-r)+1, m) forwards before its first B.
  const Schedule s = generate("zb-h2", p(), m());
  for (int r = 0; r < p(); ++r) {
    const auto& ops = s.device_ops[static_cast<std::size_t>(r)];
    const auto first_b =
        std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::B; });
    EXPECT_EQ(first_b - ops.begin(), std::min(2 * (p() - 1 - r) + 1, m())) << "device " << r;
  }
}

std::string name_of(const ::testing::TestParamInfo<ClosedForm::ParamType>& info) {
  const Costs c = std::get<2>(info.param);
  const char* m[] = {"p", "2p", "3p1"};
  return "p" + std::to_string(std::get<0>(info.param)) + "_m" + m[std::get<1>(info.param)] + "_F" +
         std::to_string(static_cast<int>(c.f)) + "B" + std::to_string(static_cast<int>(c.b)) + "W" +
         std::to_string(static_cast<int>(c.w));
}

INSTANTIATE_TEST_SUITE_P(Grid, ClosedForm,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 8, 16),
                                            ::testing::Values(0, 1, 2),
                                            ::testing::ValuesIn(kCosts)),
                         name_of);

TEST(ZbH2, CappedWarmupCostsOneWPerMissingMicrobatchForEveryM) {
  // Every m from 1 to 2p: the bubble grows by T_W for each microbatch below 2p - 1.
  const int p = 6;
  const auto costs = uniform_costs(p, 5, 7, 3, 0);
  for (int m = 1; m <= 2 * p; ++m) {
    const Metrics metrics = simulate(generate("zb-h2", p, m), costs).metrics;
    const TimeNs bubble = metrics.max_device_span_ns - m * ms_to_ns(15);
    EXPECT_EQ(bubble, (p - 1) * ms_to_ns(6) + std::max(0, 2 * p - 1 - m) * ms_to_ns(3)) << m;
    EXPECT_DOUBLE_EQ(metrics.peak_activation_memory, std::min(m, 2 * p - 1)) << m;
  }
}

TEST(Handcrafted, RejectParametersOutOfRange) {
  const ScheduleRegistry registry = testing::handcrafted_registry();
  for (const ScheduleGenerator* g : registry.all()) {
    EXPECT_THROW(g->generate({0, 4, 1}), InvalidArgument) << g->name();
    EXPECT_THROW(g->generate({4, 0, 1}), InvalidArgument) << g->name();
    EXPECT_THROW(g->generate({4, 8, 2}), InvalidArgument) << g->name();
    EXPECT_NO_THROW(g->generate({4, 8, 1}).validate()) << g->name();
  }
}

TEST(Handcrafted, ErrorNamesTheParameter) {
  try {
    generate("1f1b", 0, 4);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("setting 'pp'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bubblesim::sim
