// The analytical cost and memory model of a transformer split into pipeline stages: the
// zero-bubble paper's GPT-like model (../shared/reference/zero-bubble.md §1), widened to the
// shapes of current models by optional fields: grouped-query attention (kv_heads key and value
// heads, g = kv_heads / heads), the MLP's inner width f (ffn_hidden, default 4h), a gated MLP
// (SwiGLU: gate, up and down projections, k = 3 matrices of h x f instead of 2), rotary
// positions, a fused attention kernel and activation recomputation (below).
//
// Per transformer layer and microbatch (sequence s, microbatch size b, hidden h, heads a), with
// the linear layers' FLOPs per token L = 2h^2 (2 + 2g) + 2khf (QKV, output projection, MLP):
//   FLOPs  F: sb(L + 4sh)   B: sb(L + 8sh)   W: sb L
//   activation bytes (fp16, kept from F until B) M_B = sb(h(14 + 4g) + (4 or 8 gated) f) + 5as^2 b
//   (the paper's 34h + 5as: the attention's input, Q, K, V, output-projection input and dropout
//   mask; the MLP's input, its inner tensors (2: before and after the activation; gated 4:
//   gate, activated gate, up and their product) and dropout mask; two norms' inputs), and
//   M_W = sb(12h + 4gh + (4 or 6 gated) f) (each linear layer's input and output gradient, what
//   W needs; the paper's 32sbh).
// With kv_heads = heads, ffn_hidden = 4h and no gate these are exactly the paper's formulas.
// flash_attention (a fused attention kernel, as FlashAttention) keeps no s x s tensors (M_B
// loses its 5as^2 b) and recomputes the scores in B (B: sb(L + 10sh), the kernel's 2.5 times
// its forward attention FLOPs). Activation recomputation (Megatron's granularities): selective
// recomputes the attention core in B (without flash attention: M_B loses its 5as^2 b, B adds
// the core's forward, 4s sbh); full keeps only each layer's input (M_B = 2sbh per layer) and
// runs the layer's whole forward again in B (B adds F); W's M_W stays.
// The first stage also holds the token embeddings and, unless position_embeddings is false
// (rotary models), the learned position embeddings (compute neglected); the last stage the
// output head: 2sbhV FLOPs in each of F, B and W, and its fp16 logits, 2sbV bytes, held like
// an activation. Layers per stage: the paper's rule when it fits (p stages hold layers + 2
// slots: the first and last stage one layer fewer), else as even as possible with the extra
// layers on the later stages.
// Static memory: mixed-precision Adam keeps 16 bytes per parameter (fp16 weight 2, fp16
// gradient 2, fp32 master weight 4, Adam moments 4 + 4); a layer has h^2 (2 + 2g) + khf
// weights, biases on every projection ((3 + 2g)h + (k - 1)f) and two norms' 4h (the paper's
// 12h^2 + 13h), the embeddings (V + s)h (Vh without position embeddings), the head Vh (its
// own copy, as pipeline-parallel Megatron keeps) and the final norm's 2h.
// Times: FLOPs over the GPU's dense BF16 peak times an efficiency (default 0.45; the paper's
// 1.5B profile on A100s implies about 0.44).
#pragma once

#include <string>
#include <vector>

#include "models/gpu_catalogue.h"

namespace bubblesim::models {

enum class Recompute { None, Selective, Full };

struct TransformerConfig {
  std::string name;                 // for reports
  int layers = 0;                   // transformer layers
  int hidden = 0;                   // h
  int heads = 0;                    // a
  int seq_len = 0;                  // s
  int vocab = 0;                    // V
  int microbatch_size = 1;          // b
  std::vector<int> stage_layers;    // optional explicit split, one entry per stage
  int kv_heads = 0;                 // key and value heads (grouped-query attention); 0: heads
  int ffn_hidden = 0;               // the MLP's inner width f; 0: 4 * hidden
  bool gated_mlp = false;           // SwiGLU-style MLP: three h x f matrices instead of two
  bool position_embeddings = true;  // learned position embeddings (false: rotary, none)
  bool flash_attention = false;     // fused attention: no s x s activations, scores recomputed
  Recompute recompute = Recompute::None;  // activation recomputation in B
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

// B's share of one layer's backward, B / (B + W) FLOPs: the split of a trace's fused backward
// (the paper's (24h + 8s) : 24h for its GPT; 0.5 as s / h falls).
double backward_b_share(const TransformerConfig& model);

// Time of `flops` on `gpu` at `efficiency` (0 < efficiency <= 1), in ms.
double flops_to_ms(double flops, const GpuSpec& gpu, double efficiency);

// Reads a model description (YAML: name, layers, hidden, heads, seq_len, vocab,
// microbatch_size, optional stage_layers, kv_heads, ffn_hidden, gated_mlp,
// position_embeddings, flash_attention, recompute: none, selective or full). Throws InvalidArgument
// naming the file, the line and the key for a missing, unknown or out-of-range field (kv_heads must
// divide heads).
TransformerConfig load_transformer(const std::string& path);

}  // namespace bubblesim::models
