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
