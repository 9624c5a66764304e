#include "simd/weight_types.h"

#include <string>

#include "common/error.h"

namespace kvrt::simd {
namespace {

using W = WeightType;

// Every ggml type the GGUF reader accepts; block sizes and bytes as in ggml.
constexpr WeightTypeTraits kRows[] = {
    // type     name    block bytes computable activations
    {W::kF32, "F32", 1, 4, true, W::kF32},
    {W::kF16, "F16", 1, 2, true, W::kF32},
    {W::kBF16, "BF16", 1, 2, true, W::kF32},
    {W::kQ8_0, "Q8_0", 32, 34, true, W::kQ8_0},
    {W::kQ4_0, "Q4_0", 32, 18, false, W::kQ8_0},
    {W::kQ4_1, "Q4_1", 32, 20, false, W::kQ8_1},
    {W::kQ5_0, "Q5_0", 32, 22, false, W::kQ8_0},
    {W::kQ5_1, "Q5_1", 32, 24, false, W::kQ8_1},
    {W::kQ8_1, "Q8_1", 32, 36, false, W::kQ8_1},
    {W::kQ2_K, "Q2_K", 256, 84, false, W::kQ8_K},
    {W::kQ3_K, "Q3_K", 256, 110, false, W::kQ8_K},
    {W::kQ4_K, "Q4_K", 256, 144, false, W::kQ8_K},
    {W::kQ5_K, "Q5_K", 256, 176, false, W::kQ8_K},
    {W::kQ6_K, "Q6_K", 256, 210, false, W::kQ8_K},
    {W::kQ8_K, "Q8_K", 256, 292, false, W::kQ8_K},
    {W::kI8, "I8", 1, 1, false, W::kF32},
    {W::kI16, "I16", 1, 2, false, W::kF32},
    {W::kI32, "I32", 1, 4, false, W::kF32},
    {W::kI64, "I64", 1, 8, false, W::kF32},
    {W::kF64, "F64", 1, 8, false, W::kF32},
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
      if (r.computable) s += (s.empty() ? "" : ", ") + std::string(r.name);
    }
    return s;
  }();
  return names.c_str();
}

}  // namespace kvrt::simd
