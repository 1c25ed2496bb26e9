// Writing results to HDF5 (issue 8's target: a run of 1M ops in <= 1 s). Part of
// bubblesim_bench, run by hand:
//   ./build/tests/bubblesim_bench --benchmark_filter=Results
#include <benchmark/benchmark.h>

#include <filesystem>

#include "analysis/results_file.h"
#include "analysis/run_record.h"
#include "sim/schedules/handcrafted.h"

namespace {

using namespace bubblesim;

// ZB-H1 at p = 64 with the 1.5B example's times: 3 p m ops (m = 5461: 1,048,512 ops), the
// simulation watched so that every transfer is recorded.
analysis::RunRecord zb_h1_record(int p, int m) {
  sim::ScheduleRegistry registry;
  sim::add_handcrafted_schedules(registry);
  const sim::Schedule schedule = registry.get("zb-h1").generate(sim::ScheduleParams{p, m, 1});
  const auto costs =
      sim::PerDeviceCostModel::uniform({sim::ms_to_ns(18.522), sim::ms_to_ns(18.086),
                                        sim::ms_to_ns(9.337), sim::ms_to_ns(0.601), 1.0, 0.5},
                                       p);
  sim::TransferLog log;
  sim::EngineObserver* observers[] = {&log};
  const sim::SimulationResult result = sim::simulate(schedule, costs, observers);
  analysis::RunRecord header;
  header.name = "zb-h1";
  header.parameters.schedule = "zb-h1";
  return analysis::make_run_record(header, schedule, costs, result, log.transfers());
}

// write_runs into a new file: datasets, compression, fsync and rename.
void BM_ResultsWriteRun(benchmark::State& state) {
  const analysis::RunRecord run =
      zb_h1_record(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const std::string path =
      (std::filesystem::temp_directory_path() / "bubblesim_results_bench.h5").string();
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove(path);
    state.ResumeTiming();
    analysis::write_runs(path, {run}, {"bench", "bench"});
  }
  state.counters["ops"] = static_cast<double>(run.ops.size());
  state.counters["transfers"] = static_cast<double>(run.transfers.size());
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(run.ops.size()));
  std::filesystem::remove(path);
}

// Reading the same run back.
void BM_ResultsReadRun(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "bubblesim_results_bench_read.h5").string();
  std::filesystem::remove(path);
  analysis::write_runs(
      path, {zb_h1_record(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)))},
      {"bench", "bench"});
  for (auto _ : state) {
    auto run = analysis::ResultsReader(path).read_run("zb-h1");
    benchmark::DoNotOptimize(run);
  }
  std::filesystem::remove(path);
}

// Simulating with the transfer log attached and building the record (what --out adds before
// writing).
void BM_ResultsRecordRun(benchmark::State& state) {
  for (auto _ : state) {
    auto run = zb_h1_record(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
    benchmark::DoNotOptimize(run);
  }
}

}  // namespace

BENCHMARK(BM_ResultsWriteRun)->Args({64, 5461})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ResultsReadRun)->Args({64, 5461})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ResultsRecordRun)->Args({64, 5461})->Unit(benchmark::kMillisecond)->UseRealTime();
