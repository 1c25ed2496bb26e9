#include "analysis/throughput.h"

namespace bubblesim::analysis {

double per_gpu_per_s(double processed, double gpus, double iteration_ms) {
  if (!(iteration_ms > 0) || !(gpus > 0)) return 0;
  return processed / (iteration_ms / 1e3) / gpus;
}

}  // namespace bubblesim::analysis
