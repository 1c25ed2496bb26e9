// `bubblesim calibrate` of the zero-bubble paper's 12 measured 1.5B cells
// (models/examples/zb-1.5b-runs.yaml; issue 15's target: <= 2 s on one core): reading the runs,
// generating each schedule once, the fits with async and blocking transfers and the 12
// leave-one-out fits, and writing CAL.yaml. Part of bubblesim_bench, run by hand:
//   ./build/tests/bubblesim_bench --benchmark_filter=Calibrate
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "sim/cli/cli.h"

namespace {

namespace fs = std::filesystem;

void BM_CalibrateTwelvePaperRuns(benchmark::State& state) {
  const std::string runs = BUBBLESIM_SOURCE_DIR "/models/examples/zb-1.5b-runs.yaml";
  const fs::path out =
      fs::temp_directory_path() / ("bubblesim_calibrate_bench_" + std::to_string(::getpid()));
  for (auto _ : state) {
    std::ostringstream stdout_text, stderr_text;
    const int status =
        bubblesim::cli::run({"calibrate", runs, "--out", out.string()}, stdout_text, stderr_text);
    if (status != 0) state.SkipWithError(stderr_text.str().c_str());
  }
  state.counters["runs"] = 12;
  fs::remove(out);
}
BENCHMARK(BM_CalibrateTwelvePaperRuns)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
