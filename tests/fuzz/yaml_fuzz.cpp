// The YAML loaders: BUBBLESIM_FUZZ_YAML picks which at build time (1 model, 2 cluster, 3 study,
// 4 calibrate's measured runs, 5 a calibration, with the round trip of every accepted one).
#include <cstdlib>

#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#if BUBBLESIM_FUZZ_YAML == 1
#include "models/transformer.h"
#elif BUBBLESIM_FUZZ_YAML == 2
#include "models/cluster.h"
#elif BUBBLESIM_FUZZ_YAML == 5
#include "analysis/calibration.h"
#else
#include "analysis/study.h"
#endif

#if BUBBLESIM_FUZZ_YAML == 5
namespace {

// Whether `text` is valid UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
// YAML cannot hold other bytes (the writer puts U+FFFD for them).
bool valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3
                                        : (lead >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    std::uint32_t code = n == 1 ? lead : lead & (0x7fu >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next >> 6) != 0x2) return false;
      code = (code << 6) | (next & 0x3fu);
    }
    const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < least[n] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

// A calibration the loader accepts must write and read back to itself (the fit's error figures
// are written to 6 decimals and not compared; `runs` only where it is valid UTF-8).
void check_round_trip(const bubblesim::analysis::Calibration& c) {
  const std::string text = bubblesim::analysis::calibration_yaml(c);
  const std::string path = bubblesim::fuzz::as_file(
      reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), "-again.yaml");
  bubblesim::analysis::Calibration back;
  try {
    back = bubblesim::analysis::load_calibration(path);
  } catch (const bubblesim::Error&) {
    std::abort();  // the loader refuses what the writer wrote
  }
  if (!(back.overheads == c.overheads) || back.p2p != c.p2p || back.efficiency != c.efficiency ||
      (back.runs != c.runs && valid_utf8(c.runs)) || back.num_runs != c.num_runs)
    std::abort();
}

}  // namespace
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = bubblesim::fuzz::as_file(data, size, ".yaml");
  try {
#if BUBBLESIM_FUZZ_YAML == 1
    const bubblesim::models::TransformerConfig model = bubblesim::models::load_transformer(path);
    for (int p : {1, 2, 4, 8}) {
      try {
        bubblesim::models::estimate_stages(model, p);
      } catch (const bubblesim::Error&) {
      }
    }
#elif BUBBLESIM_FUZZ_YAML == 2
    const bubblesim::models::Cluster cluster = bubblesim::models::load_cluster(path);
    try {
      const std::vector<int> placed = bubblesim::models::place(cluster, 2, 1);
      bubblesim::models::build_network(cluster, placed);
    } catch (const bubblesim::Error&) {
    }
#elif BUBBLESIM_FUZZ_YAML == 3
    const bubblesim::analysis::Study study = bubblesim::analysis::load_study(path, 100000);
    for (std::size_t i = 0; i < study.size() && i < 64; ++i)
      study.configuration(i).key();
#elif BUBBLESIM_FUZZ_YAML == 4
    const bubblesim::analysis::MeasuredRuns runs = bubblesim::analysis::load_measured_runs(path);
    if (runs.runs.empty()) std::abort();  // the loader promises a non-empty list
    for (const bubblesim::analysis::MeasuredRun& run : runs.runs) {
      if ((run.measured_iteration_ms > 0) == (run.measured_samples_per_gpu_per_s > 0))
        std::abort();  // exactly one measurement
      run.configuration.key();
    }
#else
    check_round_trip(bubblesim::analysis::load_calibration(path));
#endif
  } catch (const bubblesim::Error&) {
  }
  return 0;
}
