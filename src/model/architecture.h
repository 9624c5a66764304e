// An architecture is one description that the loader (model/config.cc, model/tensors.cc,
// model/weights.cc) and the forward pass (model/session.cc, model/layer_rows.cc) consult: its
// tensors (required and optional, model-level and per layer, with their shapes), RoPE pairing and
// the layers without RoPE, norm, Q/K norms, FFN activation, soft-caps, sliding-window layers and
// their RoPE base, the keys of its scales, and pre-tokenizer. Adding one is a row in
// architecture.cc plus any op its forward pass needs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kvrt::model {

// How RoPE pairs the dimensions of a head.
enum class RopePairing : uint8_t {
  kInterleaved,  // (x[2i], x[2i+1]): GGUF llama models (weights permuted by the converter)
  kNeox,         // (x[i], x[i + rope_dim/2]): NeoX / GPT-J style (qwen2, phi3, gemma2)
};

// How the per-layer Q and K norms (attn_q_norm, attn_k_norm) normalize the projections.
enum class QkNorm : uint8_t {
  kNone,
  kPerHead,    // RMSNorm of each head over head_dim, one [head_dim] weight for all heads (qwen3,
               // gemma3)
  kFullWidth,  // RMSNorm over all n_heads * head_dim values of Q (of K: n_kv_heads * head_dim)
               // (olmo2)
};

enum class NormKind : uint8_t { kRms };  // y = x / sqrt(mean(x²) + eps) * w

// The gate of the gated FFN down(act(gate(x)) * up(x)).
enum class Activation : uint8_t {
  kSilu,      // SwiGLU (llama, qwen2, phi3)
  kGeluTanh,  // GeGLU with the tanh approximation (gemma2)
};

// What multiplies the queries before q·k.
enum class QueryScale : uint8_t {
  kHeadDim,  // 1/sqrt(head_dim)
  kGemma2,   // 1/sqrt(head_dim), but 1/sqrt(d_model / n_heads) in the 46-layer model: Gemma 2 27B's
             // query_pre_attn_scalar (144), which GGUF does not store; llama.cpp picks it by layer
             // count
  kGemma3,   // the same rule for Gemma 3 27B, the 62-layer model
};

// Which layers attend only within the sliding window: all, or in each period of layers all but
// the last (layer il is windowed when il % period < period - 1).
enum class WindowLayers : uint8_t { kNone, kAll, kPattern };

// Metadata keys (after "<name>.") of scalar multipliers; null: the architecture has none (1).
struct ScaleKeys {
  const char* embedding = nullptr;  // x = token_embd[token] * s (in place of scale_embeddings)
  const char* attention = nullptr;  // replaces the query scale
  const char* residual = nullptr;   // x += s * sublayer output
  const char* logit = nullptr;      // logits / s
};

// What a tensor is for: the member of Weights / LayerWeights it fills.
enum class TensorRole : uint8_t {
  // model-level
  kTokenEmbd,
  kOutputNorm,
  kOutput,
  kRopeFreqs,
  kRopeFactorsShort,
  kRopeFactorsLong,
  // per layer
  kAttnNorm,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnQkv,
  kAttnQBias,
  kAttnKBias,
  kAttnVBias,
  kAttnQNorm,
  kAttnKNorm,
  kAttnOut,
  kPostAttnNorm,
  kFfnNorm,
  kFfnGate,
  kFfnUp,
  kFfnGateUp,
  kFfnDown,
  kPostFfnNorm,
};
constexpr int kNumTensorRoles = static_cast<int>(TensorRole::kPostFfnNorm) + 1;

// The sizes tensor shapes are made of, from ModelConfig.
enum class Dim : uint8_t {
  kNone,       // (the missing second dimension of a vector)
  kDModel,     // d_model
  kHeadDim,    // head_dim
  kQDim,       // n_heads * head_dim
  kKvDim,      // n_kv_heads * head_dim
  kQkvDim,     // q_dim + 2 kv_dim: fused Q, K, V rows
  kDff,        // d_ff
  kDff2,       // 2 d_ff: fused gate and up rows
  kVocab,      // n_vocab
  kRopePairs,  // rope_dim / 2
};

struct TensorDesc {
  TensorRole role;
  const char* name;  // GGUF name; a layer tensor's after its "blk.N." prefix
  Dim n_in;          // ne0, the row length (a vector's length)
  Dim n_out;         // ne1, the rows of a matrix; kNone for a vector
  bool required;
};

// The fields after rope_pairing default to a plain llama's: a row names what differs.
struct Architecture {
  const char* name;  // general.architecture, also the prefix of its metadata keys
  std::span<const TensorDesc> model_tensors;
  std::span<const TensorDesc> layer_tensors;
  RopePairing rope_pairing;
  int nope_period = 0;  // layers il with (il + 1) % nope_period == 0 apply no RoPE; 0: none
  NormKind norm = NormKind::kRms;
  QkNorm qk_norm = QkNorm::kNone;
  Activation activation = Activation::kSilu;
  bool scale_embeddings = false;  // x = token_embd[token] * sqrt(d_model)
  QueryScale query_scale = QueryScale::kHeadDim;
  // Key after "<name>." of the attention logit soft-cap; null: none.
  const char* attn_softcap_key = nullptr;
  const char* final_softcap_key = nullptr;  // key of the final logit soft-cap; null: none
  // A soft-cap key absent from the file means no cap (else an error).
  bool softcaps_optional = false;
  // Key of the window length (0: none); null: no sliding window.
  const char* sliding_window_key = nullptr;
  bool window_optional = false;  // an absent window key means no window (else an error)
  WindowLayers window_layers = WindowLayers::kNone;  // the layers it applies to
  int window_period = 0;  // kPattern: the period when the file has no pattern key
  // kPattern: key of the period; null: window_period is fixed.
  const char* window_pattern_key = nullptr;
  // The RoPE base of the windowed layers, which then turn unscaled (Gemma 3: 10000 when absent);
  // null: every layer uses rope.freq_base and its scaling.
  const char* window_rope_base_key = nullptr;
  ScaleKeys scales = {};
  // What llama.cpp's loader assumes without tokenizer.ggml.pre.
  const char* pre_tokenizer = "default";
};

// Every described architecture (each a row of architecture.cc).
std::span<const Architecture> architectures();
// The row named `name`; kvrt::Error naming the architectures kvrt runs otherwise.
const Architecture& find_architecture(std::string_view name);
// Names of every architecture ("llama, qwen2, ..."), for messages.
std::string architecture_names();

const char* rope_pairing_name(RopePairing p);

}  // namespace kvrt::model
