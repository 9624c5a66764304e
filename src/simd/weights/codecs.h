// Reference codecs of the weight types (simd/weights/types.h rows): to-float and from-float of
// n values (whole blocks), and the check for values that are not finite. Plain C++, the same on
// every CPU: the oracle of the SIMD kernels and the scalar rung's to_float slots.
#pragma once

#include <cstdint>

namespace kvrt::simd::ref {

void f32_to_float(const uint8_t* src, int64_t n, float* dst);
void f16_to_float(const uint8_t* src, int64_t n, float* dst);
void bf16_to_float(const uint8_t* src, int64_t n, float* dst);
// f16 rounded to bf16 (the F16 type's to_bf16 slot): as f16_to_float, then bf16_from_float.
void f16_to_bf16(const uint8_t* src, int64_t n, uint16_t* dst);
void q8_0_to_float(const uint8_t* src, int64_t n, float* dst);
// weights/codecs_q.cc: the other 32-value block types and Q8_1.
void q4_0_to_float(const uint8_t* src, int64_t n, float* dst);
void q4_1_to_float(const uint8_t* src, int64_t n, float* dst);
void q5_0_to_float(const uint8_t* src, int64_t n, float* dst);
void q5_1_to_float(const uint8_t* src, int64_t n, float* dst);
void iq4_nl_to_float(const uint8_t* src, int64_t n, float* dst);
void q8_1_to_float(const uint8_t* src, int64_t n, float* dst);
// weights/codecs_k.cc: the K types and Q8_K.
void q2_k_to_float(const uint8_t* src, int64_t n, float* dst);
void q3_k_to_float(const uint8_t* src, int64_t n, float* dst);
void q4_k_to_float(const uint8_t* src, int64_t n, float* dst);
void q5_k_to_float(const uint8_t* src, int64_t n, float* dst);
void q6_k_to_float(const uint8_t* src, int64_t n, float* dst);
void q8_k_to_float(const uint8_t* src, int64_t n, float* dst);

void f32_from_float(const float* x, int64_t n, uint8_t* dst);
void f16_from_float(const float* x, int64_t n, uint8_t* dst);   // round to nearest, ties to even
void bf16_from_float(const float* x, int64_t n, uint8_t* dst);  // round to nearest, ties to even
// llama.cpp's reference block: d = max|x| / 127 as f16, codes round(x / d) (ties away from zero).
void q8_0_from_float(const float* x, int64_t n, uint8_t* dst);
// kvrt's own encoders (weights/codecs_q.cc, weights/quantize_k.cc): nearest codes on least-squares
// scales; any encoder's blocks decode with the decoders above.
void q4_0_from_float(const float* x, int64_t n, uint8_t* dst);
void q4_1_from_float(const float* x, int64_t n, uint8_t* dst);
void q5_0_from_float(const float* x, int64_t n, uint8_t* dst);
void q5_1_from_float(const float* x, int64_t n, uint8_t* dst);
void iq4_nl_from_float(const float* x, int64_t n, uint8_t* dst);
void q8_1_from_float(const float* x, int64_t n, uint8_t* dst);
void q2_k_from_float(const float* x, int64_t n, uint8_t* dst);
void q3_k_from_float(const float* x, int64_t n, uint8_t* dst);
void q4_k_from_float(const float* x, int64_t n, uint8_t* dst);
void q5_k_from_float(const float* x, int64_t n, uint8_t* dst);
void q6_k_from_float(const float* x, int64_t n, uint8_t* dst);
void q8_k_from_float(const float* x, int64_t n,
                     uint8_t* dst);  // ggml's: d = max / -127, codes to nearest even

// Index of the first of n stored values that is NaN or infinite (for block types: the first value
// of the first block with a NaN or infinite f16 scale or min), or -1.
int64_t f32_find_non_finite(const uint8_t* src, int64_t n);
int64_t f16_find_non_finite(const uint8_t* src, int64_t n);
int64_t bf16_find_non_finite(const uint8_t* src, int64_t n);
// Blocks of kBlock values and kBytes bytes whose f16 fields sit at byte offsets kOffsets.
template <int64_t kBlock, int64_t kBytes, int64_t... kOffsets>
int64_t find_non_finite_scale(const uint8_t* src, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const uint8_t* block = src + b * kBytes;
    // an f16 with all exponent bits set, read byte-wise: little-endian, no alignment demand
    if ((((block[kOffsets + 1] & 0x7c) == 0x7c) || ...)) return b * kBlock;
  }
  return -1;
}

}  // namespace kvrt::simd::ref
