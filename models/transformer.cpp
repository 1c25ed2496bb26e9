#include "models/transformer.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <ios>
#include <numeric>
#include <set>

#include "sim/error.h"

namespace bubblesim::models {

std::vector<int> split_layers(const TransformerConfig& model, int p) {
  if (!model.stage_layers.empty()) {
    const std::int64_t sum =
        std::accumulate(model.stage_layers.begin(), model.stage_layers.end(), std::int64_t{0});
    if (static_cast<int>(model.stage_layers.size()) != p || sum != model.layers) {
      throw InvalidArgument("model '" + model.name + "': stage_layers has " +
                            std::to_string(model.stage_layers.size()) + " entries summing to " +
                            std::to_string(sum) + "; expected " + std::to_string(p) +
                            " (one per stage) summing to layers = " + std::to_string(model.layers));
    }
    return model.stage_layers;
  }
  std::vector<int> split(static_cast<std::size_t>(p));
  if (p >= 2 && (model.layers + 2) % p == 0 && (model.layers + 2) / p >= 2) {
    const int k = (model.layers + 2) / p;
    for (int s = 0; s < p; ++s)
      split[static_cast<std::size_t>(s)] = s == 0 || s == p - 1 ? k - 1 : k;
    return split;
  }
  for (int s = 0; s < p; ++s)
    split[static_cast<std::size_t>(s)] = model.layers / p + (s >= p - model.layers % p ? 1 : 0);
  if (split.front() == 0) {
    throw InvalidArgument("model '" + model.name + "': " + std::to_string(model.layers) +
                          " layers cannot fill " + std::to_string(p) + " stages");
  }
  return split;
}

namespace {

// One transformer layer's share of a stage, for one microbatch.
struct LayerEstimate {
  double f_flops, b_flops, w_flops, m_b_bytes, m_w_bytes, parameters;
};

LayerEstimate estimate_layer(const TransformerConfig& model) {
  const double s = model.seq_len, b = model.microbatch_size, h = model.hidden, a = model.heads;
  const double g = model.kv_heads > 0 ? static_cast<double>(model.kv_heads) / a : 1.0;
  const double f = model.ffn_hidden > 0 ? model.ffn_hidden : 4 * h;
  const double k = model.gated_mlp ? 3 : 2;  // h x f matrices of the MLP
  const double sb = s * b;
  // Per token: the linear layers' FLOPs, the bytes kept for B (without the s x s tensors) and
  // for W.
  const double linear = 2 * h * h * (2 + 2 * g) + 2 * k * h * f;
  const double m_b = h * (14 + 4 * g) + (model.gated_mlp ? 8 : 4) * f;
  const double m_w = 12 * h + 4 * g * h + (model.gated_mlp ? 6 : 4) * f;
  LayerEstimate e{};
  e.parameters = h * h * (2 + 2 * g) + k * h * f + (3 + 2 * g) * h + (k - 1) * f + 4 * h;
  e.f_flops = sb * (linear + 4 * s * h);
  e.b_flops = sb * (linear + (model.flash_attention ? 10 : 8) * s * h);
  e.w_flops = sb * linear;
  e.m_b_bytes = sb * (m_b + (model.flash_attention ? 0 : 5 * a * s));
  if (model.recompute == Recompute::Selective && !model.flash_attention) {
    e.b_flops += sb * 4 * s * h;
    e.m_b_bytes = sb * m_b;
  } else if (model.recompute == Recompute::Full) {
    e.b_flops += e.f_flops;
    e.m_b_bytes = 2 * sb * h;
  }
  e.m_w_bytes = sb * m_w;
  return e;
}

}  // namespace

double backward_b_share(const TransformerConfig& model) {
  const LayerEstimate layer = estimate_layer(model);
  return layer.b_flops / (layer.b_flops + layer.w_flops);
}

std::vector<StageEstimate> estimate_stages(const TransformerConfig& model, int p) {
  const double s = model.seq_len, b = model.microbatch_size, h = model.hidden, v = model.vocab;
  const double sbh = s * b * h;
  const LayerEstimate layer = estimate_layer(model);
  std::vector<StageEstimate> out;
  const std::vector<int> split = split_layers(model, p);
  for (int stage = 0; stage < p; ++stage) {
    StageEstimate e;
    const double n = e.layers = split[static_cast<std::size_t>(stage)];
    e.parameters = n * layer.parameters;
    e.f_flops = n * layer.f_flops;
    e.b_flops = n * layer.b_flops;
    e.w_flops = n * layer.w_flops;
    e.m_b_bytes = n * layer.m_b_bytes;
    e.m_w_bytes = n * layer.m_w_bytes;
    if (stage == 0) e.parameters += (v + (model.position_embeddings ? s : 0)) * h;
    if (stage == p - 1) {
      e.parameters += v * h + 2 * h;
      e.f_flops += 2 * sbh * v;
      e.b_flops += 2 * sbh * v;
      e.w_flops += 2 * sbh * v;
      e.m_b_bytes += 2 * s * b * v;
    }
    e.static_bytes = e.parameters * kAdamBytesPerParameter;
    e.transfer_bytes = 2 * sbh;
    out.push_back(e);
  }
  return out;
}

double flops_to_ms(double flops, const GpuSpec& gpu, double efficiency) {
  return flops / (gpu.dense_bf16_tflops * 1e12 * efficiency) * 1e3;
}

namespace {

// "FILE: line N: key 'k': ..." (yaml-cpp lines are 0-based).
[[noreturn]] void fail(const std::string& path, const YAML::Mark& mark, const std::string& what) {
  throw InvalidArgument(path + ": line " + std::to_string(mark.line + 1) + ": " + what);
}

// Bounds keep every product of the cost model's integers (layers + 2, a split's sum) in range.
constexpr int kMaxModelNumber = 1 << 24;

int positive_int(const std::string& path, const YAML::Node& root, const char* key,
                 bool required = true, int fallback = 0) {
  const YAML::Node node = root[key];
  if (!node) {
    if (!required) return fallback;
    fail(path, root.Mark(), std::string("missing key '") + key + "'");
  }
  try {
    const int value = node.as<int>();
    if (value >= 1 && value <= kMaxModelNumber) return value;
  } catch (const YAML::Exception&) {
  }
  fail(path, node.Mark(),
       std::string("key '") + key + "': expected a whole number from 1 to " +
           std::to_string(kMaxModelNumber) + ", got '" + YAML::Dump(node) + "'");
}

bool boolean(const std::string& path, const YAML::Node& root, const char* key, bool fallback) {
  const YAML::Node node = root[key];
  if (!node) return fallback;
  try {
    if (node.IsScalar()) return node.as<bool>();
  } catch (const YAML::Exception&) {
  }
  fail(path, node.Mark(),
       std::string("key '") + key + "': expected true or false, got '" + YAML::Dump(node) + "'");
}

}  // namespace

namespace {

TransformerConfig read_transformer(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InvalidArgument(path + ": cannot open the model file");
  } catch (const YAML::ParserException& e) {
    fail(path, e.mark, "not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) fail(path, root.Mark(), "expected a mapping of model fields");
  static const std::set<std::string> known = {"name",
                                              "layers",
                                              "hidden",
                                              "heads",
                                              "seq_len",
                                              "vocab",
                                              "microbatch_size",
                                              "stage_layers",
                                              "kv_heads",
                                              "ffn_hidden",
                                              "gated_mlp",
                                              "position_embeddings",
                                              "flash_attention",
                                              "recompute"};
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (known.count(key) == 0) {
      fail(path, entry.first.Mark(),
           "unknown key '" + key +
               "'; valid keys are: name, layers, hidden, heads, seq_len, vocab, "
               "microbatch_size, stage_layers, kv_heads, ffn_hidden, gated_mlp, "
               "position_embeddings, flash_attention, recompute");
    }
  }
  TransformerConfig m;
  if (root["name"] && !root["name"].IsScalar()) {
    fail(path, root["name"].Mark(),
         "key 'name': expected a name, got '" + YAML::Dump(root["name"]) + "'");
  }
  m.name = root["name"] ? root["name"].as<std::string>() : path;
  m.layers = positive_int(path, root, "layers");
  m.hidden = positive_int(path, root, "hidden");
  m.heads = positive_int(path, root, "heads");
  m.seq_len = positive_int(path, root, "seq_len");
  m.vocab = positive_int(path, root, "vocab");
  m.microbatch_size = positive_int(path, root, "microbatch_size", false, 1);
  if (const YAML::Node split = root["stage_layers"]) {
    if (!split.IsSequence()) fail(path, split.Mark(), "key 'stage_layers': expected a list");
    for (const auto& item : split) {
      int n = 0;
      try {
        n = item.as<int>();
      } catch (const YAML::Exception&) {
        n = -1;
      }
      if (n < 1 || n > kMaxModelNumber) {
        fail(path, item.Mark(),
             "key 'stage_layers': expected whole numbers from 1 to " +
                 std::to_string(kMaxModelNumber) + ", got '" + YAML::Dump(item) + "'");
      }
      m.stage_layers.push_back(n);
    }
  }
  if (m.hidden % m.heads != 0) {
    fail(path, root["heads"].Mark(),
         "key 'heads': must divide hidden = " + std::to_string(m.hidden));
  }
  m.kv_heads = positive_int(path, root, "kv_heads", false, m.heads);
  if (m.heads % m.kv_heads != 0) {
    fail(path, root["kv_heads"].Mark(),
         "key 'kv_heads': must divide heads = " + std::to_string(m.heads));
  }
  m.ffn_hidden = positive_int(path, root, "ffn_hidden", false, 0);
  m.gated_mlp = boolean(path, root, "gated_mlp", false);
  m.position_embeddings = boolean(path, root, "position_embeddings", true);
  m.flash_attention = boolean(path, root, "flash_attention", false);
  if (const YAML::Node node = root["recompute"]) {
    const std::string text = node.IsScalar() ? node.as<std::string>() : "";
    if (text == "none") {
      m.recompute = Recompute::None;
    } else if (text == "selective") {
      m.recompute = Recompute::Selective;
    } else if (text == "full") {
      m.recompute = Recompute::Full;
    } else {
      fail(path, node.Mark(),
           "key 'recompute': expected none, selective or full, got '" + YAML::Dump(node) + "'");
    }
  }
  return m;
}

}  // namespace

TransformerConfig load_transformer(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InvalidArgument(path + ": is a directory, expected a model file (YAML)");
  }
  try {
    return read_transformer(path);
  } catch (const YAML::Exception& e) {
    // A value of the wrong type (a list where a name belongs...).
    if (e.mark.is_null()) throw InvalidArgument(path + ": " + e.msg);
    fail(path, e.mark, e.msg);
  } catch (const std::ios_base::failure& e) {
    throw InvalidArgument(path + ": cannot read the model file (" + e.what() + ")");
  }
}

}  // namespace bubblesim::models
