#include "model/architecture.h"

#include "common/error.h"

namespace kvrt::model {
namespace {

using D = Dim;
using R = TensorRole;

// Model-level tensors: the embedding, the final norm and the output matrix (absent: tied to the
// embedding).
constexpr TensorDesc kTiedOutput[] = {
    {R::kTokenEmbd, "token_embd.weight", D::kDModel, D::kVocab, true},
    {R::kOutputNorm, "output_norm.weight", D::kDModel, D::kNone, true},
    {R::kOutput, "output.weight", D::kDModel, D::kVocab, false},
};
constexpr TensorDesc kLlamaModel[] = {
    {R::kTokenEmbd, "token_embd.weight", D::kDModel, D::kVocab, true},
    {R::kOutputNorm, "output_norm.weight", D::kDModel, D::kNone, true},
    {R::kOutput, "output.weight", D::kDModel, D::kVocab, false},
    {R::kRopeFreqs, "rope_freqs.weight", D::kRopePairs, D::kNone,
     false},  // Llama 3 frequency scaling
};
constexpr TensorDesc kSeparateOutput[] = {
    {R::kTokenEmbd, "token_embd.weight", D::kDModel, D::kVocab, true},
    {R::kOutputNorm, "output_norm.weight", D::kDModel, D::kNone, true},
    {R::kOutput, "output.weight", D::kDModel, D::kVocab, true},
};
// Phi-3's output is separate; Phi-4-mini ties it and has LongRoPE frequency factors, the long
// ones for contexts past rope.scaling.original_context_length.
constexpr TensorDesc kPhi3Model[] = {
    {R::kTokenEmbd, "token_embd.weight", D::kDModel, D::kVocab, true},
    {R::kOutputNorm, "output_norm.weight", D::kDModel, D::kNone, true},
    {R::kOutput, "output.weight", D::kDModel, D::kVocab, false},
    {R::kRopeFactorsShort, "rope_factors_short.weight", D::kRopePairs, D::kNone, false},
    {R::kRopeFactorsLong, "rope_factors_long.weight", D::kRopePairs, D::kNone, false},
};

constexpr TensorDesc kLlamaLayer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
};

constexpr TensorDesc kQwen2Layer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnQBias, "attn_q.bias", D::kQDim, D::kNone, true},
    {R::kAttnKBias, "attn_k.bias", D::kKvDim, D::kNone, true},
    {R::kAttnVBias, "attn_v.bias", D::kKvDim, D::kNone, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
};

// llama's layer with one RMSNorm weight per head dimension for Q and for K.
constexpr TensorDesc kQwen3Layer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnQNorm, "attn_q_norm.weight", D::kHeadDim, D::kNone, true},
    {R::kAttnKNorm, "attn_k_norm.weight", D::kHeadDim, D::kNone, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
};

// Fused Q, K, V rows (in that order) and fused gate and up rows (gate first).
constexpr TensorDesc kPhi3Layer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQkv, "attn_qkv.weight", D::kDModel, D::kQkvDim, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGateUp, "ffn_up.weight", D::kDModel, D::kDff2, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
};

constexpr TensorDesc kGemma2Layer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kPostAttnNorm, "post_attention_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
    {R::kPostFfnNorm, "post_ffw_norm.weight", D::kDModel, D::kNone, true},
};

// Gemma 2's layer with per-head Q and K norms.
constexpr TensorDesc kGemma3Layer[] = {
    {R::kAttnNorm, "attn_norm.weight", D::kDModel, D::kNone, true},
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnQNorm, "attn_q_norm.weight", D::kHeadDim, D::kNone, true},
    {R::kAttnKNorm, "attn_k_norm.weight", D::kHeadDim, D::kNone, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kPostAttnNorm, "post_attention_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnNorm, "ffn_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
    {R::kPostFfnNorm, "post_ffw_norm.weight", D::kDModel, D::kNone, true},
};

// No pre-norms: attention and FFN read the residual stream; their outputs are normed before the
// add. Q and K are normed over their whole width.
constexpr TensorDesc kOlmo2Layer[] = {
    {R::kAttnQ, "attn_q.weight", D::kDModel, D::kQDim, true},
    {R::kAttnK, "attn_k.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnV, "attn_v.weight", D::kDModel, D::kKvDim, true},
    {R::kAttnQNorm, "attn_q_norm.weight", D::kQDim, D::kNone, true},
    {R::kAttnKNorm, "attn_k_norm.weight", D::kKvDim, D::kNone, true},
    {R::kAttnOut, "attn_output.weight", D::kQDim, D::kDModel, true},
    {R::kPostAttnNorm, "post_attention_norm.weight", D::kDModel, D::kNone, true},
    {R::kFfnGate, "ffn_gate.weight", D::kDModel, D::kDff, true},
    {R::kFfnUp, "ffn_up.weight", D::kDModel, D::kDff, true},
    {R::kFfnDown, "ffn_down.weight", D::kDff, D::kDModel, true},
    {R::kPostFfnNorm, "post_ffw_norm.weight", D::kDModel, D::kNone, true},
};

using P = RopePairing;
using A = Activation;
using WL = WindowLayers;
using QS = QueryScale;
using QK = QkNorm;

constexpr ScaleKeys kGraniteScales{"embedding_scale", "attention.scale", "residual_scale",
                                   "logit_scale"};

// One row per architecture: its fields that differ from a plain llama's (architecture.h says
// what each means and its default).
constexpr Architecture kArchitectures[] = {
    {.name = "llama",
     .model_tensors = kLlamaModel,
     .layer_tensors = kLlamaLayer,
     .rope_pairing = P::kInterleaved},
    {.name = "qwen2",
     .model_tensors = kTiedOutput,
     .layer_tensors = kQwen2Layer,
     .rope_pairing = P::kNeox,
     .pre_tokenizer = "qwen2"},
    // A sliding_window of 0 is what the converter writes for Phi-4-mini: no window.
    {.name = "phi3",
     .model_tensors = kPhi3Model,
     .layer_tensors = kPhi3Layer,
     .rope_pairing = P::kNeox,
     .sliding_window_key = "attention.sliding_window",
     .window_optional = true,
     .window_layers = WL::kAll},
    {.name = "gemma2",
     .model_tensors = kTiedOutput,
     .layer_tensors = kGemma2Layer,
     .rope_pairing = P::kNeox,
     .activation = A::kGeluTanh,
     .scale_embeddings = true,
     .query_scale = QS::kGemma2,
     .attn_softcap_key = "attn_logit_softcapping",
     .final_softcap_key = "final_logit_softcapping",
     .sliding_window_key = "attention.sliding_window",
     .window_layers = WL::kPattern,
     .window_period = 2},
    {.name = "qwen3",
     .model_tensors = kTiedOutput,
     .layer_tensors = kQwen3Layer,
     .rope_pairing = P::kNeox,
     .qk_norm = QK::kPerHead,
     .pre_tokenizer = "qwen2"},
    // Five windowed layers in six (the pattern key's period), their RoPE base 10000 unscaled; the
    // final soft-cap only where its key is (no attention soft-cap).
    {.name = "gemma3",
     .model_tensors = kTiedOutput,
     .layer_tensors = kGemma3Layer,
     .rope_pairing = P::kNeox,
     .qk_norm = QK::kPerHead,
     .activation = A::kGeluTanh,
     .scale_embeddings = true,
     .query_scale = QS::kGemma3,
     .final_softcap_key = "final_logit_softcapping",
     .softcaps_optional = true,
     .sliding_window_key = "attention.sliding_window",
     .window_optional = true,
     .window_layers = WL::kPattern,
     .window_period = 6,
     .window_pattern_key = "attention.sliding_window_pattern",
     .window_rope_base_key = "rope.freq_base_swa"},
    // llama with no RoPE on every fourth layer (no metadata key says so).
    {.name = "smollm3",
     .model_tensors = kTiedOutput,
     .layer_tensors = kLlamaLayer,
     .rope_pairing = P::kInterleaved,
     .nope_period = 4},
    {.name = "granite",
     .model_tensors = kTiedOutput,
     .layer_tensors = kLlamaLayer,
     .rope_pairing = P::kInterleaved,
     .scales = kGraniteScales},
    {.name = "olmo2",
     .model_tensors = kSeparateOutput,
     .layer_tensors = kOlmo2Layer,
     .rope_pairing = P::kNeox,
     .qk_norm = QK::kFullWidth},
    // llama with YaRN and the attention temperature (config.cc reads both where their keys are).
    {.name = "mistral3",
     .model_tensors = kTiedOutput,
     .layer_tensors = kLlamaLayer,
     .rope_pairing = P::kInterleaved},
};

// Architectures users' files name that kvrt does not run, with what they need that it lacks.
struct Unsupported {
  const char* name;
  const char* why;
};
constexpr Unsupported kUnsupported[] = {
    {"qwen35", "Qwen3.5's gated delta-net layers are recurrent"},
    {"qwen3next",
     "Qwen3-Next's gated delta-net layers are recurrent and its FFN a mixture of experts"},
    {"lfm2", "LFM2's short-convolution layers are recurrent"},
    {"lfm2moe", "LFM2's short-convolution layers are recurrent and its FFN a mixture of experts"},
    {"mamba", "Mamba is a recurrent state-space model"},
    {"mamba2", "Mamba 2 is a recurrent state-space model"},
    {"rwkv6", "RWKV is a recurrent model"},
    {"rwkv7", "RWKV is a recurrent model"},
    {"granitehybrid", "Granite 4.0's hybrid layers are Mamba 2 (recurrent)"},
    {"falcon-h1", "Falcon-H1's hybrid layers are Mamba 2 (recurrent)"},
    {"jamba", "Jamba's hybrid layers are Mamba (recurrent)"},
    {"gemma3n", "Gemma 3n's per-layer embeddings and AltUp are not implemented"},
    {"qwen2moe", "its FFN is a mixture of experts, which needs expert routing"},
    {"qwen3moe", "its FFN is a mixture of experts, which needs expert routing"},
    {"granitemoe", "its FFN is a mixture of experts, which needs expert routing"},
    {"olmoe", "its FFN is a mixture of experts, which needs expert routing"},
    {"phimoe", "its FFN is a mixture of experts, which needs expert routing"},
    {"deepseek2", "its FFN is a mixture of experts, which needs expert routing"},
    {"llama4", "its FFN is a mixture of experts, which needs expert routing"},
    {"gpt-oss", "its FFN is a mixture of experts, which needs expert routing"},
};

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

std::string architecture_names() {
  std::string names;
  for (const Architecture& a : kArchitectures)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

const Architecture& find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return a;
  }
  for (const Unsupported& u : kUnsupported) {
    if (name == u.name)
      throw Error("architecture '" + std::string(name) + "' is not supported: " + u.why +
                  " (kvrt runs: " + architecture_names() + ")");
  }
  throw Error("architecture '" + std::string(name) +
              "' is not supported (kvrt runs: " + architecture_names() + ")");
}

const char* rope_pairing_name(RopePairing p) {
  return p == RopePairing::kNeox ? "neox" : "interleaved";
}

}  // namespace kvrt::model
