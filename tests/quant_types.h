// The eleven block-quantized GGUF weight types kvrt runs, for the tests that go over each.
#pragma once

#include "simd/weights/types.h"

namespace kvrt::test {

constexpr simd::WeightType kQuantTypes[] = {
    simd::WeightType::kQ8_0, simd::WeightType::kQ4_0, simd::WeightType::kQ4_1,
    simd::WeightType::kQ5_0, simd::WeightType::kQ5_1, simd::WeightType::kIQ4_NL,
    simd::WeightType::kQ2_K, simd::WeightType::kQ3_K, simd::WeightType::kQ4_K,
    simd::WeightType::kQ5_K, simd::WeightType::kQ6_K};

}  // namespace kvrt::test
