// Reference decoders of the K types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and Q8_K: ggml's arithmetic
// in ggml's order (the sub-block scale d * s first, then times the code, then minus the min
// term; compiled with -ffp-contract=off), bit-exact against llama.cpp's and gguf-py's
// dequantization. The encoders are in weights/quantize_k.cc.
#include <cstring>

#include "common/half.h"
#include "simd/weights/blocks.h"
#include "simd/weights/codecs.h"

namespace kvrt::simd::ref {
namespace {

template <class Block>
const Block* blocks(const uint8_t* src) {
  return reinterpret_cast<const Block*>(src);
}

float h(uint16_t bits) { return f16_to_f32(bits); }

}  // namespace

// Q2_K: each half of 128 values reads 32 bytes of qs four times (shift 0, 2, 4, 6); value
// 128 * n + 32 * j + 16 * half + l is bits 2j of qs[32 * n + 16 * half + l].
void q2_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ2_K* b = blocks<BlockQ2_K>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = h(b[i].d), dmin = h(b[i].dmin);
    for (int s = 0; s < kQK_K / 16; ++s, dst += 16) {  // sub-block s = 8n + 2j + half
      const int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
      const float dl = d * float(b[i].scales[s] & 0xF);
      const float ml = dmin * float(b[i].scales[s] >> 4);
      const uint8_t* q = b[i].qs + 32 * n2 + 16 * half;
      for (int l = 0; l < 16; ++l) dst[l] = dl * float((q[l] >> (2 * j)) & 3) - ml;
    }
  }
}

// Q3_K: the low 2 bits as Q2_K's; the third bit of value 128n + 32j + 16half + l is bit 4n + j
// of hmask[16 half + l], and a clear bit subtracts 4.
void q3_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ3_K* b = blocks<BlockQ3_K>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = h(b[i].d);
    for (int s = 0; s < kQK_K / 16; ++s, dst += 16) {
      const int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
      const float dl = d * float(q3_k_scale(s, b[i].scales) - 32);
      const uint8_t* q = b[i].qs + 32 * n2 + 16 * half;
      const uint8_t* hm = b[i].hmask + 16 * half;
      const int bit = 4 * n2 + j;
      for (int l = 0; l < 16; ++l)
        dst[l] = dl * float(((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4));
    }
  }
}

// Q4_K: 64 values per 32 bytes of qs: sub-block 2k in the low nibbles, 2k + 1 in the high ones.
// Q5_K (kFifthBit): plus bit s of qh[l] as the fifth bit of value l of sub-block s.
namespace {
template <class Block, bool kFifthBit>
void k_affine_to_float(const uint8_t* src, int64_t n, float* dst) {
  const Block* b = blocks<Block>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = h(b[i].d), dmin = h(b[i].dmin);
    for (int s = 0; s < 8; ++s, dst += 32) {
      uint8_t sc, m;
      k_scale_min(s, b[i].scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      const uint8_t* q = b[i].qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        int code = (q[l] >> shift) & 0xF;
        if constexpr (kFifthBit) code += ((b[i].qh[l] >> s) & 1) << 4;
        dst[l] = d1 * float(code) - m1;
      }
    }
  }
}

}  // namespace

void q4_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  k_affine_to_float<BlockQ4_K, false>(src, n, dst);
}
void q5_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  k_affine_to_float<BlockQ5_K, true>(src, n, dst);
}

// Q6_K: value 128n + 32k + l has its low 4 bits in ql[64n + 32(k % 2) + l] (low nibble for
// k < 2, high for k >= 2) and its top 2 bits at bits 2k of qh[32n + l]; sub-block = index / 16.
void q6_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ6_K* b = blocks<BlockQ6_K>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = h(b[i].d);
    for (int v = 0; v < kQK_K; ++v) {
      const int n2 = v / 128, k = (v % 128) / 32, l = v % 32;
      const int low = (b[i].ql[64 * n2 + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
      const int high = (b[i].qh[32 * n2 + l] >> (2 * k)) & 3;
      dst[v] = d * float(b[i].scales[v / 16]) * float((low | (high << 4)) - 32);
    }
    dst += kQK_K;
  }
}

void q8_k_to_float(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    BlockQ8_K b;
    std::memcpy(&b, src + i * int64_t(sizeof(BlockQ8_K)),
                sizeof b);  // its f32 scale needs 4-byte alignment
    for (int v = 0; v < kQK_K; ++v) dst[v] = b.d * float(b.qs[v]);
  }
}

}  // namespace kvrt::simd::ref
