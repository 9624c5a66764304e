// Which weight type each matrix of a synthetic model gets: one type for every matrix ("q4_0"), or
// llama-quantize's default recipe for a mixed file type ("q4_k_m": Q4_K with Q6_K for the output
// matrix and some attn_v / ffn_down layers), so benchmarks and tests can make the mixed files
// users bring.
#pragma once

#include <string>
#include <string_view>

#include "simd/weights/types.h"

namespace kvrt::synth {

enum class WeightMix {
  kPure,  // every matrix of the bulk type
  kM,     // llama-quantize's _M recipe of a K type (Q3_K_M, Q4_K_M, Q5_K_M)
};

struct WeightChoice {
  simd::WeightType type = simd::WeightType::kF16;  // the bulk type
  WeightMix mix = WeightMix::kPure;
};

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k" … "q6_k", "iq4_nl", and
// "q3_k_m", "q4_k_m", "q5_k_m"; anything else is a kvrt::Error (usage) listing them.
WeightChoice parse_weight_choice(std::string_view name);
const char* weight_choice_names();                      // the list above, for usage text and errors
std::string weight_choice_name(const WeightChoice& w);  // "q4_k_m"

// The type of matrix `role` ("token_embd", "output", "attn_q" … "ffn_down", "attn_qkv") of layer
// `layer` (of n_layers; ignored for the model-level matrices). A tied embedding is asked for as
// "output": llama-quantize gives it the output matrix's type.
simd::WeightType matrix_type(const WeightChoice& w, std::string_view role, int layer, int n_layers);

}  // namespace kvrt::synth
