#include "simd/weight_types.h"

#include <string>

#include "common/error.h"
#include "simd/weight_codecs.h"

namespace kvrt::simd {
namespace {

using W = WeightType;

// Every ggml type the GGUF reader accepts; block sizes and bytes as in ggml. Types without a
// codec can be read (their bytes are bounds-checked) but not computed.
constexpr WeightTypeTraits kRows[] = {
    // type    name    block bytes activations  reference codec
    {W::kF32, "F32", 1, 4, W::kF32, ref::f32_to_float, ref::f32_from_float, ref::f32_find_non_finite},
    {W::kF16, "F16", 1, 2, W::kF32, ref::f16_to_float, ref::f16_from_float, ref::f16_find_non_finite},
    {W::kBF16, "BF16", 1, 2, W::kF32, ref::bf16_to_float, ref::bf16_from_float, ref::bf16_find_non_finite},
    {W::kQ8_0, "Q8_0", 32, 34, W::kQ8_0, ref::q8_0_to_float, ref::q8_0_from_float, ref::q8_0_find_non_finite},
    {W::kQ4_0, "Q4_0", 32, 18, W::kQ8_0, nullptr, nullptr, nullptr},
    {W::kQ4_1, "Q4_1", 32, 20, W::kQ8_1, nullptr, nullptr, nullptr},
    {W::kQ5_0, "Q5_0", 32, 22, W::kQ8_0, nullptr, nullptr, nullptr},
    {W::kQ5_1, "Q5_1", 32, 24, W::kQ8_1, nullptr, nullptr, nullptr},
    {W::kQ8_1, "Q8_1", 32, 36, W::kQ8_1, nullptr, nullptr, nullptr},
    {W::kQ2_K, "Q2_K", 256, 84, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kQ3_K, "Q3_K", 256, 110, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kQ4_K, "Q4_K", 256, 144, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kQ5_K, "Q5_K", 256, 176, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kQ6_K, "Q6_K", 256, 210, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kQ8_K, "Q8_K", 256, 292, W::kQ8_K, nullptr, nullptr, nullptr},
    {W::kI8, "I8", 1, 1, W::kF32, nullptr, nullptr, nullptr},
    {W::kI16, "I16", 1, 2, W::kF32, nullptr, nullptr, nullptr},
    {W::kI32, "I32", 1, 4, W::kF32, nullptr, nullptr, nullptr},
    {W::kI64, "I64", 1, 8, W::kF32, nullptr, nullptr, nullptr},
    {W::kF64, "F64", 1, 8, W::kF32, nullptr, nullptr, nullptr},
};

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
