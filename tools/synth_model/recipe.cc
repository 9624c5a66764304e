#include "tools/synth_model/recipe.h"

#include <cctype>

#include "common/error.h"

namespace kvrt::synth {
namespace {

using W = simd::WeightType;

constexpr struct {
  const char* name;
  WeightChoice choice;
} kChoices[] = {
    {"f32", {W::kF32, WeightMix::kPure}},   {"f16", {W::kF16, WeightMix::kPure}},
    {"bf16", {W::kBF16, WeightMix::kPure}}, {"q8_0", {W::kQ8_0, WeightMix::kPure}},
    {"q4_0", {W::kQ4_0, WeightMix::kPure}}, {"q4_1", {W::kQ4_1, WeightMix::kPure}},
    {"q5_0", {W::kQ5_0, WeightMix::kPure}}, {"q5_1", {W::kQ5_1, WeightMix::kPure}},
    {"q2_k", {W::kQ2_K, WeightMix::kPure}}, {"q3_k", {W::kQ3_K, WeightMix::kPure}},
    {"q4_k", {W::kQ4_K, WeightMix::kPure}}, {"q5_k", {W::kQ5_K, WeightMix::kPure}},
    {"q6_k", {W::kQ6_K, WeightMix::kPure}}, {"iq4_nl", {W::kIQ4_NL, WeightMix::kPure}},
    {"q3_k_m", {W::kQ3_K, WeightMix::kM}},  {"q4_k_m", {W::kQ4_K, WeightMix::kM}},
    {"q5_k_m", {W::kQ5_K, WeightMix::kM}},
};

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

}  // namespace

WeightChoice parse_weight_choice(std::string_view name) {
  for (const auto& c : kChoices) {
    if (name == c.name) return c.choice;
  }
  throw Error("unknown weight type '" + std::string(name) + "' (use " + weight_choice_names() + ")",
              ErrorKind::kUsage);
}

const char* weight_choice_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& c : kChoices) s += (s.empty() ? "" : ", ") + std::string(c.name);
    return s;
  }();
  return names.c_str();
}

std::string weight_choice_name(const WeightChoice& w) {
  for (const auto& c : kChoices) {
    if (c.choice.type == w.type && c.choice.mix == w.mix) return c.name;
  }
  return "?";
}

// llama-quantize's defaults (llama_tensor_get_type) for the _M file types, no imatrix.
simd::WeightType matrix_type(const WeightChoice& w, std::string_view role, int layer,
                             int n_layers) {
  if (w.mix == WeightMix::kPure) return w.type;
  if (role == "output") return W::kQ6_K;
  const bool q3 = w.type == W::kQ3_K;
  if (role == "attn_v") {
    if (q3) return layer < 2 ? W::kQ5_K : W::kQ4_K;
    return more_bits(layer, n_layers) ? W::kQ6_K : w.type;
  }
  if (role == "ffn_down") {
    if (q3)
      return layer < n_layers / 16 ? W::kQ5_K : more_bits(layer, n_layers) ? W::kQ4_K : W::kQ3_K;
    return more_bits(layer, n_layers) ? W::kQ6_K : w.type;
  }
  if (role == "attn_output" && q3) return W::kQ4_K;
  if (role == "attn_qkv")
    return q3 ? W::kQ4_K : w.type == W::kQ4_K ? W::kQ5_K : W::kQ6_K;  // phi3's fused QKV
  return w.type;
}

}  // namespace kvrt::synth
