// The decode products of every quantized weight type on aarch64 (simd/weights/decode.h): included
// by weights/decode_neon.cc (ARMv8.0) and weights/decode_neon_dotprod.cc (ARMv8.2 sdot) inside
// their namespaces, so each gets its file's -march, after the file's
//   int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y)   acc + Σ x y over 16 signed bytes, 4
//   per lane
// and q4_sums (weights/decode_quads_neon-inl.h).
// Weight codes as signed bytes in value order, 16 values per step. The integer sums per block or
// sub-block are those of the scalar twins (weights/decode_scalar.cc), the same products grouped in
// int32 lanes; only the order of the float sums differs. The products of Q4_0 (which does without
// subtracting 8 per code), Q5_0, IQ4_NL, Q8_0, Q4_1 and Q5_1, 4 blocks at a time, in
// weights/decode_quads_neon-inl.h.

namespace {

// Σ x y over the 32 values of a block (codes in value order: c[0] values 0..15, c[1] 16..31), in
// int32 lanes.
inline int32x4_t dot32_lanes(const int8x16x2_t& c, const int8_t* a) {
  return dot16(dot16(vdupq_n_s32(0), c.val[0], vld1q_s8(a)), c.val[1], vld1q_s8(a + 16));
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

// The K types' sums Σ_s scale_s Σ q a: each sub-block's Σ q a stays in int32 lanes, times its
// scale from a lane (vmlaq_laneq_s32), and the block's lanes go into the row's f32 lanes by one FMA
// per block (two with a min term): one horizontal add per row. Exact as the scalar twin's int32
// sum: |lane| < 2^31 for every K type's codes and scales.

// f.template operator()<I>() for I = 0 .. N - 1: the sub-blocks of a K block, each with its scale
// in a lane known at compile time.
template <int N, class F>
inline void each_index(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }
  (std::make_integer_sequence<int, N>{});
}

// Sub-block scales as int32 lanes: lane s % 4 of v[s / 4].
template <int N>
struct ScaleLanes {
  int32x4_t v[N];
  template <int s>
  int32x4_t mla(int32x4_t acc, int32x4_t sum) const {
    return vmlaq_laneq_s32(acc, sum, v[s / 4], s % 4);
  }
};

// Scale lanes of the 16 signed sub-block scales of a block.
inline ScaleLanes<4> scale_lanes16(int8x16_t sc8) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(sc8)), hi = vmovl_high_s8(sc8);
  return {{vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)),
           vmovl_high_s16(hi)}};
}

// Σ_s c_s bsums[s] over the 16 sub-blocks of 16 values, in lanes.
inline int32x4_t bsums_dot(int8x16_t c8, const int16_t* bsums) {
  const int16x8_t c[2] = {vmovl_s8(vget_low_s8(c8)), vmovl_high_s8(c8)};
  const int16x8_t bs[2] = {vld1q_s16(bsums), vld1q_s16(bsums + 8)};
  int32x4_t sum = vmull_s16(vget_low_s16(c[0]), vget_low_s16(bs[0]));
  sum = vmlal_high_s16(sum, c[0], bs[0]);
  sum = vmlal_s16(sum, vget_low_s16(c[1]), vget_low_s16(bs[1]));
  return vmlal_high_s16(sum, c[1], bs[1]);
}

// Q2_K and Q3_K: sub-block s = 8n + 2j + half holds bits 2j of qs[32n + 16half ..] (Q3_K: plus 4
// times bit 4n + j of hmask[16half ..], less 4); Σ_s scale_s Σ q a in lanes.
template <bool kHighBit>
int32x4_t k2_sum(const uint8_t* qs, const uint8_t* hmask, const int8_t* a,
                 const ScaleLanes<4>& scale) {
  int32x4_t sum = vdupq_n_s32(0);
  each_index<16>([&]<int s>() {
    constexpr int n2 = s / 8, j = (s % 8) / 2, half = s % 2;
    uint8x16_t q = vld1q_u8(qs + 32 * n2 + 16 * half);
    if constexpr (j > 0) q = vshrq_n_u8(q, 2 * j);
    q = vandq_u8(q, vdupq_n_u8(3));
    int8x16_t c = vreinterpretq_s8_u8(q);
    if constexpr (kHighBit) {  // bit 4n + j of hmask: clear means -4
      const uint8x16_t set =
          vtstq_u8(vld1q_u8(hmask + 16 * half), vdupq_n_u8(uint8_t(1u << (4 * n2 + j))));
      c = vsubq_s8(c, vreinterpretq_s8_u8(vbicq_u8(vdupq_n_u8(4), set)));
    }
    sum = scale.template mla<s>(sum, dot16(vdupq_n_s32(0), c, vld1q_s8(a + 16 * s)));
  });
  return sum;
}

float dot_q2_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ2_K* x = reinterpret_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8x16_t sm = vld1q_u8(x[b].scales);  // scale in the low nibble, min in the high
    const int8x16_t sc = vreinterpretq_s8_u8(vandq_u8(sm, vdupq_n_u8(0xF)));
    const int32x4_t msum = bsums_dot(vreinterpretq_s8_u8(vshrq_n_u8(sm, 4)), y[b].bsums);
    const int32x4_t isum = k2_sum<false>(x[b].qs, nullptr, y[b].qs, scale_lanes16(sc));
    const float da = q8_k_scale(y[b]);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), da * h(x[b].d));
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(msum), -da * h(x[b].dmin));
  }
  return vaddvq_f32(acc);
}

float dot_q3_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ3_K* x = reinterpret_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint32_t words[4];
    q3_k_scale_words(x[b].scales, words);
    const int8x16_t sc = vsubq_s8(vreinterpretq_s8_u32(vld1q_u32(words)), vdupq_n_s8(32));
    const int32x4_t isum = k2_sum<true>(x[b].qs, x[b].hmask, y[b].qs, scale_lanes16(sc));
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), q8_k_scale(y[b]) * h(x[b].d));
  }
  return vaddvq_f32(acc);
}

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K or Q5_K block, k_scale_min for
// j = 0..7 four at a time: j < 4 the low 6 bits of bytes j (scales) and j + 4 (mins); j >= 4 the
// nibbles of byte j + 4, below the top 2 bits of bytes j - 4 (scales) and j (mins).
inline uint8x16_t k_scales_mins(const uint8_t* q) {
  uint32_t w[3];
  std::memcpy(w, q, sizeof w);
  const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
  const uint32_t out[4] = {w[0] & low6, (w[2] & low4) | ((w[0] >> 6) & low2) << 4, w[1] & low6,
                           ((w[2] >> 4) & low4) | ((w[1] >> 6) & low2) << 4};
  uint8x16_t v;
  std::memcpy(&v, out, sizeof v);
  return v;
}

// Q4_K and Q5_K: sub-block s = 2k + half is nibble `half` of qs[32k ..] (Q5_K: bit s of qh[l] as
// the fifth bit), codes 0..31 as signed bytes; Σ_s scale_s Σ q a in int32 lanes, and the min term
// Σ_s min_s (bsums[2s] + bsums[2s + 1]) in lanes of its own, each into the row's f32 lanes by one
// FMA per block: one horizontal add per row.
template <class Block, bool kFifthBit>
float dot_k_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = reinterpret_cast<const Block*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8x16_t sm = k_scales_mins(x[b].scales);
    const int16x8_t sc = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(sm)));
    const int16x8_t mins = vreinterpretq_s16_u16(vmovl_high_u8(sm));
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(y[b].bsums), vld1q_s16(y[b].bsums + 8));
    const int32x4_t msum =
        vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(pairs)), mins, pairs);
    const ScaleLanes<2> scale{{vmovl_s16(vget_low_s16(sc)), vmovl_high_s16(sc)}};
    uint8x16_t qh[2] = {};
    if constexpr (kFifthBit) qh[0] = vld1q_u8(x[b].qh), qh[1] = vld1q_u8(x[b].qh + 16);
    int32x4_t isum = vdupq_n_s32(0);
    each_index<8>([&]<int s>() {
      int32x4_t sum = vdupq_n_s32(0);
      for (int part = 0; part < 2; ++part) {
        const uint8x16_t v = vld1q_u8(x[b].qs + 32 * (s / 2) + 16 * part);
        uint8x16_t q = s % 2 ? vshrq_n_u8(v, 4) : vandq_u8(v, vdupq_n_u8(0xF));
        if constexpr (kFifthBit)
          q = vorrq_u8(
              q, vandq_u8(vtstq_u8(qh[part], vdupq_n_u8(uint8_t(1u << s))), vdupq_n_u8(0x10)));
        sum = dot16(sum, vreinterpretq_s8_u8(q), vld1q_s8(y[b].qs + 32 * s + 16 * part));
      }
      isum = scale.template mla<s>(isum, sum);
    });
    const float da = q8_k_scale(y[b]);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), da * h(x[b].d));
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(msum), -da * h(x[b].dmin));
  }
  return vaddvq_f32(acc);
}

// Q6_K: sub-block s = 8n + 2k + part (16 values) has its low 4 bits in nibble k / 2 of
// ql[64n + 32(k % 2) + 16 part ..] and its top 2 bits at bits 2k of qh[32n + 16 part ..]; codes
// 0..63 (signed bytes) times a, less 32 Σ_s scale_s bsums[s] (lanes of the same sum), so no code is
// biased by -32; one FMA per block into the row's f32 lanes.
float dot_q6_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ6_K* x = reinterpret_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const int8x16_t sc8 = vld1q_s8(x[b].scales);
    const ScaleLanes<4> scale = scale_lanes16(sc8);
    int32x4_t isum = vnegq_s32(vshlq_n_s32(bsums_dot(sc8, y[b].bsums), 5));
    each_index<16>([&]<int s>() {
      constexpr int n2 = s / 8, k = (s % 8) / 2, part = s % 2;
      const uint8x16_t l = vld1q_u8(x[b].ql + 64 * n2 + 32 * (k % 2) + 16 * part);
      const uint8x16_t hb = vld1q_u8(x[b].qh + 32 * n2 + 16 * part);
      const uint8x16_t low = k / 2 ? vshrq_n_u8(l, 4) : vandq_u8(l, vdupq_n_u8(0xF));
      uint8x16_t high = hb;  // bits 2k, 2k + 1 of qh to bits 4, 5
      if constexpr (k < 2) high = vshlq_n_u8(hb, 4 - 2 * k);
      if constexpr (k == 3) high = vshrq_n_u8(hb, 2);
      high = vandq_u8(high, vdupq_n_u8(0x30));
      const int32x4_t sum = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(vorrq_u8(low, high)),
                                  vld1q_s8(y[b].qs + 16 * s));
      isum = scale.template mla<s>(isum, sum);
    });
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), q8_k_scale(y[b]) * h(x[b].d));
  }
  return vaddvq_f32(acc);
}

}  // namespace

#include "simd/weights/decode_quads_neon-inl.h"

void install(Kernels& k) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].decode = decode_quads<BlockQ8_0, 0>();
  k.weight[weight_index(W::kQ4_0)].decode = decode_quads<BlockQ4_0, 8>();
  k.weight[weight_index(W::kQ5_0)].decode = decode_quads<BlockQ5_0, 0>();
  k.weight[weight_index(W::kIQ4_NL)].decode = decode_quads<BlockIQ4_NL, 0>();
  k.weight[weight_index(W::kQ4_1)].decode = decode_affine_quads<BlockQ4_1>();
  k.weight[weight_index(W::kQ5_1)].decode = decode_affine_quads<BlockQ5_1>();
  k.weight[weight_index(W::kQ2_K)].decode = {decode_rows<dot_q2_k>};
  k.weight[weight_index(W::kQ3_K)].decode = {decode_rows<dot_q3_k>};
  k.weight[weight_index(W::kQ4_K)].decode = {decode_rows<dot_k_affine<BlockQ4_K, false>>};
  k.weight[weight_index(W::kQ5_K)].decode = {decode_rows<dot_k_affine<BlockQ5_K, true>>};
  k.weight[weight_index(W::kQ6_K)].decode = {decode_rows<dot_q6_k>};
}
