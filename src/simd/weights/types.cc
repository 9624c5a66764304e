#include "simd/weights/types.h"

#include <cstddef>
#include <string>

#include "common/error.h"
#include "simd/weights/codecs.h"

namespace kvrt::simd {
namespace {

using W = WeightType;

// Every ggml type the GGUF reader accepts; block sizes and bytes as in ggml (the block structs of
// simd/weights/blocks.h). Types without a decoder can be read (their bytes are bounds-checked) but
// not computed. A block type's finiteness check reads its f16 scale fields.
template <class B, int64_t kBlock, size_t... kScales>
constexpr auto scan_scales = ref::find_non_finite_scale<kBlock, sizeof(B), kScales...>;

constexpr WeightTypeTraits plain_row(W type, const char* name, int64_t bytes) {
  return {.type = type,
          .name = name,
          .block = 1,
          .block_bytes = bytes,
          .act = W::kF32,
          .to_float_ref = nullptr,
          .from_float_ref = nullptr,
          .find_non_finite = nullptr};
}

constexpr WeightTypeTraits kRows[] = {
    {.type = W::kF32,
     .name = "F32",
     .block = 1,
     .block_bytes = 4,
     .act = W::kF32,
     .to_float_ref = ref::f32_to_float,
     .from_float_ref = ref::f32_from_float,
     .find_non_finite = ref::f32_find_non_finite},
    {.type = W::kF16,
     .name = "F16",
     .block = 1,
     .block_bytes = 2,
     .act = W::kF32,
     .to_float_ref = ref::f16_to_float,
     .from_float_ref = ref::f16_from_float,
     .find_non_finite = ref::f16_find_non_finite},
    {.type = W::kBF16,
     .name = "BF16",
     .block = 1,
     .block_bytes = 2,
     .act = W::kF32,
     .to_float_ref = ref::bf16_to_float,
     .from_float_ref = ref::bf16_from_float,
     .find_non_finite = ref::bf16_find_non_finite},
    {.type = W::kQ8_0,
     .name = "Q8_0",
     .block = kQK,
     .block_bytes = sizeof(BlockQ8_0),
     .act = W::kQ8_0,
     .to_float_ref = ref::q8_0_to_float,
     .from_float_ref = ref::q8_0_from_float,
     .find_non_finite = scan_scales<BlockQ8_0, kQK, offsetof(BlockQ8_0, d)>},
    {.type = W::kQ4_0,
     .name = "Q4_0",
     .block = kQK,
     .block_bytes = sizeof(BlockQ4_0),
     .act = W::kQ8_0,
     .to_float_ref = ref::q4_0_to_float,
     .from_float_ref = ref::q4_0_from_float,
     .find_non_finite = scan_scales<BlockQ4_0, kQK, offsetof(BlockQ4_0, d)>},
    {.type = W::kQ4_1,
     .name = "Q4_1",
     .block = kQK,
     .block_bytes = sizeof(BlockQ4_1),
     .act = W::kQ8_1,
     .to_float_ref = ref::q4_1_to_float,
     .from_float_ref = ref::q4_1_from_float,
     .find_non_finite =
         scan_scales<BlockQ4_1, kQK, offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)>},
    {.type = W::kQ5_0,
     .name = "Q5_0",
     .block = kQK,
     .block_bytes = sizeof(BlockQ5_0),
     .act = W::kQ8_0,
     .to_float_ref = ref::q5_0_to_float,
     .from_float_ref = ref::q5_0_from_float,
     .find_non_finite = scan_scales<BlockQ5_0, kQK, offsetof(BlockQ5_0, d)>},
    {.type = W::kQ5_1,
     .name = "Q5_1",
     .block = kQK,
     .block_bytes = sizeof(BlockQ5_1),
     .act = W::kQ8_1,
     .to_float_ref = ref::q5_1_to_float,
     .from_float_ref = ref::q5_1_from_float,
     .find_non_finite =
         scan_scales<BlockQ5_1, kQK, offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)>},
    {.type = W::kIQ4_NL,
     .name = "IQ4_NL",
     .block = kQK,
     .block_bytes = sizeof(BlockIQ4_NL),
     .act = W::kQ8_0,
     .to_float_ref = ref::iq4_nl_to_float,
     .from_float_ref = ref::iq4_nl_from_float,
     .find_non_finite = scan_scales<BlockIQ4_NL, kQK, offsetof(BlockIQ4_NL, d)>},
    // Activation formats: not weights kvrt computes with (no file type llama.cpp writes).
    {.type = W::kQ8_1,
     .name = "Q8_1",
     .block = kQK,
     .block_bytes = sizeof(BlockQ8_1),
     .act = W::kQ8_1,
     .to_float_ref = nullptr,
     .from_float_ref = ref::q8_1_from_float,
     .find_non_finite = nullptr},
    {.type = W::kQ8_K,
     .name = "Q8_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ8_K),
     .act = W::kQ8_K,
     .to_float_ref = nullptr,
     .from_float_ref = ref::q8_k_from_float,
     .find_non_finite = nullptr},
    // K types: super-blocks of 256 values.
    {.type = W::kQ2_K,
     .name = "Q2_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ2_K),
     .act = W::kQ8_K,
     .to_float_ref = ref::q2_k_to_float,
     .from_float_ref = ref::q2_k_from_float,
     .find_non_finite =
         scan_scales<BlockQ2_K, kQK_K, offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)>},
    {.type = W::kQ3_K,
     .name = "Q3_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ3_K),
     .act = W::kQ8_K,
     .to_float_ref = ref::q3_k_to_float,
     .from_float_ref = ref::q3_k_from_float,
     .find_non_finite = scan_scales<BlockQ3_K, kQK_K, offsetof(BlockQ3_K, d)>},
    {.type = W::kQ4_K,
     .name = "Q4_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ4_K),
     .act = W::kQ8_K,
     .to_float_ref = ref::q4_k_to_float,
     .from_float_ref = ref::q4_k_from_float,
     .find_non_finite =
         scan_scales<BlockQ4_K, kQK_K, offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)>},
    {.type = W::kQ5_K,
     .name = "Q5_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ5_K),
     .act = W::kQ8_K,
     .to_float_ref = ref::q5_k_to_float,
     .from_float_ref = ref::q5_k_from_float,
     .find_non_finite =
         scan_scales<BlockQ5_K, kQK_K, offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)>},
    {.type = W::kQ6_K,
     .name = "Q6_K",
     .block = kQK_K,
     .block_bytes = sizeof(BlockQ6_K),
     .act = W::kQ8_K,
     .to_float_ref = ref::q6_k_to_float,
     .from_float_ref = ref::q6_k_from_float,
     .find_non_finite = scan_scales<BlockQ6_K, kQK_K, offsetof(BlockQ6_K, d)>},
    // Plain element types kvrt reads but does not compute with.
    plain_row(W::kI8, "I8", 1),
    plain_row(W::kI16, "I16", 2),
    plain_row(W::kI32, "I32", 4),
    plain_row(W::kI64, "I64", 8),
    plain_row(W::kF64, "F64", 8),
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
