// Scalar twins of the decode products (simd/weights/decode.h): the oracle of the SIMD versions in
// the tests and the scalar rung's decode slots. Per block the exact integer sum of code products,
// then y += d_w * d_a * sum (+ the min term) block after block; K types sum their sub-blocks'
// integer sums times the sub-block scales first (all exact: |sum| < 2^31 for any codes).
#include "common/half.h"
#include "simd/weights/blocks.h"
#include "simd/weights/decode.h"

namespace kvrt::simd::scalar {
namespace {

template <class Block>
const Block* blocks(const uint8_t* p) {
  return reinterpret_cast<const Block*>(p);  // 2-byte aligned rows (WeightTypeTraits::alignment)
}

float h(uint16_t bits) { return f16_to_f32(bits); }

int high_bit(const uint8_t qh[4], int j) { return (qh[j / 8] >> (j % 8)) & 1; }

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
  for (int64_t b = 0; b < n / kQK; ++b)
    sum += h(x[b].d) * h(y[b].d) * float(block_sum<Block, Code>(x[b], y[b].qs));
  return sum;
}

// Affine 32-value types against Q8_1 activations: Σ d_w d_a Σ q_w q_a + m_w s_a.
template <class Block, int (*Code)(const Block&, int)>
float dot_affine(const uint8_t* w, const uint8_t* act, int64_t n) {
  const Block* x = blocks<Block>(w);
  const BlockQ8_1* y = blocks<BlockQ8_1>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b)
    sum += h(x[b].d) * h(y[b].d) * float(block_sum<Block, Code>(x[b], y[b].qs)) +
           h(x[b].m) * h(y[b].s);
  return sum;
}

// The K types: a super-block of 256 values in sub-blocks of kSub (16 or 32) values, each with an
// integer scale and, for the affine ones, an integer min; Code(b, v) is value v's code (Q3_K's
// and Q6_K's with their bias). Σ d_a (d_w Σ_s scale_s Σ_{v in s} code_v a_v - dmin_w Σ_s min_s
// Σ_{v in s} a_v), the last sums from Q8_K's bsums (16 values each).
template <class Block>
struct KType;

template <>
struct KType<BlockQ2_K> {  // value 128n + 32j + l: bits 2j of qs[32n + l]
  static constexpr int kSub = 16;
  static int code(const BlockQ2_K& b, int v) {
    return (b.qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
  }
  static int scale(const BlockQ2_K& b, int s) { return b.scales[s] & 0xF; }
  static int min(const BlockQ2_K& b, int s) { return b.scales[s] >> 4; }
};

template <>
struct KType<BlockQ3_K> {  // Q2_K's low bits; bit 4n + j of hmask[l] set adds 4; biased by -4
  static constexpr int kSub = 16;
  static int code(const BlockQ3_K& b, int v) {
    const int n2 = v / 128, j = (v % 128) / 32, l = v % 32;
    return ((b.qs[32 * n2 + l] >> (2 * j)) & 3) + 4 * ((b.hmask[l] >> (4 * n2 + j)) & 1) - 4;
  }
  static int scale(const BlockQ3_K& b, int s) { return q3_k_scale(s, b.scales) - 32; }
};

// Q4_K and Q5_K: sub-block s in the nibbles s % 2 of qs[32 (s / 2) ..], Q5_K's fifth bit bit s of
// qh[l].
template <class Block, bool kFifthBit>
struct KAffine {
  static constexpr int kSub = 32;
  static int code(const Block& b, int v) {
    const int s = v / 32, l = v % 32;
    const int q = (b.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
    if constexpr (kFifthBit) return q | ((b.qh[l] >> s) & 1) << 4;
    return q;
  }
  static int scale(const Block& b, int s) {
    uint8_t sc, m;
    k_scale_min(s, b.scales, sc, m);
    return sc;
  }
  static int min(const Block& b, int s) {
    uint8_t sc, m;
    k_scale_min(s, b.scales, sc, m);
    return m;
  }
};
template <>
struct KType<BlockQ4_K> : KAffine<BlockQ4_K, false> {};
template <>
struct KType<BlockQ5_K> : KAffine<BlockQ5_K, true> {};

template <>
struct KType<BlockQ6_K> {  // low 4 bits in nibble k / 2 of ql[64n + 32(k % 2) + l], top 2 at bits
                           // 2k of qh[32n + l]; -32
  static constexpr int kSub = 16;
  static int code(const BlockQ6_K& b, int v) {
    const int n2 = v / 128, k = (v % 128) / 32, l = v % 32;
    const int low = (b.ql[64 * n2 + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
    const int high = (b.qh[32 * n2 + l] >> (2 * k)) & 3;
    return (low | high << 4) - 32;
  }
  static int scale(const BlockQ6_K& b, int s) { return b.scales[s]; }
};

template <class T>
concept HasMin = requires(const T& t) {
  t.dmin;
};

template <class Block>
float dot_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  using K = KType<Block>;
  const Block* x = blocks<Block>(w);
  const BlockQ8_K* y = blocks<BlockQ8_K>(act);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < kQK_K / K::kSub; ++s) {
      int32_t sub = 0;
      for (int v = K::kSub * s; v < K::kSub * (s + 1); ++v) sub += K::code(x[b], v) * y[b].qs[v];
      isum += K::scale(x[b], s) * sub;
      if constexpr (HasMin<Block>) {
        int32_t a = 0;
        for (int j = K::kSub / 16 * s; j < K::kSub / 16 * (s + 1); ++j) a += y[b].bsums[j];
        msum += K::min(x[b], s) * a;
      }
    }
    const float da = q8_k_scale(y[b]);
    if constexpr (HasMin<Block>)
      sum += da * h(x[b].d) * float(isum) - da * h(x[b].dmin) * float(msum);
    else sum += da * h(x[b].d) * float(isum);
  }
  return sum;
}

}  // namespace

void install_weight_dots(Kernels& k) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].decode = {decode_rows<dot_symmetric<BlockQ8_0, code_q8_0>>};
  k.weight[weight_index(W::kQ4_0)].decode = {decode_rows<dot_symmetric<BlockQ4_0, code_q4_0>>};
  k.weight[weight_index(W::kQ5_0)].decode = {decode_rows<dot_symmetric<BlockQ5_0, code_q5_0>>};
  k.weight[weight_index(W::kIQ4_NL)].decode = {
      decode_rows<dot_symmetric<BlockIQ4_NL, code_iq4_nl>>};
  k.weight[weight_index(W::kQ4_1)].decode = {decode_rows<dot_affine<BlockQ4_1, code_q4_1>>};
  k.weight[weight_index(W::kQ5_1)].decode = {decode_rows<dot_affine<BlockQ5_1, code_q5_1>>};
  k.weight[weight_index(W::kQ2_K)].decode = {decode_rows<dot_k<BlockQ2_K>>};
  k.weight[weight_index(W::kQ3_K)].decode = {decode_rows<dot_k<BlockQ3_K>>};
  k.weight[weight_index(W::kQ4_K)].decode = {decode_rows<dot_k<BlockQ4_K>>};
  k.weight[weight_index(W::kQ5_K)].decode = {decode_rows<dot_k<BlockQ5_K>>};
  k.weight[weight_index(W::kQ6_K)].decode = {decode_rows<dot_k<BlockQ6_K>>};
}

}  // namespace kvrt::simd::scalar
