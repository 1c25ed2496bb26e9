// Kineto import throughput and memory, and the Perfetto export (issue 6's benchmark). Run by
// hand: cmake --build build --target bubblesim_bench && ./build/tests/bubblesim_bench
// --benchmark_filter='Import|Export'. Never part of the test suite.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "heap.h"
#include "sim/engine.h"
#include "sim/schedules/handcrafted.h"
#include "traces/kineto_trace.h"
#include "traces/perfetto_export.h"

namespace {

using bubblesim::traces::PipeliningLabeller;

struct SyntheticTrace {
  std::string plain_path, gzip_path;
  std::size_t bytes = 0;            // of the JSON text
  std::size_t retained_events = 0;  // kernels + launches + labelled ranges
};

// A trace shaped like the real ones (../shared/data/traces): per pass a labelled range on the
// main thread and per kernel a cpu_op, its cudaLaunchKernel and the kernel with the
// profiler's usual args, 40 kernels per pass. About `megabytes` of JSON.
const SyntheticTrace& synthetic_trace(int megabytes) {
  static SyntheticTrace t;
  if (t.bytes != 0) return t;
  t.plain_path = "/tmp/bubblesim_bench_trace.json";
  t.gzip_path = t.plain_path + ".gz";
  std::string text = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  char line[2048];
  long long ts = 1682725898000000, correlation = 1;
  for (int pass = 0; text.size() < static_cast<std::size_t>(megabytes) << 20; ++pass) {
    const char kinds[] = {'F', 'I', 'W'};
    std::snprintf(line, sizeof line,
                  "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"PP:%d%c%d\", "
                  "\"pid\": 4037, \"tid\": 4037, \"ts\": %lld.125, \"dur\": 4000.5, \"args\": "
                  "{\"External id\": %d, \"Record function id\": 0}},\n",
                  pass % 4, kinds[pass % 3], pass / 12, ts, pass);
    text += line;
    ++t.retained_events;
    for (int k = 0; k < 40; ++k, ++correlation, ts += 100) {
      std::snprintf(
          line, sizeof line,
          "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 4037, \"tid\": "
          "4037, \"ts\": %lld.5, \"dur\": 20.25, \"args\": {\"External id\": %lld, \"Ev Idx\": "
          "%lld, \"Input Dims\": [[512, 1024], [1024, 4096]], \"Input type\": [\"float\", "
          "\"float\"]}},\n"
          "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
          "4037, \"tid\": 4037, \"ts\": %lld.75, \"dur\": 5.5, \"args\": {\"External id\": %lld, "
          "\"cbid\": 211, \"correlation\": %lld}},\n"
          "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void cutlass::Kernel<cutlass_80_"
          "tensorop_s1688gemm_128x128_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_"
          "nn_align4::Params)\", \"pid\": 0, \"tid\": 7, \"ts\": %lld.25, \"dur\": 61.375, "
          "\"args\": {\"External id\": %lld, \"queued\": 0, \"device\": 0, \"context\": 1, "
          "\"stream\": 7, \"correlation\": %lld, \"registers per thread\": 128, \"shared "
          "memory\": 65536, \"blocks per SM\": 1.185185, \"warps per SM\": 4.740741, \"grid\": "
          "[128, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %%\": 6}},\n",
          ts, correlation, correlation, ts + 1, correlation, correlation, ts + 30, correlation,
          correlation);
      text += line;
      t.retained_events += 2;
    }
  }
  text +=
      "{\"ph\": \"i\", \"name\": \"end\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"s\": \"g\"}\n]}\n";
  t.bytes = text.size();
  std::ofstream(t.plain_path, std::ios::binary) << text;
  gzFile gz = gzopen(t.gzip_path.c_str(), "wb6");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  return t;
}

// Throughput in bytes of uncompressed JSON per second, and the peak heap of an import per
// event it keeps.
void BM_ImportKineto(benchmark::State& state, bool gzip) {
  const SyntheticTrace& t = synthetic_trace(static_cast<int>(state.range(0)));
  const PipeliningLabeller labeller;
  double per_event = 0;
  for (auto _ : state) {
    bubblesim::bench::reset_peak_heap();
    const std::size_t base = bubblesim::bench::live_heap_bytes();
    auto profile =
        bubblesim::traces::import_kineto_traces({gzip ? t.gzip_path : t.plain_path}, labeller);
    benchmark::DoNotOptimize(profile);
    per_event = static_cast<double>(bubblesim::bench::peak_heap_bytes() - base) /
                static_cast<double>(t.retained_events);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(t.bytes));
  state.counters["json_MB"] = static_cast<double>(t.bytes) / 1e6;
  state.counters["retained_events"] = static_cast<double>(t.retained_events);
  state.counters["peak_bytes_per_event"] = per_event;
}

// The Perfetto export of a simulated ZB-H1 run of about 1M ops (p = 64, m = 5462).
void BM_ExportPerfetto(benchmark::State& state) {
  using bubblesim::sim::ms_to_ns;
  const int p = 64, m = static_cast<int>(state.range(0));
  const auto costs = bubblesim::sim::PerDeviceCostModel::uniform(
      {ms_to_ns(18.522), ms_to_ns(18.086), ms_to_ns(9.337), ms_to_ns(0.601), 1.0, 0.5}, p);
  bubblesim::sim::ScheduleRegistry registry;
  bubblesim::sim::add_handcrafted_schedules(registry);
  const auto schedule = registry.get("zb-h1").generate({p, m, 1});
  bubblesim::sim::Engine engine(schedule, costs);
  bubblesim::sim::TransferLog transfers;
  engine.add_observer(transfers);
  const auto timeline = engine.run();
  const std::string path = "/tmp/bubblesim_bench_export.json";
  for (auto _ : state) {
    bubblesim::traces::save_perfetto_trace(path, schedule, timeline, transfers.transfers(), costs);
  }
  std::ifstream written(path, std::ios::binary | std::ios::ate);
  state.counters["ops"] = static_cast<double>(schedule.num_ops());
  state.counters["file_MB"] = static_cast<double>(written.tellg()) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(schedule.num_ops()));
}

}  // namespace

BENCHMARK_CAPTURE(BM_ImportKineto, plain, false)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ImportKineto, gzip, true)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExportPerfetto)->Arg(5462)->Unit(benchmark::kMillisecond);
