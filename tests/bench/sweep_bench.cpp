// `bubblesim sweep` of 10,000 small configurations (p = 8, m = 32; issue 8's target: <= 10 s on
// 2 cores), study parsing and HDF5 writes included. Part of bubblesim_bench, run by hand:
//   ./build/tests/bubblesim_bench --benchmark_filter=Sweep
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.h"

namespace {

namespace fs = std::filesystem;

// 5 schedules x 20 F x 10 B x 10 comm times. The schedules are the closed-form ones; zb-v
// (whose generator searches, about 11 ms a configuration here) would dominate the figure.
std::string study_text() {
  std::ostringstream text;
  text << "fixed: {p: 8, m: 32, w: 0.5}\naxes:\n  schedule: [gpipe, 1f1b, zb-h1, zb-h2, 1f1b-i]\n";
  const auto axis = [&](const char* name, int n, double from, double step) {
    text << "  " << name << ": [";
    for (int i = 0; i < n; ++i)
      text << (i != 0 ? ", " : "") << from + i * step;
    text << "]\n";
  };
  axis("f", 20, 1.0, 0.05);
  axis("b", 10, 1.0, 0.1);
  axis("comm", 10, 0.0, 0.02);
  return text.str();
}

void BM_Sweep10kConfigurations(benchmark::State& state) {
  const fs::path dir =
      fs::temp_directory_path() / ("bubblesim_sweep_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string study = (dir / "study.yaml").string(), out = (dir / "sweep.h5").string();
  std::ofstream(study) << study_text();
  const std::string jobs = std::to_string(state.range(0));
  for (auto _ : state) {
    fs::remove(out);
    std::ostringstream stdout_text, stderr_text;
    const int status = bubblesim::cli::run(
        {"sweep", study, "--out", out, "-j", jobs, "--progress", "none"}, stdout_text, stderr_text);
    if (status != 0) state.SkipWithError(stderr_text.str().c_str());
  }
  state.counters["configurations"] = 10000;
  state.counters["configurations/s"] =
      benchmark::Counter(10000.0 * state.iterations(), benchmark::Counter::kIsRate);
  fs::remove_all(dir);
}
BENCHMARK(BM_Sweep10kConfigurations)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
