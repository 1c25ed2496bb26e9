// The analytical cost and memory model of a GPT-like transformer split into pipeline stages
// (../shared/reference/zero-bubble.md §1).
//
// Per transformer layer and microbatch (sequence s, microbatch size b, hidden h, heads a):
//   FLOPs  F: sbh(24h + 4s)   B: sbh(24h + 8s)   W: sbh(24h)
//   activation bytes  M_B = sb(34h + 5as) (kept from F until B), M_W = 32sbh (from B until W)
// The first stage also holds the token and position embeddings (compute neglected); the last
// stage the output head: 2sbhV FLOPs in each of F, B and W, and its fp16 logits, 2sbV bytes,
// held like an activation. Layers per stage: the paper's rule when it fits (p stages hold
// layers + 2 slots: the first and last stage one layer fewer), else as even as possible with
// the extra layers on the later stages.
// Static memory: mixed-precision Adam keeps 16 bytes per parameter (fp16 weight 2, fp16
// gradient 2, fp32 master weight 4, Adam moments 4 + 4); a layer has 12h^2 + 13h parameters,
// the embeddings (V + s)h, the head Vh (its own copy, as pipeline-parallel Megatron keeps).
// Times: FLOPs over the GPU's dense BF16 peak times an efficiency (default 0.45; the paper's
// 1.5B profile on A100s implies about 0.44).
#pragma once

#include <string>
#include <vector>

#include "models/gpu_catalogue.h"

namespace bubblesim::models {

struct TransformerConfig {
  std::string name;               // for reports
  int layers = 0;                 // transformer layers
  int hidden = 0;                 // h
  int heads = 0;                  // a
  int seq_len = 0;                // s
  int vocab = 0;                  // V
  int microbatch_size = 1;        // b
  std::vector<int> stage_layers;  // optional explicit split, one entry per stage
};

inline constexpr double kAdamBytesPerParameter = 16;
inline constexpr double kDefaultEfficiency = 0.45;

// One stage's share of the model for one microbatch.
struct StageEstimate {
  int layers = 0;
  double parameters = 0;
  double f_flops = 0, b_flops = 0, w_flops = 0;
  double m_b_bytes = 0;       // activation memory F allocates and B releases (M_B)
  double m_w_bytes = 0;       // what B keeps for W (M_W)
  double static_bytes = 0;    // parameters, gradients, optimizer state
  double transfer_bytes = 0;  // one activation (or its gradient) between stages: 2sbh
};

// Layers per stage for p stages (see above); throws InvalidArgument when an explicit split
// does not have p entries summing to `layers`, or when a stage would get no layer.
std::vector<int> split_layers(const TransformerConfig& model, int p);

// Per-stage estimates for p stages.
std::vector<StageEstimate> estimate_stages(const TransformerConfig& model, int p);

// Time of `flops` on `gpu` at `efficiency` (0 < efficiency <= 1), in ms.
double flops_to_ms(double flops, const GpuSpec& gpu, double efficiency);

// Reads a model description (YAML: name, layers, hidden, heads, seq_len, vocab,
// microbatch_size, optional stage_layers). Throws InvalidArgument naming the file, the line
// and the key for a missing, unknown or out-of-range field.
TransformerConfig load_transformer(const std::string& path);

}  // namespace bubblesim::models
