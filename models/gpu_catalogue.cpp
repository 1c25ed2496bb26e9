#include "models/gpu_catalogue.h"

#include "sim/error.h"

namespace bubblesim::models {

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = {
      {"A100-40GB", 312, 40, 1555}, {"A100-80GB", 312, 80, 2039}, {"H100-SXM", 989, 80, 3350},
      {"H200", 989, 141, 4800},     {"L40S", 362, 48, 864},
  };
  return presets;
}

std::string gpu_preset_names() {
  std::string names;
  for (const GpuSpec& gpu : gpu_presets())
    names += (names.empty() ? "" : ", ") + gpu.name;
  return names;
}

const GpuSpec& find_gpu(std::string_view name) {
  for (const GpuSpec& gpu : gpu_presets()) {
    if (gpu.name == name) return gpu;
  }
  throw InvalidArgument("unknown GPU type '" + std::string(name) +
                        "'; valid values are: " + gpu_preset_names());
}

}  // namespace bubblesim::models
