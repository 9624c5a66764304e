#include "tools/synth_model/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <vector>

#include "common/error.h"
#include "io/gguf_writer.h"
#include "model/architecture.h"
#include "model/config.h"
#include "model/tensors.h"

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
  if (c.decoded) return 0;  // ALL_F32
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

// Gemma 2's soft-caps (its config.json: attn_logit_softcapping, final_logit_softcapping).
constexpr float kGemma2AttnSoftcap = 50.0f, kGemma2FinalSoftcap = 30.0f;

// What a family's converter writes beyond the shape, with the values of its real models: the
// RoPE base and the keys of its features (after "<arch>."). phi4mini is phi3 as Phi-4-mini's file
// has it: partial rotary (3/4 of each head), LongRoPE factor tensors, their attention factor and a
// sliding window of 0.
struct Family {
  const char* name;  // --arch
  const char* arch;  // general.architecture
  float rope_base;
  std::vector<std::pair<const char*, float>> floats;
  std::vector<std::pair<const char*, uint32_t>> uints;
  std::vector<std::pair<const char*, const char*>> strings;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"llama", "llama", 10000.0f, {}, {}, {}},
      {"qwen2", "qwen2", 10000.0f, {}, {}, {}},
      {"phi3", "phi3", 10000.0f, {}, {}, {}},
      {"gemma2", "gemma2", 10000.0f, {}, {}, {}},
      {"qwen3", "qwen3", 1e6f, {}, {}, {}},  // Qwen3-0.6B
      {"gemma3",
       "gemma3",
       1e6f,
       {{"rope.freq_base_swa", 10000.0f}},
       {{"attention.sliding_window_pattern", 6}},
       {}},
      {"smollm3", "smollm3", 5e6f, {}, {}, {}},  // SmolLM3-3B
      // Granite 3.x 2B's multipliers (embedding, attention, residual, logits).
      {"granite",
       "granite",
       10000.0f,
       {{"embedding_scale", 12.0f},
        {"attention.scale", 0.015625f},
        {"residual_scale", 0.22f},
        {"logit_scale", 8.0f}},
       {},
       {}},
      {"olmo2", "olmo2", 500000.0f, {}, {}, {}},
      // Ministral 3's YaRN and attention temperature.
      {"mistral3",
       "mistral3",
       1e6f,
       {{"rope.scaling.factor", 16.0f},
        {"rope.scaling.yarn_beta_fast", 32.0f},
        {"rope.scaling.yarn_beta_slow", 1.0f},
        {"rope.scaling.yarn_log_multiplier", 1.0f},
        {"attention.temperature_scale", 0.1f}},
       {{"rope.scaling.original_context_length", 16384}},
       {{"rope.scaling.type", "yarn"}}},
      {"phi4mini", "phi3", 10000.0f, {{"rope.scaling.attn_factor", 1.19024f}}, {}, {}},
  };
  return f;
}

const Family& find_family(const std::string& name) {
  for (const Family& f : families())
    if (name == f.name) return f;
  std::string names;
  for (const Family& f : families()) names += (names.empty() ? "" : ", ") + std::string(f.name);
  throw Error("--arch '" + name + "' is not one synth_model writes (" + names + ")",
              ErrorKind::kUsage);
}

bool is_phi4mini(const SynthConfig& c) { return c.arch == "phi4mini"; }

const model::Architecture& find_arch(const std::string& name) {
  try {
    return model::find_architecture(find_family(name).arch);
  } catch (const Error& e) {
    throw Error(std::string("--arch: ") + e.what(), ErrorKind::kUsage);
  }
}

// Phi-4-mini rotates the first 3/4 of each head.
int rope_dim(const SynthConfig& c) {
  return is_phi4mini(c) ? c.head_dim * 3 / 4 / 2 * 2 : c.head_dim;
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
  const model::Architecture& a = find_arch(c.arch);
  if (a.sliding_window_key && !is_phi4mini(c)) positive(c.sliding_window, "--sliding-window");
  if (c.n_heads % c.n_kv_heads != 0)
    throw Error("--n-heads " + std::to_string(c.n_heads) + " is not a multiple of --n-kv-heads " +
                    std::to_string(c.n_kv_heads),
                ErrorKind::kUsage);
  if (c.head_dim % 2 != 0)
    throw Error("--head-dim must be even (RoPE rotates pairs)", ErrorKind::kUsage);
  for (const model::TensorDesc& d : a.model_tensors)
    if (c.tied && d.role == model::TensorRole::kOutput && d.required)
      throw Error("--tied: a " + c.arch + " model has a separate output matrix", ErrorKind::kUsage);
  // Row lengths that are not whole blocks of a matrix's type: the GGUF writer's error names the
  // tensor and the block size.
}

void add_hparams(io::GgufWriter& w, const SynthConfig& c, int64_t n_vocab) {
  const model::Architecture& a = find_arch(c.arch);
  const Family& family = find_family(c.arch);
  const std::string p = std::string(a.name) + ".";
  w.add_string("general.architecture", a.name);
  w.add_string("general.name", !c.name.empty()
                                   ? c.name
                                   : "synth-" + c.arch + "-d" + std::to_string(c.d_model) + "-l" +
                                         std::to_string(c.n_layers) + "-" +
                                         weight_choice_name({c.type, c.mix}) +
                                         (c.decoded ? "-decoded" : ""));
  w.add_u32("general.file_type", file_type_code(c));
  w.add_u32(p + "vocab_size", uint32_t(n_vocab));
  w.add_u32(p + "context_length", uint32_t(c.n_ctx));
  w.add_u32(p + "embedding_length", uint32_t(c.d_model));
  w.add_u32(p + "block_count", uint32_t(c.n_layers));
  w.add_u32(p + "feed_forward_length", uint32_t(c.d_ff));
  w.add_u32(p + "attention.head_count", uint32_t(c.n_heads));
  w.add_u32(p + "attention.head_count_kv", uint32_t(c.n_kv_heads));
  w.add_u32(p + "rope.dimension_count", uint32_t(rope_dim(c)));
  w.add_f32(p + "rope.freq_base", family.rope_base);
  w.add_f32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (c.d_model % c.n_heads != 0 || c.head_dim != c.d_model / c.n_heads) {
    w.add_u32(p + "attention.key_length", uint32_t(c.head_dim));
    w.add_u32(p + "attention.value_length", uint32_t(c.head_dim));
  }
  if (a.attn_softcap_key && !a.softcaps_optional)
    w.add_f32(p + a.attn_softcap_key, kGemma2AttnSoftcap);
  if (a.final_softcap_key && !a.softcaps_optional)
    w.add_f32(p + a.final_softcap_key, kGemma2FinalSoftcap);
  if (a.sliding_window_key)
    w.add_u32(p + a.sliding_window_key, uint32_t(is_phi4mini(c) ? 0 : c.sliding_window));
  if (is_phi4mini(c)) w.add_u32(p + "rope.scaling.original_context_length", uint32_t(c.n_ctx));
  for (const auto& [key, v] : family.floats) w.add_f32(p + key, v);
  for (const auto& [key, v] : family.uints) w.add_u32(p + key, v);
  for (const auto& [key, v] : family.strings) w.add_string(p + key, v);
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

// One tensor the file holds: a described tensor of the architecture, at a layer (-1: model-level).
struct PlannedTensor {
  const model::TensorDesc* desc;
  std::string name;           // GGUF name
  std::vector<int64_t> dims;  // ggml order
  int layer;
};

model::ModelConfig shape_config(const SynthConfig& c, int64_t n_vocab) {
  model::ModelConfig m;
  m.d_model = c.d_model;
  m.n_heads = c.n_heads;
  m.n_kv_heads = c.n_kv_heads;
  m.head_dim = c.head_dim;
  m.d_ff = c.d_ff;
  m.n_vocab = int(n_vocab);
  m.rope_dim = rope_dim(c);
  return m;
}

// The architecture's tensors this configuration writes: every required one, the output matrix
// unless tied, and Phi-4-mini's LongRoPE factors (other optional extras such as Llama 3's
// rope_freqs are not written).
std::vector<PlannedTensor> plan_tensors(const SynthConfig& c, int64_t n_vocab) {
  const model::Architecture& a = find_arch(c.arch);
  const model::ModelConfig m = shape_config(c, n_vocab);
  std::vector<PlannedTensor> out;
  auto take = [&](const model::TensorDesc& d, const std::string& name, int layer) {
    const bool longrope = d.role == model::TensorRole::kRopeFactorsShort ||
                          d.role == model::TensorRole::kRopeFactorsLong;
    if (!d.required && !(d.role == model::TensorRole::kOutput && !c.tied) &&
        !(longrope && is_phi4mini(c)))
      return;
    std::vector<int64_t> dims{model::dim_size(d.n_in, m)};
    if (d.n_out != model::Dim::kNone) dims.push_back(model::dim_size(d.n_out, m));
    out.push_back({&d, name, std::move(dims), layer});
  };
  for (const model::TensorDesc& d : a.model_tensors) take(d, d.name, -1);
  for (int i = 0; i < c.n_layers; ++i)
    for (const model::TensorDesc& d : a.layer_tensors)
      take(d, "blk." + std::to_string(i) + "." + d.name, i);
  return out;
}

// The fill of `fill` encoded in `type` and decoded again: the values a file of that type holds.
// Chunks are whole blocks (the writer's chunks are, and so are rows).
io::TensorFill decoded_fill(io::TensorFill fill, simd::WeightType type) {
  return [fill = std::move(fill), type](int64_t begin, int64_t n, float* out) {
    fill(begin, n, out);
    std::vector<uint8_t> bytes(io::tensor_bytes(type, n));
    io::encode_tensor_data(type, out, n, bytes.data());
    simd::weight_type_traits(type).to_float_ref(bytes.data(), n, out);
  };
}

// A matrix [n_in, n_out] (GGUF order) gets N(0, 1/sqrt(n_in)) entries, so x·W keeps unit scale,
// in the type the configuration's mix gives its role (its name without ".weight") and layer. A
// tied embedding is quantized as the output matrix it also is (llama-quantize's rule when a file
// has no output.weight). Norm weights are N(1, 0.02), RoPE factors N(1, 0.05) (the short ones) and
// N(4, 0.2) (the long ones), biases N(0, 0.1), all F32.
void add_tensor(io::GgufWriter& w, const SynthConfig& c, const PlannedTensor& t) {
  const int64_t n = t.dims.size() == 1 ? t.dims[0] : t.dims[0] * t.dims[1];
  if (t.dims.size() == 1) {
    const bool norm = std::string_view(t.desc->name).ends_with("norm.weight");
    float mean = norm ? 1.0f : 0.0f, stddev = norm ? 0.02f : 0.1f;
    if (t.desc->role == model::TensorRole::kRopeFactorsShort) mean = 1.0f, stddev = 0.05f;
    if (t.desc->role == model::TensorRole::kRopeFactorsLong) mean = 4.0f, stddev = 0.2f;
    w.add_tensor(t.name, t.dims, simd::WeightType::kF32, tensor_fill(c, t.name, n, mean, stddev));
    return;
  }
  std::string_view role = t.desc->name;
  role.remove_suffix(std::string_view(".weight").size());
  if (role == "token_embd" && c.tied) role = "output";
  const simd::WeightType type =
      matrix_type({c.type, c.mix}, role, std::max(t.layer, 0), c.n_layers);
  io::TensorFill fill = tensor_fill(c, t.name, n, 0.0f, float(1.0 / std::sqrt(double(t.dims[0]))));
  if (!c.decoded) {
    w.add_tensor(t.name, t.dims, type, std::move(fill));
    return;
  }
  const simd::WeightTypeTraits& traits = simd::weight_type_traits(type);
  if (t.dims[0] % traits.block != 0)
    throw Error("tensor '" + t.name + "': " + traits.name + " needs rows of a multiple of " +
                    std::to_string(traits.block) + " elements",
                ErrorKind::kUsage);
  w.add_tensor(t.name, t.dims, simd::WeightType::kF32, decoded_fill(std::move(fill), type));
}

}  // namespace

void apply_shape(SynthConfig& c, std::string_view name) {
  if (name == "gemma3-1b") {
    c.arch = "gemma3";
    c.n_layers = 26, c.d_model = 1152, c.n_heads = 4, c.n_kv_heads = 1, c.head_dim = 256,
    c.d_ff = 6912;
    c.sliding_window = 512, c.n_ctx = 32768, c.tied = true;
  } else if (name == "qwen3-0.6b") {
    c.arch = "qwen3";
    c.n_layers = 28, c.d_model = 1024, c.n_heads = 16, c.n_kv_heads = 8, c.head_dim = 128,
    c.d_ff = 3072;
    c.n_ctx = 40960, c.tied = true;
  } else {
    throw Error("--shape '" + std::string(name) + "' is not known (gemma3-1b, qwen3-0.6b)",
                ErrorKind::kUsage);
  }
}

std::string default_vocab_path() { return KVRT_SYNTH_DEFAULT_VOCAB; }

SynthSummary write_synth_model(const SynthConfig& config, const std::string& out_path) {
  check_config(config);
  const io::GgufFile vocab(config.vocab_path.empty() ? default_vocab_path() : config.vocab_path);
  const int64_t n_vocab = vocab_size(vocab);
  io::GgufWriter w;
  add_hparams(w, config, n_vocab);
  add_tokenizer(w, vocab);
  int64_t n_params = 0;
  for (const PlannedTensor& t : plan_tensors(config, n_vocab)) {
    add_tensor(w, config, t);
    n_params += t.dims.size() == 1 ? t.dims[0] : t.dims[0] * t.dims[1];
  }
  return {n_vocab, n_params, w.write(out_path)};
}

}  // namespace kvrt::synth
