#include "simd/weights/types.h"

#include <cstddef>
#include <string>

#include "common/error.h"
#include "simd/weights/codecs.h"

namespace kvrt::simd {
namespace {

using W = WeightType;

// Every ggml type the GGUF reader accepts; block sizes and bytes as in ggml. Types without a
// decoder can be read (their bytes are bounds-checked) but not computed. The offsets of a block
// type's finiteness check are those of its f16 scale fields; static_asserts below tie them to
// simd/weights/blocks.h.
constexpr WeightTypeTraits kRows[] = {
    // type    name    block bytes activations  reference codec
    {W::kF32, "F32", 1, 4, W::kF32, ref::f32_to_float, ref::f32_from_float, ref::f32_find_non_finite},
    {W::kF16, "F16", 1, 2, W::kF32, ref::f16_to_float, ref::f16_from_float, ref::f16_find_non_finite},
    {W::kBF16, "BF16", 1, 2, W::kF32, ref::bf16_to_float, ref::bf16_from_float, ref::bf16_find_non_finite},
    {W::kQ8_0, "Q8_0", 32, 34, W::kQ8_0, ref::q8_0_to_float, ref::q8_0_from_float, ref::find_non_finite_scale<32, 34, 0>},
    {W::kQ4_0, "Q4_0", 32, 18, W::kQ8_0, ref::q4_0_to_float, ref::q4_0_from_float, ref::find_non_finite_scale<32, 18, 0>},
    {W::kQ4_1, "Q4_1", 32, 20, W::kQ8_1, ref::q4_1_to_float, ref::q4_1_from_float, ref::find_non_finite_scale<32, 20, 0, 2>},
    {W::kQ5_0, "Q5_0", 32, 22, W::kQ8_0, ref::q5_0_to_float, ref::q5_0_from_float, ref::find_non_finite_scale<32, 22, 0>},
    {W::kQ5_1, "Q5_1", 32, 24, W::kQ8_1, ref::q5_1_to_float, ref::q5_1_from_float, ref::find_non_finite_scale<32, 24, 0, 2>},
    {W::kIQ4_NL, "IQ4_NL", 32, 18, W::kQ8_0, ref::iq4_nl_to_float, ref::iq4_nl_from_float, ref::find_non_finite_scale<32, 18, 0>},
    // Activation formats: not weights kvrt computes with (no file type llama.cpp writes).
    {W::kQ8_1, "Q8_1", 32, 36, W::kQ8_1, nullptr, ref::q8_1_from_float, nullptr},
    {W::kQ8_K, "Q8_K", 256, 292, W::kQ8_K, nullptr, ref::q8_k_from_float, nullptr},
    // K types: super-blocks of 256 values; offsets of d (and dmin) as in simd/weights/blocks.h.
    {W::kQ2_K, "Q2_K", 256, 84, W::kQ8_K, ref::q2_k_to_float, ref::q2_k_from_float, ref::find_non_finite_scale<256, 84, 80, 82>},
    {W::kQ3_K, "Q3_K", 256, 110, W::kQ8_K, ref::q3_k_to_float, ref::q3_k_from_float, ref::find_non_finite_scale<256, 110, 108>},
    {W::kQ4_K, "Q4_K", 256, 144, W::kQ8_K, ref::q4_k_to_float, ref::q4_k_from_float, ref::find_non_finite_scale<256, 144, 0, 2>},
    {W::kQ5_K, "Q5_K", 256, 176, W::kQ8_K, ref::q5_k_to_float, ref::q5_k_from_float, ref::find_non_finite_scale<256, 176, 0, 2>},
    {W::kQ6_K, "Q6_K", 256, 210, W::kQ8_K, ref::q6_k_to_float, ref::q6_k_from_float, ref::find_non_finite_scale<256, 210, 208>},
    {W::kI8, "I8", 1, 1, W::kF32, nullptr, nullptr, nullptr},
    {W::kI16, "I16", 1, 2, W::kF32, nullptr, nullptr, nullptr},
    {W::kI32, "I32", 1, 4, W::kF32, nullptr, nullptr, nullptr},
    {W::kI64, "I64", 1, 8, W::kF32, nullptr, nullptr, nullptr},
    {W::kF64, "F64", 1, 8, W::kF32, nullptr, nullptr, nullptr},
};

static_assert(offsetof(BlockQ4_1, m) == 2 && offsetof(BlockQ5_1, m) == 2);
static_assert(offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82);
static_assert(offsetof(BlockQ3_K, d) == 108 && offsetof(BlockQ6_K, d) == 208);
static_assert(offsetof(BlockQ4_K, dmin) == 2 && offsetof(BlockQ5_K, dmin) == 2);

}  // namespace

const WeightTypeTraits* find_weight_type(uint32_t ggml_id) {
  for (const WeightTypeTraits& r : kRows) {
    if (static_cast<uint32_t>(r.type) == ggml_id) return &r;
  }
  return nullptr;
}

const WeightTypeTraits& weight_type_traits(WeightType t) {
  const WeightTypeTraits* r = find_weight_type(static_cast<uint32_t>(t));
  KVRT_ASSERT(r != nullptr);
  return *r;
}

const char* weight_type_name(WeightType t) {
  const WeightTypeTraits* r = find_weight_type(static_cast<uint32_t>(t));
  return r ? r->name : "unknown";
}

const char* computable_weight_type_names() {
  static const std::string names = [] {
    std::string s;
    for (const WeightTypeTraits& r : kRows) {
      if (r.computable()) s += (s.empty() ? "" : ", ") + std::string(r.name);
    }
    return s;
  }();
  return names.c_str();
}

}  // namespace kvrt::simd
