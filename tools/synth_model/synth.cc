#include "tools/synth_model/synth.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "common/error.h"
#include "io/gguf_writer.h"

namespace kvrt::synth {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_name(std::string_view s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

// Element i of a tensor is a pure function of (seed, tensor name, i): independent of the
// order and chunking in which the writer asks for data.
io::TensorFill gaussian(uint64_t seed, std::string_view name, float mean, float stddev) {
  const uint64_t key = splitmix64(seed ^ hash_name(name));
  return [key, mean, stddev](int64_t begin, int64_t n, float* out) {
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t i = uint64_t(begin + j);
      // Box-Muller with u1 in (0, 1] and u2 in [0, 1), 53-bit uniforms.
      const double u1 = double((splitmix64(key + 2 * i) >> 11) + 1) * 0x1.0p-53;
      const double u2 = double(splitmix64(key + 2 * i + 1) >> 11) * 0x1.0p-53;
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      out[j] = mean + stddev * float(z);
    }
  };
}

// Element i of the tensor is f32 number i of the raw file dir/<name>.f32 (little-endian, as on
// every CPU kvrt runs on). The file's size is checked here, before anything is written.
io::TensorFill file_fill(const std::string& dir, const std::string& name, int64_t n_elements) {
  const std::string path = dir + "/" + name + ".f32";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("weights file '" + path + "' is missing or not a regular file", ErrorKind::kUsage);
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size != uint64_t(n_elements) * sizeof(float))
    throw Error("weights file '" + path + "' has " + std::to_string(size) + " bytes; tensor " +
                    name + " needs " + std::to_string(n_elements) + " f32 values",
                ErrorKind::kUsage);
  return [path](int64_t begin, int64_t n, float* out) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(std::streamoff(begin) * std::streamoff(sizeof(float)));
    in.read(reinterpret_cast<char*>(out), std::streamsize(n) * std::streamsize(sizeof(float)));
    if (!in) throw Error("cannot read weights file '" + path + "'");
  };
}

// Random N(mean, stddev) weights, or the tensor's file when the configuration names a folder.
io::TensorFill tensor_fill(const SynthConfig& c, const std::string& name, int64_t n_elements,
                           float mean, float stddev) {
  if (!c.weights_dir.empty()) return file_fill(c.weights_dir, name, n_elements);
  return gaussian(c.seed, name, mean, stddev);
}

uint32_t file_type_code(const SynthConfig& c) {  // llama.cpp's llama_ftype
  using W = simd::WeightType;
  const bool m = c.mix == WeightMix::kM;
  switch (c.type) {
    case W::kF32: return 0;
    case W::kF16: return 1;
    case W::kQ4_0: return 2;
    case W::kQ4_1: return 3;
    case W::kQ8_0: return 7;
    case W::kQ5_0: return 8;
    case W::kQ5_1: return 9;
    case W::kQ2_K: return 10;
    case W::kQ3_K: return m ? 12 : 11;  // Q3_K_M, Q3_K_S
    case W::kQ4_K: return m ? 15 : 14;  // Q4_K_M, Q4_K_S
    case W::kQ5_K: return m ? 17 : 16;  // Q5_K_M, Q5_K_S
    case W::kQ6_K: return 18;
    case W::kIQ4_NL: return 25;
    default: return 32;  // MOSTLY_BF16
  }
}

void check_config(const SynthConfig& c) {
  auto positive = [](int v, const char* flag) {
    if (v <= 0 || v > (1 << 20))
      throw Error(std::string(flag) + " must be between 1 and 1048576, got " + std::to_string(v),
                  ErrorKind::kUsage);
  };
  positive(c.d_model, "--d-model");
  positive(c.n_layers, "--n-layers");
  positive(c.n_heads, "--n-heads");
  positive(c.n_kv_heads, "--n-kv-heads");
  positive(c.head_dim, "--head-dim");
  positive(c.d_ff, "--d-ff");
  positive(c.n_ctx, "--ctx");
  if (c.n_heads % c.n_kv_heads != 0)
    throw Error("--n-heads " + std::to_string(c.n_heads) + " is not a multiple of --n-kv-heads " +
                    std::to_string(c.n_kv_heads),
                ErrorKind::kUsage);
  if (c.head_dim % 2 != 0)
    throw Error("--head-dim must be even (RoPE rotates pairs)", ErrorKind::kUsage);
  // Row lengths that are not whole blocks of a matrix's type: the GGUF writer's error names the
  // tensor and the block size.
}

void add_hparams(io::GgufWriter& w, const SynthConfig& c, int64_t n_vocab) {
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", !c.name.empty() ? c.name
                                                : "synth-llama-d" + std::to_string(c.d_model) + "-l" +
                                                      std::to_string(c.n_layers) + "-" +
                                                      weight_choice_name({c.type, c.mix}));
  w.add_u32("general.file_type", file_type_code(c));
  w.add_u32("llama.vocab_size", uint32_t(n_vocab));
  w.add_u32("llama.context_length", uint32_t(c.n_ctx));
  w.add_u32("llama.embedding_length", uint32_t(c.d_model));
  w.add_u32("llama.block_count", uint32_t(c.n_layers));
  w.add_u32("llama.feed_forward_length", uint32_t(c.d_ff));
  w.add_u32("llama.attention.head_count", uint32_t(c.n_heads));
  w.add_u32("llama.attention.head_count_kv", uint32_t(c.n_kv_heads));
  w.add_u32("llama.rope.dimension_count", uint32_t(c.head_dim));
  w.add_f32("llama.rope.freq_base", 10000.0f);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (c.d_model % c.n_heads != 0 || c.head_dim != c.d_model / c.n_heads) {
    w.add_u32("llama.attention.key_length", uint32_t(c.head_dim));
    w.add_u32("llama.attention.value_length", uint32_t(c.head_dim));
  }
}

// The vocabulary size of a GGUF's tokenizer.ggml.tokens string array.
int64_t vocab_size(const io::GgufFile& vocab) {
  const io::GgufValue* tokens = vocab.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != io::GgufType::kArray || tokens->elem_type != io::GgufType::kString)
    vocab.fail("no string array 'tokenizer.ggml.tokens' to take the vocabulary from");
  return int64_t(tokens->n_elems);
}

void add_tokenizer(io::GgufWriter& w, const io::GgufFile& vocab) {
  for (const auto& [key, value] : vocab.metadata())
    if (key.starts_with("tokenizer.")) w.add_value(key, value);
}

// A matrix [n_in, n_out] (GGUF order) with N(0, 1/sqrt(n_in)) entries: x·W keeps unit scale.
// `role` and `layer` pick its type from the configuration's mix.
void add_matrix(io::GgufWriter& w, const SynthConfig& c, const std::string& name, std::string_view role, int layer,
                int64_t n_in, int64_t n_out) {
  w.add_tensor(name, {n_in, n_out}, matrix_type({c.type, c.mix}, role, layer, c.n_layers),
               tensor_fill(c, name, n_in * n_out, 0.0f, float(1.0 / std::sqrt(double(n_in)))));
}

void add_norm(io::GgufWriter& w, const SynthConfig& c, const std::string& name) {
  w.add_tensor(name, {c.d_model}, simd::WeightType::kF32, tensor_fill(c, name, c.d_model, 1.0f, 0.02f));
}

void add_tensors(io::GgufWriter& w, const SynthConfig& c, int64_t n_vocab) {
  const int64_t d = c.d_model, q_dim = int64_t(c.n_heads) * c.head_dim,
                kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  // Embedding rows have unit-scale dot products with a normalized state: logits stay O(1)
  // whether or not the output matrix is tied to it.
  add_matrix(w, c, "token_embd.weight", "token_embd", 0, d, n_vocab);
  add_norm(w, c, "output_norm.weight");
  if (!c.tied) add_matrix(w, c, "output.weight", "output", 0, d, n_vocab);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add_norm(w, c, p + "attn_norm.weight");
    add_matrix(w, c, p + "attn_q.weight", "attn_q", i, d, q_dim);
    add_matrix(w, c, p + "attn_k.weight", "attn_k", i, d, kv_dim);
    add_matrix(w, c, p + "attn_v.weight", "attn_v", i, d, kv_dim);
    add_matrix(w, c, p + "attn_output.weight", "attn_output", i, q_dim, d);
    add_norm(w, c, p + "ffn_norm.weight");
    add_matrix(w, c, p + "ffn_gate.weight", "ffn_gate", i, d, c.d_ff);
    add_matrix(w, c, p + "ffn_up.weight", "ffn_up", i, d, c.d_ff);
    add_matrix(w, c, p + "ffn_down.weight", "ffn_down", i, c.d_ff, d);
  }
}

int64_t param_count(const SynthConfig& c, int64_t n_vocab) {
  const int64_t d = c.d_model, q_dim = int64_t(c.n_heads) * c.head_dim,
                kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  const int64_t per_layer = 2 * d + 2 * d * q_dim + 2 * d * kv_dim + 3 * d * c.d_ff;
  return d * n_vocab * (c.tied ? 1 : 2) + d + c.n_layers * per_layer;
}

}  // namespace

std::string default_vocab_path() { return KVRT_SYNTH_DEFAULT_VOCAB; }

SynthSummary write_synth_model(const SynthConfig& config, const std::string& out_path) {
  check_config(config);
  const io::GgufFile vocab(config.vocab_path.empty() ? default_vocab_path() : config.vocab_path);
  const int64_t n_vocab = vocab_size(vocab);
  io::GgufWriter w;
  add_hparams(w, config, n_vocab);
  add_tokenizer(w, vocab);
  add_tensors(w, config, n_vocab);
  w.write(out_path);
  return {n_vocab, param_count(config, n_vocab), std::filesystem::file_size(out_path)};
}

}  // namespace kvrt::synth
