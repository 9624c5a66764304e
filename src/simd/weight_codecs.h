// Reference codecs of the weight types (simd/weight_types.h rows): to-float and from-float of
// n values (whole blocks), and the check for values that are not finite. Plain C++, the same on
// every CPU: the oracle of the SIMD kernels and the scalar rung's to_float slots.
#pragma once

#include <cstdint>

namespace kvrt::simd::ref {

void f32_to_float(const uint8_t* src, int64_t n, float* dst);
void f16_to_float(const uint8_t* src, int64_t n, float* dst);
void bf16_to_float(const uint8_t* src, int64_t n, float* dst);
void q8_0_to_float(const uint8_t* src, int64_t n, float* dst);

void f32_from_float(const float* x, int64_t n, uint8_t* dst);
void f16_from_float(const float* x, int64_t n, uint8_t* dst);   // round to nearest, ties to even
void bf16_from_float(const float* x, int64_t n, uint8_t* dst);  // round to nearest, ties to even
// llama.cpp's reference block: d = max|x| / 127 as f16, codes round(x / d) (ties away from zero).
void q8_0_from_float(const float* x, int64_t n, uint8_t* dst);

// Index of the first of n stored values that is NaN or infinite (for Q8_0: whose block scale
// is), or -1.
int64_t f32_find_non_finite(const uint8_t* src, int64_t n);
int64_t f16_find_non_finite(const uint8_t* src, int64_t n);
int64_t bf16_find_non_finite(const uint8_t* src, int64_t n);
int64_t q8_0_find_non_finite(const uint8_t* src, int64_t n);

}  // namespace kvrt::simd::ref
