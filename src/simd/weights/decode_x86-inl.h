// The decode products of every quantized weight type on x86 (simd/weights/decode.h), 32 values per
// ymm: included by weights/decode_avx2.cc and weights/decode_vnni.cc inside their namespaces, so
// each gets its file's -m flags. The one difference is how int8 products are summed into int32
// lanes:
//   avx2:        vpmaddubsw (u8 x s8, pairs to int16) then vpmaddwd by ones (or by the sub-block
//                scales): exact, as no pair can saturate int16 (|u| <= 128, |s| <= 127 for the
//                symmetric types by the sign trick; u <= 63 for the K types: 2 * 63 * 128 < 2^15);
//   avx512-vnni: vpdpbusd (u8 x s8, 4 products into each int32 lane) and vpdpwssd.
// Per block the integer sums are those of the scalar twins (weights/decode_scalar.cc); the float
// sums run per lane, then one horizontal sum per row. The activations' quantizers are in
// weights/act_quantize_x86-inl.h; the weight codes as bytes in weights/block_codes_x86-inl.h;
// the products of Q4_0, Q5_0, IQ4_NL, Q8_0, Q4_1 and Q5_1, 8 blocks at a time, in
// weights/decode_groups_x86-inl.h; Q6_K's in weights/decode_k_x86-inl.h; Q4_K's and Q5_K's in
// weights/decode_k4_x86-inl.h; Q3_K's in weights/decode_k3_x86-inl.h.

#include "simd/weights/block_codes_x86-inl.h"

namespace {

// acc + Σ of 4 u8 x s8 products per int32 lane.
inline __m256i dot_us8(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + Σ of 2 s16 x s16 products per int32 lane.
inline __m256i dot_s16(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__)
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// Σ x y over signed bytes as int32 lanes: |x| times y with x's sign.
inline __m256i dot_s8(__m256i x, __m256i y) {
  return dot_us8(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

inline float f16(uint16_t bits) { return _cvtsh_ss(bits); }

inline float hsum(__m256 x) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_add_ss(m, _mm_shuffle_ps(m, m, 1)));
}

inline int32_t hsum_i32(__m256i x) {
  __m128i m = _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
  m = _mm_add_epi32(m, _mm_unpackhi_epi64(m, m));
  return _mm_cvtsi128_si32(_mm_add_epi32(m, _mm_shuffle_epi32(m, 1)));
}

// 16 int16 lanes: the first 8 s0, the last 8 s1 (the scales of two 16-value sub-blocks).
inline __m256i scale_pair(int s0, int s1) {
  return _mm256_set_m128i(_mm_set1_epi16(short(s1)), _mm_set1_epi16(short(s0)));
}

// Σ_s c_s bsums[s] over the 16 sub-block sums of a Q8_K block, c 16 int16 lanes.
inline int32_t bsum_dot(__m256i c, const BlockQ8_K& y) {
  return hsum_i32(_mm256_madd_epi16(c, load256(y.bsums)));
}

// Q2_K (16-value sub-blocks): Σ_s scale_s Σ q a over the 8 runs of 32 values of a block, run
// (n, j) from bits 2j of qs[32n ..].
__m256i k2_runs(const uint8_t* qs, const int8_t* a, const int* scale) {
  const __m256i three = _mm256_set1_epi8(3);
  __m256i sum = _mm256_setzero_si256();
  for (int n2 = 0; n2 < 2; ++n2) {
    const __m256i q2 = load256(qs + 32 * n2);
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * j), three);
      const int s = 8 * n2 + 2 * j;
      const __m256i p = _mm256_maddubs_epi16(q, load256(a + 128 * n2 + 32 * j));
      sum = dot_s16(sum, scale_pair(scale[s], scale[s + 1]), p);
    }
  }
  return sum;
}

float dot_q2_k(const uint8_t* w, const uint8_t* act, int64_t n) {
  const BlockQ2_K* x = reinterpret_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = x[b].scales[s] & 0xF;
    const __m256i mins16 = _mm256_srli_epi16(
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales))), 4);
    const __m256i sum = k2_runs(x[b].qs, y[b].qs, scale);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * f16(x[b].d)), _mm256_cvtepi32_ps(sum), acc);
    mins += y[b].d * f16(x[b].dmin) * float(bsum_dot(mins16, y[b]));
  }
  return hsum(acc) - mins;
}

}  // namespace

#include "simd/weights/act_quantize_x86-inl.h"
#include "simd/weights/decode_k_x86-inl.h"
#include "simd/weights/decode_k3_x86-inl.h"
#include "simd/weights/decode_k4_x86-inl.h"
#include "simd/weights/decode_groups_x86-inl.h"

void install(Kernels& k) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].from_float = q8_0_from_float;
  k.weight[weight_index(W::kQ8_K)].from_float = q8_k_from_float;
  k.weight[weight_index(W::kQ8_0)].decode = decode_q8_0;
  k.weight[weight_index(W::kQ4_0)].decode = decode_nibbles<BlockQ4_0, 8>();
  k.weight[weight_index(W::kQ5_0)].decode = decode_nibbles<BlockQ5_0, 16>();
  k.weight[weight_index(W::kIQ4_NL)].decode = decode_iq4_nl;
  k.weight[weight_index(W::kQ4_1)].decode = decode_affine<BlockQ4_1>();
  k.weight[weight_index(W::kQ5_1)].decode = decode_affine<BlockQ5_1>();
  k.weight[weight_index(W::kQ2_K)].decode = {decode_rows<dot_q2_k>};
  k.weight[weight_index(W::kQ3_K)].decode = decode_k<BlockQ3_K, K3Act, KAcc, k3_acts, q3_k_block>();
  k.weight[weight_index(W::kQ4_K)].decode =
      decode_k<BlockQ4_K, KAffineAct, KAffineAcc, k_affine_acts,
               k_affine_block<BlockQ4_K, false>>();
  k.weight[weight_index(W::kQ5_K)].decode =
      decode_k<BlockQ5_K, KAffineAct, KAffineAcc, k_affine_acts, k_affine_block<BlockQ5_K, true>>();
  k.weight[weight_index(W::kQ6_K)].decode = decode_k<BlockQ6_K, KAct, KAcc, k_acts, q6_k_block>();
}
