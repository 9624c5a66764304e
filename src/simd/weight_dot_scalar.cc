// Scalar twins of the decode products (simd/weight_dot.h): the oracle of the SIMD versions in the
// tests and the scalar rung's decode slots. Per block the exact integer sum of code products, then
// y += d_w * d_a * sum (+ the min term) block after block; K types sum their sub-blocks' integer
// sums times the sub-block scales first (all exact: |sum| < 2^31 for any codes).
#include <cstring>

#include "common/half.h"
#include "simd/weight_blocks.h"
#include "simd/weight_dot.h"

namespace kvrt::simd::scalar {
namespace {

template <class Block>
const Block* blocks(const uint8_t* p) {
  return reinterpret_cast<const Block*>(p);  // 2-byte aligned rows (WeightTypeTraits::alignment)
}

float h(uint16_t bits) { return f16_to_f32(bits); }

int high_bit(const uint8_t qh[4], int j) { return (qh[j / 8] >> (j % 8)) & 1; }

// Q8_K activations: an f32 scale, which a 2-byte aligned block does not promise.
float q8_k_scale(const BlockQ8_K& b) {
  float d;
  std::memcpy(&d, &b.d, sizeof d);
  return d;
}

// Σ q_w q_a over a 32-value block; Code gives weight code j (value order) as an int.
template <class Block, int (*Code)(const Block&, int)>
int32_t block_sum(const Block& w, const int8_t* a) {
  int32_t sum = 0;
  for (int j = 0; j < kQK; ++j) sum += Code(w, j) * a[j];
  return sum;
}

int nibble(const uint8_t* qs, int j) { return j < kQK / 2 ? qs[j] & 0xF : qs[j - kQK / 2] >> 4; }
int code_q8_0(const BlockQ8_0& b, int j) { return b.qs[j]; }
int code_q4_0(const BlockQ4_0& b, int j) { return nibble(b.qs, j) - 8; }
int code_q5_0(const BlockQ5_0& b, int j) { return (nibble(b.qs, j) | high_bit(b.qh, j) << 4) - 16; }
int code_iq4_nl(const BlockIQ4_NL& b, int j) { return kIq4nlValues[nibble(b.qs, j)]; }
int code_q4_1(const BlockQ4_1& b, int j) { return nibble(b.qs, j); }
int code_q5_1(const BlockQ5_1& b, int j) { return nibble(b.qs, j) | high_bit(b.qh, j) << 4; }

// Symmetric 32-value types against Q8_0 activations: Σ d_w d_a Σ q_w q_a.
template <class Block, int (*Code)(const Block&, int)>
float dot_symmetric(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = blocks<Block>(w);
  const BlockQ8_0* y = blocks<BlockQ8_0>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) sum += h(x[b].d) * h(y[b].d) * float(block_sum<Block, Code>(x[b], y[b].qs));
  return sum;
}

// Affine 32-value types against Q8_1 activations: Σ d_w d_a Σ q_w q_a + m_w s_a.
template <class Block, int (*Code)(const Block&, int)>
float dot_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = blocks<Block>(w);
  const BlockQ8_1* y = blocks<BlockQ8_1>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b)
    sum += h(x[b].d) * h(y[b].d) * float(block_sum<Block, Code>(x[b], y[b].qs)) + h(x[b].m) * h(y[b].s);
  return sum;
}

// Q2_K: value 128n + 32j + 16half + l is bits 2j of qs[32n + 16half + l], sub-block 8n + 2j + half.
float dot_q2_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ2_K* x = blocks<BlockQ2_K>(w);
  const BlockQ8_K* y = blocks<BlockQ8_K>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 16; ++s) {
      const int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
      int32_t sub = 0;
      for (int l = 0; l < 16; ++l) sub += ((x[b].qs[32 * n2 + 16 * half + l] >> (2 * j)) & 3) * y[b].qs[16 * s + l];
      isum += (x[b].scales[s] & 0xF) * sub;
      msum += (x[b].scales[s] >> 4) * y[b].bsums[s];
    }
    const float da = q8_k_scale(y[b]);
    sum += da * h(x[b].d) * float(isum) - da * h(x[b].dmin) * float(msum);
  }
  return sum;
}

// Q3_K: Q2_K's low bits; bit 4n + j of hmask[16half + l] set adds 4, and codes are biased by -4.
float dot_q3_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ3_K* x = blocks<BlockQ3_K>(w);
  const BlockQ8_K* y = blocks<BlockQ8_K>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t isum = 0;
    for (int s = 0; s < 16; ++s) {
      const int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
      int32_t sub = 0;
      for (int l = 0; l < 16; ++l) {
        const int low = (x[b].qs[32 * n2 + 16 * half + l] >> (2 * j)) & 3;
        const int high = (x[b].hmask[16 * half + l] >> (4 * n2 + j)) & 1;
        sub += (low + 4 * high - 4) * y[b].qs[16 * s + l];
      }
      isum += (q3_k_scale(s, x[b].scales) - 32) * sub;
    }
    sum += q8_k_scale(y[b]) * h(x[b].d) * float(isum);
  }
  return sum;
}

// Q4_K and Q5_K: sub-block s (32 values) in the nibbles (s % 2) of qs[32 (s / 2) ..], Q5_K's fifth
// bit in bit s of qh[l]; the min term from the two 16-value sums of the sub-block.
template <class Block, bool kFifthBit>
float dot_k_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = blocks<Block>(w);
  const BlockQ8_K* y = blocks<BlockQ8_K>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k_scale_min(s, x[b].scales, sc, m);
      int32_t sub = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (x[b].qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
        if constexpr (kFifthBit) q |= ((x[b].qh[l] >> s) & 1) << 4;
        sub += q * y[b].qs[32 * s + l];
      }
      isum += sc * sub;
      msum += m * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    }
    const float da = q8_k_scale(y[b]);
    sum += da * h(x[b].d) * float(isum) - da * h(x[b].dmin) * float(msum);
  }
  return sum;
}

// Q6_K: value 128n + 32k + l has its low 4 bits in ql[64n + 32(k % 2) + l] (nibble k / 2) and its
// top 2 bits at bits 2k of qh[32n + l]; codes are biased by -32; sub-blocks of 16.
float dot_q6_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ6_K* x = blocks<BlockQ6_K>(w);
  const BlockQ8_K* y = blocks<BlockQ8_K>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t isum = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t sub = 0;
      for (int v = 16 * s; v < 16 * s + 16; ++v) {
        const int n2 = v / 128, k = (v % 128) / 32, l = v % 32;
        const int low = (x[b].ql[64 * n2 + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
        const int high = (x[b].qh[32 * n2 + l] >> (2 * k)) & 3;
        sub += ((low | high << 4) - 32) * y[b].qs[v];
      }
      isum += x[b].scales[s] * sub;
    }
    sum += q8_k_scale(y[b]) * h(x[b].d) * float(isum);
  }
  return sum;
}

}  // namespace

void install_weight_dots(Kernels& k) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].decode = decode_rows<dot_symmetric<BlockQ8_0, code_q8_0>>;
  k.weight[weight_index(W::kQ4_0)].decode = decode_rows<dot_symmetric<BlockQ4_0, code_q4_0>>;
  k.weight[weight_index(W::kQ5_0)].decode = decode_rows<dot_symmetric<BlockQ5_0, code_q5_0>>;
  k.weight[weight_index(W::kIQ4_NL)].decode = decode_rows<dot_symmetric<BlockIQ4_NL, code_iq4_nl>>;
  k.weight[weight_index(W::kQ4_1)].decode = decode_rows<dot_affine<BlockQ4_1, code_q4_1>>;
  k.weight[weight_index(W::kQ5_1)].decode = decode_rows<dot_affine<BlockQ5_1, code_q5_1>>;
  k.weight[weight_index(W::kQ2_K)].decode = decode_rows<dot_q2_k>;
  k.weight[weight_index(W::kQ3_K)].decode = decode_rows<dot_q3_k>;
  k.weight[weight_index(W::kQ4_K)].decode = decode_rows<dot_k_affine<BlockQ4_K, false>>;
  k.weight[weight_index(W::kQ5_K)].decode = decode_rows<dot_k_affine<BlockQ5_K, true>>;
  k.weight[weight_index(W::kQ6_K)].decode = decode_rows<dot_q6_k>;
}

}  // namespace kvrt::simd::scalar
