// Engine throughput and memory per op (issue 2's benchmark). Run by hand:
//   cmake --build build --target bubblesim_bench && ./build/tests/bubblesim_bench
// Never part of the test suite.
#include <benchmark/benchmark.h>

#include "heap.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedules/dual_pipe.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/v_shape.h"
#include "sim/schedules/zb_auto.h"
#include "sim/simulation.h"

namespace {

using bubblesim::sim::ScheduleParams;
using bubblesim::sim::ScheduleRegistry;

const ScheduleRegistry& registry() {
  static const ScheduleRegistry r = [] {
    ScheduleRegistry reg;
    bubblesim::sim::add_handcrafted_schedules(reg);
    bubblesim::sim::add_v_shape_schedules(reg);
    bubblesim::sim::add_zb_auto_schedules(reg);
    bubblesim::sim::add_dual_pipe_schedules(reg);
    return reg;
  }();
  return r;
}

bubblesim::sim::PerDeviceCostModel costs(int p) {
  using bubblesim::sim::ms_to_ns;
  return bubblesim::sim::PerDeviceCostModel::uniform(
      {ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 1.0, 0.5}, p);
}

// Simulation only: the schedule is generated once, outside the timed loop.
void BM_Simulate(benchmark::State& state, const char* name) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const auto schedule = registry().get(name).generate(ScheduleParams{p, m, 1});
  const auto model = costs(p);
  for (auto _ : state) {
    auto timeline = bubblesim::sim::Engine(schedule, model).run();
    benchmark::DoNotOptimize(timeline);
  }
  const auto ops = static_cast<double>(schedule.num_ops());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(schedule.num_ops()));
  state.counters["ops"] = ops;
}

// The run with a network (sim/network.h): every device pair on its own two ports (out, in) of
// 300 GB/s and 3 us, 28 MB per transfer, so transfers share ports when they overlap.
void BM_SimulateNetwork(benchmark::State& state, const char* name) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const auto schedule = registry().get(name).generate(ScheduleParams{p, m, 1});
  std::vector<bubblesim::sim::DeviceCosts> devices(static_cast<std::size_t>(p),
                                                   costs(1).devices().front());
  for (auto& d : devices)
    d.comm_bytes = 28e6;
  const bubblesim::sim::PerDeviceCostModel model(devices);
  bubblesim::sim::Network net(p);
  std::vector<int> out, in;
  for (int d = 0; d < p; ++d) {
    out.push_back(net.add_link({300e9, 3000}));
    in.push_back(net.add_link({300e9, 0}));
  }
  for (int a = 0; a < p; ++a)
    for (int b = 0; b < p; ++b)
      if (a != b)
        net.set_route(a, b, {out[static_cast<std::size_t>(a)], in[static_cast<std::size_t>(b)]});
  for (auto _ : state) {
    bubblesim::sim::Engine engine(schedule, model);
    engine.set_network(net);
    auto timeline = engine.run();
    benchmark::DoNotOptimize(timeline);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(schedule.num_ops()));
  state.counters["ops"] = static_cast<double>(schedule.num_ops());
}

// Peak heap per op of schedule + engine state + timeline, from generation to the end of a run.
void BM_BytesPerOp(benchmark::State& state, const char* name) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const auto model = costs(p);
  double per_op = 0;
  for (auto _ : state) {
    bubblesim::bench::reset_peak_heap();
    const std::size_t base = bubblesim::bench::live_heap_bytes();
    const auto schedule = registry().get(name).generate(ScheduleParams{p, m, 1});
    auto timeline = bubblesim::sim::Engine(schedule, model).run();
    benchmark::DoNotOptimize(timeline);
    per_op = static_cast<double>(bubblesim::bench::peak_heap_bytes() - base) /
             static_cast<double>(schedule.num_ops());
  }
  state.counters["bytes_per_op"] = per_op;
}

// The V schedules are built by simulating candidates, then improved: generation plus the final
// simulation, with the 1.5B example's times (target: <= 10 ms at p = 32, m = 256).
void BM_VGenerateAndSimulate(benchmark::State& state, const char* name) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const auto model = bubblesim::sim::PerDeviceCostModel::uniform(
      {bubblesim::sim::ms_to_ns(18.522), bubblesim::sim::ms_to_ns(18.086),
       bubblesim::sim::ms_to_ns(9.337), bubblesim::sim::ms_to_ns(0.601), 1.0, 0.5},
      p, 2);
  for (auto _ : state) {
    const auto schedule = registry().get(name).generate(ScheduleParams{p, m, 2, &model});
    auto result = bubblesim::sim::simulate(schedule, model);
    benchmark::DoNotOptimize(result);
  }
}

// zb-2p with per-stage costs (F, B, W up to 20% apart, a fixed pattern): the automatic
// scheduler plus the simulation of its schedule (issue 3's targets: <= 3 ms at p = 32,
// m = 128; <= 50 ms at p = 64, m = 512).
void BM_ZbAutoScheduleAndSimulate(benchmark::State& state) {
  using bubblesim::sim::ms_to_ns;
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  std::vector<bubblesim::sim::DeviceCosts> devices;
  for (int s = 0; s < p; ++s) {
    const double f = 18.5 * (1 + 0.04 * ((s * 7) % 11 - 5));
    devices.push_back(
        {ms_to_ns(f), ms_to_ns(f * 0.98), ms_to_ns(f * 0.5), ms_to_ns(0.6), 1.0, 0.5});
  }
  const bubblesim::sim::PerDeviceCostModel model(devices);
  double bubble = 0;
  for (auto _ : state) {
    const auto schedule = registry().get("zb-2p").generate(ScheduleParams{p, m, 1, &model});
    auto result = bubblesim::sim::simulate(schedule, model);
    bubble = result.metrics.bubble_rate;
    benchmark::DoNotOptimize(result);
  }
  state.counters["bubble_rate"] = bubble;
}

}  // namespace

BENCHMARK(BM_ZbAutoScheduleAndSimulate)
    ->Args({32, 128})
    ->Args({64, 512})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_VGenerateAndSimulate, zb_v, "zb-v")
    ->Args({32, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_VGenerateAndSimulate, v_half, "v-half")
    ->Args({32, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_VGenerateAndSimulate, v_min, "v-min")
    ->Args({32, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, 1f1b, "1f1b")
    ->Args({64, 4096})
    ->Args({8, 64})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, zb_h1, "zb-h1")
    ->Args({64, 4096})
    ->Args({8, 64})
    ->Unit(benchmark::kMillisecond);
// The engine's general path: routes and overlapped pairs.
BENCHMARK_CAPTURE(BM_Simulate, dualpipe, "dualpipe")
    ->Args({64, 4096})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateNetwork, zb_h1, "zb-h1")
    ->Args({8, 1024})
    ->Args({64, 4096})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BytesPerOp, 1f1b, "1f1b")
    ->Args({64, 4096})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BytesPerOp, zb_h1, "zb-h1")
    ->Args({64, 4096})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
