// Throughput, one definition for all of bubblesim: what `gpus` GPUs process in one iteration
// (samples, or microbatches when the sample count is unknown), per GPU per second. The run
// summary (samples per GPU per second, the paper's figure), the reports (microbatches per GPU
// per second, as results files do not keep the model) and advise all use it.
#pragma once

namespace bubblesim::analysis {

// `processed` / (iteration_ms / 1000) / `gpus`; 0 when the iteration time or the GPU count is
// not positive.
double per_gpu_per_s(double processed, double gpus, double iteration_ms);

}  // namespace bubblesim::analysis
