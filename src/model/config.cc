#include "model/config.h"

#include <cmath>

#include "common/error.h"

namespace kvrt::model {
namespace {

int positive(const io::GgufFile& f, const std::string& key, uint64_t v) {
  if (v == 0 || v > (uint64_t{1} << 30))
    f.fail("metadata key '" + key + "' = " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

int get_dim(const io::GgufFile& f, const std::string& key) {
  return positive(f, key, f.get_uint(key));
}

// Head counts and sizes: head_dim is key_length when given, else d_model / n_heads.
void read_heads(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  c.n_heads = get_dim(f, p + "attention.head_count");
  c.n_kv_heads =
      f.find(p + "attention.head_count_kv") ? get_dim(f, p + "attention.head_count_kv") : c.n_heads;
  c.head_dim = f.find(p + "attention.key_length") ? get_dim(f, p + "attention.key_length")
                                                  : c.d_model / c.n_heads;
  if (f.find(p + "attention.value_length") &&
      get_dim(f, p + "attention.value_length") != c.head_dim)
    f.fail("key_length and value_length differ; kvrt needs equal key and value head sizes");
  if (!f.find(p + "attention.key_length") && c.d_model % c.n_heads != 0)
    f.fail("embedding_length " + std::to_string(c.d_model) + " is not divisible by head_count " +
           std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    f.fail("head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " +
           std::to_string(c.n_kv_heads));
}

// A finite float key within (lo, hi], or the fallback when absent.
float float_in(const io::GgufFile& f, const std::string& key, double fallback, double lo,
               double hi) {
  const double v = f.get_float_or(key, fallback);
  if (!(v > lo && v <= hi))
    f.fail("metadata key '" + key + "' = " + std::to_string(v) + " is out of range (" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<float>(v);
}

// rope.scaling.*: linear (angles / factor; llama.cpp's default type) or YaRN; LongRoPE's
// attention factor. The original context defaults to the trained one, as in llama.cpp.
void read_rope_scaling(const io::GgufFile& f, const std::string& p, int n_ctx_train,
                       ops::RopeParams& r) {
  const std::string type(f.get_string_or(p + "rope.scaling.type", "linear"));
  if (type == "linear") r.scaling = ops::RopeScaling::kLinear;
  else if (type == "yarn") r.scaling = ops::RopeScaling::kYarn;
  else if (type != "none")
    f.fail("rope.scaling.type '" + type + "' is not supported (kvrt runs none, linear and yarn)");
  const std::string factor_key =
      p + (f.find(p + "rope.scaling.factor") ? "rope.scaling.factor" : "rope.scale_linear");
  if (f.find(factor_key)) {
    const double factor = f.get_float(factor_key);  // 0: none
    if (factor != 0.0) r.factor = float_in(f, factor_key, 1.0, 0.0, 1e6);
  }
  if (r.factor == 1.0f && r.scaling == ops::RopeScaling::kLinear)
    r.scaling = ops::RopeScaling::kNone;
  r.orig_ctx = n_ctx_train;
  if (f.find(p + "rope.scaling.original_context_length"))
    r.orig_ctx = get_dim(f, p + "rope.scaling.original_context_length");
  r.attn_factor = float_in(f, p + "rope.scaling.attn_factor", 1.0, 0.0, 1e3);
  if (r.scaling != ops::RopeScaling::kYarn) return;
  r.yarn_beta_fast = float_in(f, p + "rope.scaling.yarn_beta_fast", 32.0, 0.0, 1e6);
  r.yarn_beta_slow = float_in(f, p + "rope.scaling.yarn_beta_slow", 1.0, 0.0, 1e6);
  r.yarn_log_multiplier = float_in(f, p + "rope.scaling.yarn_log_multiplier", 0.0, -1.0, 1e3);
}

void read_rope(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  c.rope_pairing = c.architecture->rope_pairing;
  c.rope.base = static_cast<float>(f.get_float_or(p + "rope.freq_base", 10000.0));
  if (!(c.rope.base > 1.0f && std::isfinite(c.rope.base)))
    f.fail("rope.freq_base must be greater than 1");
  c.rope_dim =
      f.find(p + "rope.dimension_count") ? get_dim(f, p + "rope.dimension_count") : c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    f.fail("rope.dimension_count " + std::to_string(c.rope_dim) +
           " must be even and at most the head size " + std::to_string(c.head_dim));
  read_rope_scaling(f, p, c.n_ctx_train, c.rope);
  if (const char* key = c.architecture->window_rope_base_key) {
    c.has_window_rope = true;
    c.rope_window.base = float_in(f, p + key, 10000.0, 1.0, 1e30);
  }
}

// Soft-caps and the sliding window, read where the architecture names their keys; the scales.
void read_features(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  const Architecture& a = *c.architecture;
  c.embedding_scale = a.scale_embeddings ? std::sqrt(float(c.d_model)) : 1.0f;
  const bool by_d_model = (a.query_scale == QueryScale::kGemma2 && c.n_layers == 46) ||
                          (a.query_scale == QueryScale::kGemma3 && c.n_layers == 62);
  c.query_scale = 1.0f / std::sqrt(float(by_d_model ? c.d_model / c.n_heads : c.head_dim));
  const auto softcap = [&](const char* key) {
    if (!key || (a.softcaps_optional && !f.find(p + key))) return 0.0f;
    return static_cast<float>(f.get_float(p + key));
  };
  c.attn_softcap = softcap(a.attn_softcap_key);
  c.final_softcap = softcap(a.final_softcap_key);
  if (!(c.attn_softcap >= 0.0f && c.final_softcap >= 0.0f))
    f.fail("logit soft-caps must not be negative");
  if (a.sliding_window_key && (!a.window_optional || f.find(p + a.sliding_window_key))) {
    // 0 means no window (Phi-4-mini's converter writes it).
    const uint64_t w = f.get_uint(p + a.sliding_window_key);
    c.sliding_window = w == 0 ? 0 : positive(f, p + a.sliding_window_key, w);
  }
  if (a.window_layers == WindowLayers::kPattern) {
    c.window_period = a.window_period;
    if (a.window_pattern_key && f.find(p + a.window_pattern_key))
      c.window_period = positive(f, p + a.window_pattern_key, f.get_uint(p + a.window_pattern_key));
  }
  const ScaleKeys& s = a.scales;
  if (s.embedding) c.embedding_scale = float_in(f, p + s.embedding, 1.0, 0.0, 1e6);
  if (s.attention) c.query_scale = float_in(f, p + s.attention, c.query_scale, 0.0, 1e6);
  if (s.residual) c.residual_scale = float_in(f, p + s.residual, 1.0, 0.0, 1e6);
  if (s.logit) c.logit_scale = float_in(f, p + s.logit, 1.0, 0.0, 1e6);
  if (f.find(p + "attention.temperature_scale")) {
    c.attn_temp_scale = float_in(f, p + "attention.temperature_scale", 0.0, 0.0, 1e3);
    c.attn_temp_floor = c.rope.orig_ctx;
    if (c.attn_temp_floor == 0)
      f.fail("attention.temperature_scale needs rope.scaling.original_context_length, its step");
  }
}

}  // namespace

int ModelConfig::window_of(int layer) const {
  switch (architecture->window_layers) {
    case WindowLayers::kAll: return sliding_window;
    case WindowLayers::kPattern:
      return layer % window_period < window_period - 1 ? sliding_window : 0;
    case WindowLayers::kNone: return 0;
  }
  return 0;
}

bool ModelConfig::rope_at(int layer) const {
  const int period = architecture->nope_period;
  return period == 0 || (layer + 1) % period != 0;
}

ModelConfig ModelConfig::from_gguf(const io::GgufFile& f) {
  ModelConfig c;
  c.arch = std::string(f.get_string("general.architecture"));
  try {
    c.architecture = &find_architecture(c.arch);
  } catch (const Error& e) {
    throw Error("'" + f.path() + "': " + e.what());
  }
  const std::string p = c.arch + ".";
  if (f.find(p + "expert_count") && f.get_uint(p + "expert_count") > 0)  // Mixtral is a "llama"
    f.fail("this " + c.arch + " model is a mixture of " +
           std::to_string(f.get_uint(p + "expert_count")) + " experts (" + p +
           "expert_count), which needs expert routing; kvrt runs dense models");
  c.name = std::string(f.get_string_or("general.name", ""));
  c.n_layers = get_dim(f, p + "block_count");
  // Refuse an impossible count before anything is sized by it.
  size_t per_layer = 0;
  for (const TensorDesc& t : c.architecture->layer_tensors) per_layer += t.required;
  if (uint64_t(c.n_layers) * per_layer > f.tensors().size())
    f.fail("block_count " + std::to_string(c.n_layers) + " needs at least " +
           std::to_string(uint64_t(c.n_layers) * per_layer) + " tensors, the file has " +
           std::to_string(f.tensors().size()));
  c.d_model = get_dim(f, p + "embedding_length");
  c.d_ff = get_dim(f, p + "feed_forward_length");
  c.n_ctx_train = get_dim(f, p + "context_length");
  read_heads(f, p, c);
  c.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon"));
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    f.fail("layer_norm_rms_epsilon " + std::to_string(c.rms_eps) + " is out of range");
  read_rope(f, p, c);
  read_features(f, p, c);
  const io::GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd) f.fail("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != c.d_model)
    f.fail("tensor 'token_embd.weight' does not have shape [embedding_length, n_vocab]");
  c.n_vocab = positive(f, "token_embd.weight rows", uint64_t(embd->dims[1]));
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace kvrt::model
