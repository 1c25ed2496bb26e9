// The YAML loaders: BUBBLESIM_FUZZ_YAML picks which at build time (model, cluster, study).
#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#if BUBBLESIM_FUZZ_YAML == 1
#include "models/transformer.h"
#elif BUBBLESIM_FUZZ_YAML == 2
#include "models/cluster.h"
#else
#include "analysis/study.h"
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
#else
    const bubblesim::analysis::Study study = bubblesim::analysis::load_study(path, 100000);
    for (std::size_t i = 0; i < study.size() && i < 64; ++i)
      study.configuration(i).key();
#endif
  } catch (const bubblesim::Error&) {
  }
  return 0;
}
