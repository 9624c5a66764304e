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
    {R::kRopeFreqs, "rope_freqs.weight", D::kRopePairs, D::kNone, false},  // Llama 3 frequency scaling
};
constexpr TensorDesc kSeparateOutput[] = {
    {R::kTokenEmbd, "token_embd.weight", D::kDModel, D::kVocab, true},
    {R::kOutputNorm, "output_norm.weight", D::kDModel, D::kNone, true},
    {R::kOutput, "output.weight", D::kDModel, D::kVocab, true},
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

using P = RopePairing;
using A = Activation;
using WL = WindowLayers;
using QS = QueryScale;

constexpr Architecture kArchitectures[] = {
    // name     model tensors    layer tensors  RoPE        norm            FFN      emb. scale  query scale
    //          attn soft-cap              final soft-cap             sliding window                          pre-tokenizer
    {"llama", kLlamaModel, kLlamaLayer, P::kInterleaved, NormKind::kRms, A::kSilu, false, QS::kHeadDim,
     nullptr, nullptr, nullptr, WL::kNone, "default"},
    {"qwen2", kTiedOutput, kQwen2Layer, P::kNeox, NormKind::kRms, A::kSilu, false, QS::kHeadDim,
     nullptr, nullptr, nullptr, WL::kNone, "qwen2"},
    {"phi3", kSeparateOutput, kPhi3Layer, P::kNeox, NormKind::kRms, A::kSilu, false, QS::kHeadDim,
     nullptr, nullptr, "attention.sliding_window", WL::kAll, "default"},
    {"gemma2", kTiedOutput, kGemma2Layer, P::kNeox, NormKind::kRms, A::kGeluTanh, true, QS::kGemma2,
     "attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window", WL::kEven, "default"},
};

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

std::string architecture_names() {
  std::string names;
  for (const Architecture& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

const Architecture& find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return a;
  }
  throw Error("architecture '" + std::string(name) + "' is not supported (kvrt runs: " + architecture_names() + ")");
}

const char* rope_pairing_name(RopePairing p) { return p == RopePairing::kNeox ? "neox" : "interleaved"; }

}  // namespace kvrt::model
