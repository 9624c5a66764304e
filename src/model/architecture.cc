#include "model/architecture.h"

#include <algorithm>

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

constexpr Architecture kArchitectures[] = {
    // name     model tensors    layer tensors  RoPE        norm            FFN      emb. scale
    //          attn soft-cap              final soft-cap             sliding window                          pre-tokenizer
    {"llama", kLlamaModel, kLlamaLayer, P::kInterleaved, NormKind::kRms, A::kSilu, false,
     nullptr, nullptr, nullptr, WL::kNone, "default"},
    {"qwen2", kTiedOutput, kQwen2Layer, P::kNeox, NormKind::kRms, A::kSilu, false,
     nullptr, nullptr, nullptr, WL::kNone, "qwen2"},
    {"phi3", kSeparateOutput, kPhi3Layer, P::kNeox, NormKind::kRms, A::kSilu, false,
     nullptr, nullptr, "attention.sliding_window", WL::kAll, "default"},
    {"gemma2", kTiedOutput, kGemma2Layer, P::kNeox, NormKind::kRms, A::kGeluTanh, true,
     "attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window", WL::kEven, "default"},
};

// The tensors the forward pass (model/session.cc) uses; other roles are gaps.
constexpr R kForwardRoles[] = {R::kTokenEmbd, R::kOutputNorm, R::kOutput,    R::kRopeFreqs,
                               R::kAttnNorm,  R::kAttnQ,      R::kAttnK,     R::kAttnV,
                               R::kAttnQBias, R::kAttnKBias,  R::kAttnVBias, R::kAttnOut,
                               R::kAttnQkv,   R::kFfnNorm,    R::kFfnGate,   R::kFfnUp,
                               R::kFfnGateUp, R::kFfnDown};

bool forward_uses(R role) {
  for (R r : kForwardRoles) {
    if (r == role) return true;
  }
  return false;
}

// What a tensor the forward pass does not use stands for, in messages.
const char* feature_of(R role) {
  switch (role) {
    case R::kPostAttnNorm:
    case R::kPostFfnNorm: return "post-attention and post-FFN norms";
    default: return "an unused tensor role";
  }
}

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

std::string runnable_architecture_names() {
  std::string names;
  for (const Architecture& a : kArchitectures) {
    const bool none[kNumTensorRoles] = {};
    if (forward_gaps(a, none).empty()) names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  return names;
}

const Architecture& find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return a;
  }
  throw Error("architecture '" + std::string(name) + "' is not supported (kvrt runs: " +
              runnable_architecture_names() + ")");
}

std::vector<std::string> forward_gaps(const Architecture& arch, const bool (&present)[kNumTensorRoles]) {
  std::vector<std::string> gaps;
  if (arch.activation != Activation::kSilu) gaps.push_back("a GeGLU feed-forward");
  if (arch.scale_embeddings) gaps.push_back("embedding scaling");
  if (arch.attn_softcap_key || arch.final_softcap_key) gaps.push_back("logit soft-caps");
  for (const auto& tensors : {arch.model_tensors, arch.layer_tensors}) {
    for (const TensorDesc& t : tensors) {
      const std::string gap = feature_of(t.role);
      if (forward_uses(t.role) || !(t.required || present[static_cast<int>(t.role)])) continue;
      if (std::find(gaps.begin(), gaps.end(), gap) == gaps.end()) gaps.push_back(gap);
    }
  }
  return gaps;
}

const char* rope_pairing_name(RopePairing p) { return p == RopePairing::kNeox ? "neox" : "interleaved"; }

}  // namespace kvrt::model
