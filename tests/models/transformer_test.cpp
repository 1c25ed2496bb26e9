// The transformer cost and memory model and its YAML files (../shared/reference/zero-bubble.md
// §1, §8).
#include "models/transformer.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "sim/error.h"

namespace bubblesim::models {
namespace {

TransformerConfig tiny() {
  TransformerConfig m;
  m.name = "tiny";
  m.layers = 6;
  m.hidden = 64;
  m.heads = 4;
  m.seq_len = 32;
  m.vocab = 100;
  m.microbatch_size = 2;
  return m;
}

TEST(Transformer, SplitsLayersThePapersWayWhenTheyFit) {
  TransformerConfig m = tiny();
  m.layers = 22;
  EXPECT_EQ(split_layers(m, 8), (std::vector<int>{2, 3, 3, 3, 3, 3, 3, 2}));
  m.layers = 10;
  EXPECT_EQ(split_layers(m, 4), (std::vector<int>{2, 3, 3, 2}));
  m.layers = 7;  // 9 slots do not split over 2 stages: as even as possible, extra at the end
  EXPECT_EQ(split_layers(m, 2), (std::vector<int>{3, 4}));
  m.layers = 3;
  EXPECT_THROW(split_layers(m, 4), InvalidArgument);
  m.layers = 6;
  m.stage_layers = {1, 5};
  EXPECT_EQ(split_layers(m, 2), (std::vector<int>{1, 5}));
  EXPECT_THROW(split_layers(m, 3), InvalidArgument);
}

TEST(Transformer, StageEstimatesFollowTheReferenceFormulas) {
  const TransformerConfig m = tiny();  // 6 layers on 2 stages: (6+2)/2 = 4 slots, so 3 + 3
  const std::vector<StageEstimate> e = estimate_stages(m, 2);
  ASSERT_EQ(e.size(), 2u);
  const double s = 32, b = 2, h = 64, a = 4, v = 100, sbh = s * b * h;
  EXPECT_EQ(e[0].layers, 3);
  EXPECT_DOUBLE_EQ(e[0].f_flops, 3 * sbh * (24 * h + 4 * s));
  EXPECT_DOUBLE_EQ(e[0].b_flops, 3 * sbh * (24 * h + 8 * s));
  EXPECT_DOUBLE_EQ(e[0].w_flops, 3 * sbh * 24 * h);
  EXPECT_DOUBLE_EQ(e[0].m_b_bytes, 3 * s * b * (34 * h + 5 * a * s));
  EXPECT_DOUBLE_EQ(e[0].m_w_bytes, 3 * 32 * sbh);
  EXPECT_DOUBLE_EQ(e[0].parameters, 3 * (12 * h * h + 13 * h) + (v + s) * h);
  EXPECT_DOUBLE_EQ(e[0].static_bytes, 16 * e[0].parameters);
  EXPECT_DOUBLE_EQ(e[0].transfer_bytes, 2 * sbh);
  // The last stage adds the head: 2sbhV FLOPs per pass, its logits, its Vh + 2h parameters.
  EXPECT_DOUBLE_EQ(e[1].f_flops, 3 * sbh * (24 * h + 4 * s) + 2 * sbh * v);
  EXPECT_DOUBLE_EQ(e[1].w_flops, 3 * sbh * 24 * h + 2 * sbh * v);
  EXPECT_DOUBLE_EQ(e[1].m_b_bytes, 3 * s * b * (34 * h + 5 * a * s) + 2 * s * b * v);
  EXPECT_DOUBLE_EQ(e[1].parameters, 3 * (12 * h * h + 13 * h) + v * h + 2 * h);
  // Times: FLOPs over peak times efficiency.
  EXPECT_DOUBLE_EQ(flops_to_ms(312e12 * 0.5 * 2e-3, find_gpu("A100-80GB"), 0.5), 2.0);
}

TEST(Transformer, TheNewFieldsAtTheirDefaultsAreThePapersModel) {
  const TransformerConfig paper = tiny();
  TransformerConfig spelled = tiny();
  spelled.kv_heads = spelled.heads;
  spelled.ffn_hidden = 4 * spelled.hidden;
  spelled.gated_mlp = false;
  spelled.position_embeddings = true;
  const std::vector<StageEstimate> a = estimate_stages(paper, 2), b = estimate_stages(spelled, 2);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(a[i].f_flops, b[i].f_flops);
    EXPECT_DOUBLE_EQ(a[i].b_flops, b[i].b_flops);
    EXPECT_DOUBLE_EQ(a[i].w_flops, b[i].w_flops);
    EXPECT_DOUBLE_EQ(a[i].m_b_bytes, b[i].m_b_bytes);
    EXPECT_DOUBLE_EQ(a[i].m_w_bytes, b[i].m_w_bytes);
    EXPECT_DOUBLE_EQ(a[i].parameters, b[i].parameters);
  }
}

// Grouped-query attention and a gated MLP, counted here matrix by matrix and tensor by tensor
// (not with the header's folded formulas).
TEST(Transformer, GroupedQueryAttentionAndAGatedMlpCountEachMatrixAndTensor) {
  TransformerConfig m = tiny();  // h = 64, a = 4, s = 32, b = 2, 3 + 3 layers
  m.kv_heads = 1;
  m.ffn_hidden = 96;
  m.gated_mlp = true;
  m.position_embeddings = false;
  const double s = 32, b = 2, h = 64, a = 4, v = 100, f = 96, kv = h / a;  // K and V width 16
  // Weight matrices (in x out) of one layer: Q, K, V, output, gate, up, down.
  const double weights = h * h + h * kv + h * kv + h * h + h * f + h * f + f * h;
  const double biases = (h + kv + kv) + h + f + f + h;
  const double norms = 2 * 2 * h;
  const double tokens = s * b;
  const double linear_flops = 2 * weights * tokens;       // a multiply-add per weight and token
  const double attention_flops = 2 * 2 * s * h * tokens;  // QK^T and the weighted sum of V
  // Kept from F until B, bytes per token (fp16): QKV input, Q, K, V, output-projection input,
  // dropout mask (1 byte); MLP input, gate, activated gate, up, their product, dropout mask;
  // two norm inputs; then the scores, softmax mask and dropout output, 5 a s bytes.
  const double m_b = 2 * h + 2 * h + 2 * kv + 2 * kv + 2 * h + h + 2 * h + 2 * f + 2 * f + 2 * f +
                     2 * f + h + 2 * 2 * h + 5 * a * s;
  // What W needs: each linear layer's input and output gradient (QKV fused, gate and up fused).
  const double m_w =
      (2 * h + 2 * (h + 2 * kv)) + (2 * h + 2 * h) + (2 * h + 2 * 2 * f) + (2 * f + 2 * h);
  const std::vector<StageEstimate> e = estimate_stages(m, 2);
  EXPECT_DOUBLE_EQ(e[0].f_flops, 3 * (linear_flops + attention_flops));
  EXPECT_DOUBLE_EQ(e[0].b_flops, 3 * (linear_flops + 2 * attention_flops));
  EXPECT_DOUBLE_EQ(e[0].w_flops, 3 * linear_flops);
  EXPECT_DOUBLE_EQ(e[0].m_b_bytes, 3 * tokens * m_b);
  EXPECT_DOUBLE_EQ(e[0].m_w_bytes, 3 * tokens * m_w);
  EXPECT_DOUBLE_EQ(e[0].parameters, 3 * (weights + biases + norms) + v * h);  // no positions
  EXPECT_DOUBLE_EQ(e[1].parameters, 3 * (weights + biases + norms) + v * h + 2 * h);
  // A fused attention kernel keeps none of the s x s tensors and recomputes QK^T in B.
  m.flash_attention = true;
  const std::vector<StageEstimate> fused = estimate_stages(m, 2);
  EXPECT_DOUBLE_EQ(fused[0].f_flops, e[0].f_flops);
  EXPECT_DOUBLE_EQ(fused[0].b_flops, e[0].b_flops + 3 * 2 * s * h * tokens);
  EXPECT_DOUBLE_EQ(fused[0].w_flops, e[0].w_flops);
  EXPECT_DOUBLE_EQ(fused[0].m_b_bytes, e[0].m_b_bytes - 3 * tokens * 5 * a * s);
  EXPECT_DOUBLE_EQ(fused[0].m_w_bytes, e[0].m_w_bytes);
}

// Recomputation trades B's FLOPs for activations: selective recomputes the attention core
// (its forward, 4sh FLOPs per token) and keeps no s x s tensors; full keeps each layer's input
// only and runs the layer's forward again. W and what it needs are unchanged.
TEST(Transformer, RecomputationTradesBackwardFlopsForActivations) {
  TransformerConfig m = tiny();  // the paper's GPT layer: 3 + 3 layers, h = 64, a = 4
  const double s = 32, b = 2, h = 64, sbh = s * b * h;
  const StageEstimate plain = estimate_stages(m, 2)[0];
  m.recompute = Recompute::Selective;
  const StageEstimate selective = estimate_stages(m, 2)[0];
  EXPECT_DOUBLE_EQ(selective.f_flops, plain.f_flops);
  EXPECT_DOUBLE_EQ(selective.b_flops, 3 * sbh * (24 * h + 12 * s));
  EXPECT_DOUBLE_EQ(selective.w_flops, plain.w_flops);
  EXPECT_DOUBLE_EQ(selective.m_b_bytes, 3 * 34 * sbh);
  EXPECT_DOUBLE_EQ(selective.m_w_bytes, plain.m_w_bytes);
  m.flash_attention = true;  // nothing left to recompute: flash attention's own numbers
  const StageEstimate flash_selective = estimate_stages(m, 2)[0];
  EXPECT_DOUBLE_EQ(flash_selective.b_flops, 3 * sbh * (24 * h + 10 * s));
  EXPECT_DOUBLE_EQ(flash_selective.m_b_bytes, 3 * 34 * sbh);
  m.flash_attention = false;
  m.recompute = Recompute::Full;
  const StageEstimate full = estimate_stages(m, 2)[0];
  EXPECT_DOUBLE_EQ(full.b_flops, 3 * sbh * (24 * h + 4 * s) + 3 * sbh * (24 * h + 8 * s));
  EXPECT_DOUBLE_EQ(full.m_b_bytes, 3 * 2 * sbh);
  EXPECT_DOUBLE_EQ(full.m_w_bytes, 3 * 32 * sbh);
  EXPECT_DOUBLE_EQ(full.w_flops, plain.w_flops);
}

TEST(Transformer, BackwardShareIsTheLayersFlopRatio) {
  TransformerConfig m = tiny();
  m.hidden = 1600;
  m.heads = 16;
  m.seq_len = 1024;
  EXPECT_DOUBLE_EQ(backward_b_share(m), (24.0 * 1600 + 8 * 1024) / (48.0 * 1600 + 8 * 1024));
  m.seq_len = 1;
  m.hidden = 1 << 20;
  EXPECT_NEAR(backward_b_share(m), 0.5, 1e-6);
  // Full recomputation runs the forward again inside B: (24h + 4s) + (24h + 8s) : 24h.
  m.hidden = 1600;
  m.seq_len = 1024;
  m.recompute = Recompute::Full;
  EXPECT_DOUBLE_EQ(backward_b_share(m), (48.0 * 1600 + 12 * 1024) / (72.0 * 1600 + 12 * 1024));
}

// The published sizes of two open models (their model cards: 6.74B and 8.03B parameters, exactly
// 6,738,415,616 and 8,030,261,248), which have no projection biases and RMSNorm scales only:
// bubblesim's count, with biases and two-parameter norms, stays within 0.05% of them.
TEST(Transformer, CountsThePublishedSizesOfTwoOpenModels) {
  auto total = [](const TransformerConfig& m) {
    double sum = 0;
    for (const StageEstimate& e : estimate_stages(m, 4))
      sum += e.parameters;
    return sum;
  };
  TransformerConfig llama2;
  llama2.layers = 32;
  llama2.hidden = 4096;
  llama2.heads = 32;
  llama2.ffn_hidden = 11008;
  llama2.gated_mlp = true;
  llama2.position_embeddings = false;
  llama2.seq_len = 4096;
  llama2.vocab = 32000;
  EXPECT_NEAR(total(llama2) / 6'738'415'616.0, 1.0, 5e-4);
  const TransformerConfig llama3 =
      load_transformer(BUBBLESIM_SOURCE_DIR "/models/examples/llama3-8b.yaml");
  EXPECT_EQ(llama3.kv_heads, 8);
  EXPECT_EQ(llama3.ffn_hidden, 14336);
  EXPECT_TRUE(llama3.gated_mlp);
  EXPECT_FALSE(llama3.position_embeddings);
  EXPECT_TRUE(llama3.flash_attention);
  EXPECT_EQ(llama3.recompute, Recompute::None);
  EXPECT_NEAR(total(llama3) / 8'030'261'248.0, 1.0, 5e-4);
}

TEST(Transformer, CataloguesTheDatasheetGpus) {
  EXPECT_EQ(find_gpu("H100-SXM").dense_bf16_tflops, 989);
  EXPECT_EQ(find_gpu("A100-40GB").memory_gb, 40);
  EXPECT_EQ(find_gpu("H200").memory_gb, 141);
  EXPECT_EQ(find_gpu("L40S").memory_gb, 48);
  try {
    find_gpu("V100");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown GPU type 'V100'; valid values are: A100-40GB, A100-80GB, H100-SXM, H200, "
                 "L40S");
  }
}

std::string write_file(const std::string& text) {
  const std::string path = bubblesim::testing::temp_path("model_test.yaml");
  std::ofstream(path) << text;
  return path;
}

TEST(Transformer, ReadsTheShippedExample) {
  const TransformerConfig m =
      load_transformer(BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml");
  EXPECT_EQ(m.name, "gpt-1.5b");
  EXPECT_EQ(m.layers, 22);
  EXPECT_EQ(m.hidden, 2304);
  EXPECT_EQ(m.heads, 24);
  EXPECT_EQ(m.seq_len, 1024);
  EXPECT_EQ(m.microbatch_size, 6);
}

TEST(Transformer, BadFilesNameTheLineAndKey) {
  const std::string ok = "layers: 4\nhidden: 64\nheads: 4\nseq_len: 32\nvocab: 100\n";
  const std::pair<std::string, std::string> cases[] = {
      {"hidden: 64\nheads: 4\nseq_len: 32\nvocab: 100\n", "line 1: missing key 'layers'"},
      {ok + "hiden: 3\n", "line 6: unknown key 'hiden'; valid keys are:"},
      {"layers: -2\nhidden: 64\nheads: 4\nseq_len: 32\nvocab: 100\n",
       "line 1: key 'layers': expected a whole number from 1 to 16777216, got '-2'"},
      {"layers: 4\nhidden: 64\nheads: 5\nseq_len: 32\nvocab: 100\n",
       "line 3: key 'heads': must divide hidden = 64"},
      {ok + "kv_heads: 3\n", "line 6: key 'kv_heads': must divide heads = 4"},
      {ok + "gated_mlp: maybe\n", "line 6: key 'gated_mlp': expected true or false, got 'maybe'"},
      {ok + "ffn_hidden: 0\n", "line 6: key 'ffn_hidden': expected a whole number from 1 to"},
      {ok + "recompute: some\n",
       "line 6: key 'recompute': expected none, selective or full, got 'some'"},
      {ok + "stage_layers: [2, x]\n",
       "line 6: key 'stage_layers': expected whole numbers from 1 to"},
      {"layers: [4\n", "not valid YAML"},
  };
  for (const auto& [text, needle] : cases) {
    const std::string path = write_file(text);
    try {
      load_transformer(path);
      FAIL() << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_transformer(::testing::TempDir() + "no-such-model.yaml"), InvalidArgument);
}

}  // namespace
}  // namespace bubblesim::models
