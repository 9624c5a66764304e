// The decode products of every quantized weight type on aarch64 (simd/weights/decode.h): included
// by weights/decode_neon.cc (ARMv8.0) and weights/decode_neon_dotprod.cc (ARMv8.2 sdot) inside
// their namespaces, so each gets its file's -march, after the file's
//   int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y)   acc + Σ x y over 16 signed bytes, 4
//   per lane
// and q4_sums (weights/decode_quads_neon-inl.h).
// Weight codes as signed bytes in value order, 16 values per step. The integer sums per block or
// sub-block are those of the scalar twins (weights/decode_scalar.cc), each reduced to one int
// before its scales. The products of Q4_0 (which does without subtracting 8 per code), Q5_0,
// IQ4_NL and Q8_0, 4 blocks at a time, in weights/decode_quads_neon-inl.h.

namespace {

// Σ x y over the 32 values of a block (codes in value order: c[0] values 0..15, c[1] 16..31), in
// int32 lanes, and as one int.
inline int32x4_t dot32_lanes(const int8x16x2_t& c, const int8_t* a) {
  return dot16(dot16(vdupq_n_s32(0), c.val[0], vld1q_s8(a)), c.val[1], vld1q_s8(a + 16));
}
inline int32_t dot32(const int8x16x2_t& c, const int8_t* a) {
  return vaddvq_s32(dot32_lanes(c, a));
}

// An FP16 scale as a float: fcvt (base ARMv8.0 floating point), equal to f16_to_f32 for every
// finite value.
inline float h(uint16_t bits) {
  __fp16 x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// 16 bytes of nibbles as 32 codes 0..15 in value order.
inline int8x16x2_t nibbles(const uint8_t* qs) {
  const uint8x16_t v = vld1q_u8(qs);
  return {vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0xF))), vreinterpretq_s8_u8(vshrq_n_u8(v, 4))};
}

// Bits 16 h .. 16 h + 15 of the 32 little-endian bits at qh as bytes: 0xFF where set.
inline uint8x16_t bit_bytes(const uint8_t* qh, int h) {
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vtstq_u8(vcombine_u8(vdup_n_u8(qh[2 * h]), vdup_n_u8(qh[2 * h + 1])), vld1q_u8(kBit));
}

// Weight codes of the 32-value types as signed bytes in value order.
inline int8x16x2_t codes(const BlockQ8_0& b) { return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16)}; }
inline int8x16x2_t codes(const BlockQ5_0& b) {  // nibble - 16 where the fifth bit is clear
  int8x16x2_t c = nibbles(b.qs);
  for (int h = 0; h < 2; ++h)
    c.val[h] =
        vorrq_s8(c.val[h], vreinterpretq_s8_u8(vbicq_u8(vdupq_n_u8(0xF0), bit_bytes(b.qh, h))));
  return c;
}
inline int8x16x2_t codes(const BlockIQ4_NL& b) {
  const int8x16_t grid = vld1q_s8(kIq4nlValues);
  int8x16x2_t c = nibbles(b.qs);
  for (auto& v : c.val) v = vqtbl1q_s8(grid, vreinterpretq_u8_s8(v));
  return c;
}
inline int8x16x2_t codes(const BlockQ4_1& b) { return nibbles(b.qs); }
inline int8x16x2_t codes(const BlockQ5_1& b) {
  int8x16x2_t c = nibbles(b.qs);
  for (int h = 0; h < 2; ++h)
    c.val[h] =
        vorrq_s8(c.val[h], vreinterpretq_s8_u8(vandq_u8(bit_bytes(b.qh, h), vdupq_n_u8(0x10))));
  return c;
}

template <class Block>
float dot_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = reinterpret_cast<const Block*>(w);
  const BlockQ8_1* y = reinterpret_cast<const BlockQ8_1*>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b)
    sum += h(x[b].d) * h(y[b].d) * float(dot32(codes(x[b]), y[b].qs)) + h(x[b].m) * h(y[b].s);
  return sum;
}

// The K types' sums Σ_s scale_s Σ q a: each sub-block's Σ q a stays in int32 lanes, times its
// scale lane by lane (vmlaq_n_s32), so a block takes one horizontal add, not one per sub-block.
// Exact as the scalar twin's int32 sum: |lane| < 2^31 for every K type's codes and scales.

// acc + scale Σ x a over 16 values, in lanes.
inline int32x4_t scaled_dot16(int32x4_t acc, int8x16_t x, const int8_t* a, int scale) {
  return vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), x, vld1q_s8(a)), scale);
}

// Q2_K and Q3_K: sub-block s = 8n + 2j + half holds bits 2j of qs[32n + 16half ..] (Q3_K: plus 4
// times bit 4n + j of hmask[16half ..], less 4); Σ_s scale_s Σ q a.
template <bool kHighBit>
int32_t k2_sum(const uint8_t* qs, const uint8_t* hmask, const int8_t* a, const int* scale) {
  int32x4_t sum = vdupq_n_s32(0);
  for (int s = 0; s < 16; ++s) {
    const int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
    uint8x16_t q = vandq_u8(
        vshlq_u8(vld1q_u8(qs + 32 * n2 + 16 * half), vdupq_n_s8(int8_t(-2 * j))), vdupq_n_u8(3));
    int8x16_t c = vreinterpretq_s8_u8(q);
    if constexpr (kHighBit) {
      const uint8x16_t hb = vandq_u8(
          vshlq_u8(vld1q_u8(hmask + 16 * half), vdupq_n_s8(int8_t(-(4 * n2 + j)))), vdupq_n_u8(1));
      c = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(q, vshlq_n_u8(hb, 2))), vdupq_n_s8(4));
    }
    sum = scaled_dot16(sum, c, a + 16 * s, scale[s]);
  }
  return vaddvq_s32(sum);
}

float dot_q2_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ2_K* x = reinterpret_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int scale[16];
    int32_t msum = 0;
    for (int s = 0; s < 16; ++s) {
      scale[s] = x[b].scales[s] & 0xF;
      msum += (x[b].scales[s] >> 4) * y[b].bsums[s];
    }
    const float da = q8_k_scale(y[b]);
    sum += da * h(x[b].d) * float(k2_sum<false>(x[b].qs, nullptr, y[b].qs, scale)) -
           da * h(x[b].dmin) * float(msum);
  }
  return sum;
}

float dot_q3_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ3_K* x = reinterpret_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint32_t words[4];
    q3_k_scale_words(x[b].scales, words);
    const uint8_t* biased = reinterpret_cast<const uint8_t*>(words);
    int scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = biased[s] - 32;
    sum += q8_k_scale(y[b]) * h(x[b].d) * float(k2_sum<true>(x[b].qs, x[b].hmask, y[b].qs, scale));
  }
  return sum;
}

// Q4_K and Q5_K: sub-block 2k + half is nibble `half` of qs[32k ..] (Q5_K: bit 2k + half of
// qh[l] as the fifth bit); the min term from the pairs of bsums.
template <class Block, bool kFifthBit>
float dot_k_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = reinterpret_cast<const Block*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32x4_t isum = vdupq_n_s32(0);
    int32_t msum = 0;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k_scale_min(s, x[b].scales, sc, m);
      int8x16x2_t c;
      for (int part = 0; part < 2; ++part) {
        const uint8x16_t v = vld1q_u8(x[b].qs + 32 * (s / 2) + 16 * part);
        uint8x16_t q = s % 2 ? vshrq_n_u8(v, 4) : vandq_u8(v, vdupq_n_u8(0xF));
        if constexpr (kFifthBit) {
          const uint8x16_t hb = vshlq_u8(vld1q_u8(x[b].qh + 16 * part), vdupq_n_s8(int8_t(-s)));
          q = vorrq_u8(q, vshlq_n_u8(vandq_u8(hb, vdupq_n_u8(1)), 4));
        }
        c.val[part] = vreinterpretq_s8_u8(q);
      }
      isum = vmlaq_n_s32(isum, dot32_lanes(c, y[b].qs + 32 * s), sc);
      msum += m * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    }
    const float da = q8_k_scale(y[b]);
    sum += da * h(x[b].d) * float(vaddvq_s32(isum)) - da * h(x[b].dmin) * float(msum);
  }
  return sum;
}

// Q6_K: run (n, k) of 32 values from ql[64n + 32(k % 2) ..] (nibble k / 2) and bits 2k of
// qh[32n ..], codes biased by -32; sub-blocks of 16.
float dot_q6_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ6_K* x = reinterpret_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int n2 = 0; n2 < 2; ++n2) {
      for (int k = 0; k < 4; ++k) {
        for (int part = 0; part < 2; ++part) {
          const uint8x16_t l = vld1q_u8(x[b].ql + 64 * n2 + 32 * (k % 2) + 16 * part);
          const uint8x16_t low = k / 2 ? vshrq_n_u8(l, 4) : vandq_u8(l, vdupq_n_u8(0xF));
          const uint8x16_t hb =
              vshlq_u8(vld1q_u8(x[b].qh + 32 * n2 + 16 * part), vdupq_n_s8(int8_t(-2 * k)));
          const uint8x16_t q = vorrq_u8(low, vshlq_n_u8(vandq_u8(hb, vdupq_n_u8(3)), 4));
          const int s = 8 * n2 + 2 * k + part;
          isum = scaled_dot16(isum, vsubq_s8(vreinterpretq_s8_u8(q), vdupq_n_s8(32)),
                              y[b].qs + 16 * s, x[b].scales[s]);
        }
      }
    }
    sum += q8_k_scale(y[b]) * h(x[b].d) * float(vaddvq_s32(isum));
  }
  return sum;
}

}  // namespace

#include "simd/weights/decode_quads_neon-inl.h"

void install(Kernels& k) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].decode = decode_quads<BlockQ8_0, 0>();
  k.weight[weight_index(W::kQ4_0)].decode = decode_quads<BlockQ4_0, 8>();
  k.weight[weight_index(W::kQ5_0)].decode = decode_quads<BlockQ5_0, 0>();
  k.weight[weight_index(W::kIQ4_NL)].decode = decode_quads<BlockIQ4_NL, 0>();
  k.weight[weight_index(W::kQ4_1)].decode = {decode_rows<dot_affine<BlockQ4_1>>};
  k.weight[weight_index(W::kQ5_1)].decode = {decode_rows<dot_affine<BlockQ5_1>>};
  k.weight[weight_index(W::kQ2_K)].decode = {decode_rows<dot_q2_k>};
  k.weight[weight_index(W::kQ3_K)].decode = {decode_rows<dot_q3_k>};
  k.weight[weight_index(W::kQ4_K)].decode = {decode_rows<dot_k_affine<BlockQ4_K, false>>};
  k.weight[weight_index(W::kQ5_K)].decode = {decode_rows<dot_k_affine<BlockQ5_K, true>>};
  k.weight[weight_index(W::kQ6_K)].decode = {decode_rows<dot_q6_k>};
}
