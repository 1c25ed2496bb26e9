// The GPU catalogue: the datasheet figures the analytical cost model needs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bubblesim::models {

struct GpuSpec {
  std::string name;                  // e.g. "A100-80GB"
  double dense_bf16_tflops = 0;      // peak dense BF16/FP16 tensor throughput, TFLOP/s
  double memory_gb = 0;              // HBM capacity, GB (10^9 bytes)
  double memory_bandwidth_gbps = 0;  // HBM bandwidth, GB/s
};

// The shipped presets, from NVIDIA's public datasheets (dense, without sparsity): A100-40GB,
// A100-80GB (SXM), H100-SXM, H200 (SXM), L40S.
const std::vector<GpuSpec>& gpu_presets();

// The presets' names, comma-separated, for help texts and error messages.
std::string gpu_preset_names();
// The preset named `name`; throws InvalidArgument listing the valid names.
const GpuSpec& find_gpu(std::string_view name);

}  // namespace bubblesim::models
