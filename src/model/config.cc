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

int get_dim(const io::GgufFile& f, const std::string& key) { return positive(f, key, f.get_uint(key)); }

// Head counts and sizes: head_dim is key_length when given, else d_model / n_heads.
void read_heads(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  c.n_heads = get_dim(f, p + "attention.head_count");
  c.n_kv_heads = f.find(p + "attention.head_count_kv") ? get_dim(f, p + "attention.head_count_kv")
                                                       : c.n_heads;
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

void read_rope(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  c.rope_pairing = c.architecture->rope_pairing;
  c.rope_base = static_cast<float>(f.get_float_or(p + "rope.freq_base", 10000.0));
  if (!(c.rope_base > 1.0f)) f.fail("rope.freq_base must be greater than 1");
  c.rope_dim = f.find(p + "rope.dimension_count") ? get_dim(f, p + "rope.dimension_count")
                                                  : c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    f.fail("rope.dimension_count " + std::to_string(c.rope_dim) +
           " must be even and at most the head size " + std::to_string(c.head_dim));
}

// Soft-caps and the sliding window, read where the architecture names their keys; the scales.
void read_features(const io::GgufFile& f, const std::string& p, ModelConfig& c) {
  const Architecture& a = *c.architecture;
  c.embedding_scale = a.scale_embeddings ? std::sqrt(float(c.d_model)) : 1.0f;
  const bool gemma2_27b = a.query_scale == QueryScale::kGemma2 && c.n_layers == 46;
  c.query_scale = 1.0f / std::sqrt(float(gemma2_27b ? c.d_model / c.n_heads : c.head_dim));
  if (a.attn_softcap_key) c.attn_softcap = static_cast<float>(f.get_float(p + a.attn_softcap_key));
  if (a.final_softcap_key) c.final_softcap = static_cast<float>(f.get_float(p + a.final_softcap_key));
  if (a.sliding_window_key) c.sliding_window = get_dim(f, p + a.sliding_window_key);
  if (!(c.attn_softcap >= 0.0f && c.final_softcap >= 0.0f)) f.fail("logit soft-caps must not be negative");
}

}  // namespace

int ModelConfig::window_of(int layer) const {
  switch (architecture->window_layers) {
    case WindowLayers::kAll: return sliding_window;
    case WindowLayers::kEven: return layer % 2 == 0 ? sliding_window : 0;
    case WindowLayers::kNone: return 0;
  }
  return 0;
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
