// The to_float slots of the quantized weight types on x86: W tiles widened for the FP32 prefill
// products, embedding rows; and, compiled with AVX512-BF16, their to_bf16 slots: the same values
// rounded to bf16 as they are stored, the W side of the bf16 prefill products. Included by
// weights/to_float_avx2.cc, weights/to_float_avx512.cc and weights/to_bf16_avx512.cc inside their
// namespaces; those files are compiled with -ffp-contract=off, so every value is the reference
// codec's (weight_codecs*.cc) bit for bit: the same scalar scale products, then per value one
// product and, for the affine types, one addition or subtraction, each rounded. A block's codes
// become 32 bytes in value order (weights/block_codes_x86-inl.h), then floats 16 (zmm) or 8 (ymm)
// at a time.

#include "simd/weights/block_codes_x86-inl.h"

namespace {

inline float f16(uint16_t bits) { return _cvtsh_ss(bits); }

// How the offset of a half enters: d * q (symmetric), d * q + m (Q4_1, Q5_1), d * q - m (K types).
enum class Offset { kNone, kAdd, kSub };

#if defined(__AVX512F__)
inline void store16(float* dst, __m512 v) { _mm512_storeu_ps(dst, v); }
#endif
#if defined(__AVX512BF16__)
// vcvtneps2bf16 rounds as f32_to_bf16 (common/half.h) but flushes denormal inputs to zero; no
// widened value is one: a nonzero d * q (+ or - m) of f16 scales is a multiple of 2^-24, and the
// K types' scale products d * sc are exact.
inline void store16(uint16_t* dst, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
}
#endif

// dst[0 .. 32) = float(q[j]) * d[h] (+ or - o[h]), h = j / 16: the two 16-value halves of the 32
// codes in q (signed or unsigned bytes) may have their own scale and offset.
template <bool kSigned, Offset kOffset, class Out>
inline void widen32(__m256i q, const float d[2], const float o[2], Out* dst) {
  const __m128i half[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
  for (int h = 0; h < 2; ++h) {
#if defined(__AVX512F__)
    // the zero-masked forms with every lane kept: the plain ones start from _mm512_undefined,
    // which GCC 12 reports as maybe uninitialized
    const __mmask16 all = 0xFFFF;
    const __m512i i = kSigned ? _mm512_maskz_cvtepi8_epi32(all, half[h])
                              : _mm512_maskz_cvtepu8_epi32(all, half[h]);
    __m512 v = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all, i), _mm512_set1_ps(d[h]));
    if constexpr (kOffset == Offset::kAdd) v = _mm512_add_ps(v, _mm512_set1_ps(o[h]));
    if constexpr (kOffset == Offset::kSub) v = _mm512_sub_ps(v, _mm512_set1_ps(o[h]));
    store16(dst + 16 * h, v);
#else
    for (int e = 0; e < 2; ++e) {
      const __m128i b = e == 0 ? half[h] : _mm_unpackhi_epi64(half[h], half[h]);  // 8 bytes
      const __m256i i = kSigned ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(i), _mm256_set1_ps(d[h]));
      if constexpr (kOffset == Offset::kAdd) v = _mm256_add_ps(v, _mm256_set1_ps(o[h]));
      if constexpr (kOffset == Offset::kSub) v = _mm256_sub_ps(v, _mm256_set1_ps(o[h]));
      _mm256_storeu_ps(dst + 16 * h + 8 * e, v);
    }
#endif
  }
}

// One scale (and offset) for all 32 values.
template <bool kSigned, Offset kOffset, class Out>
inline void widen32(__m256i q, float d, float o, Out* dst) {
  const float ds[2] = {d, d}, os[2] = {o, o};
  widen32<kSigned, kOffset>(q, ds, os, dst);
}

// Software prefetch of block b's lines 2 KiB ahead (simd/prefetch.h): prefill widens every row of
// W once per chunk, from DRAM, as the F16 loops (matmul/gemm_tiles-inl.h).
template <class Block>
inline void read_block_ahead(const Block* b) {
  read_ahead<sizeof(Block)>(b);
}

// Q8_0, Q4_0, Q5_0, IQ4_NL: d * q.
template <class Block, class Out>
void widen_symmetric(const uint8_t* src, int64_t n, Out* dst) {
  const Block* b = reinterpret_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    read_block_ahead(b + i);
    widen32<true, Offset::kNone>(codes(b[i]), f16(b[i].d), 0.0f, dst + i * kQK);
  }
}

// Q4_1, Q5_1: d * q + m.
template <class Block, class Out>
void widen_affine(const uint8_t* src, int64_t n, Out* dst) {
  const Block* b = reinterpret_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    read_block_ahead(b + i);
    widen32<false, Offset::kAdd>(codes(b[i]), f16(b[i].d), f16(b[i].m), dst + i * kQK);
  }
}

// Q2_K and Q3_K: run (n2, j) of 32 values is bits 2j of qs[32 n2 ..], its halves sub-blocks
// 8 n2 + 2j and + 1 (16 values each); Q3_K's third bit is bit 4 n2 + j of hmask, clear meaning -4.
template <bool kHighBit, class Block, class Out>
void widen_k2(const Block& b, const float dl[16], const float ml[16], Out* dst) {
  const __m256i three = _mm256_set1_epi8(3);
  for (int n2 = 0; n2 < 2; ++n2) {
    const __m256i q2 = load256(b.qs + 32 * n2);
    for (int j = 0; j < 4; ++j, dst += 32) {
      __m256i q = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * j), three);
      const int s = 8 * n2 + 2 * j;
      if constexpr (kHighBit) {
        const __m256i h =
            _mm256_and_si256(_mm256_srli_epi16(load256(b.hmask), 4 * n2 + j), _mm256_set1_epi8(1));
        q = _mm256_sub_epi8(q, _mm256_andnot_si256(_mm256_slli_epi16(h, 2), _mm256_set1_epi8(4)));
        widen32<true, Offset::kNone>(q, dl + s, nullptr, dst);
      } else {
        widen32<false, Offset::kSub>(q, dl + s, ml + s, dst);
      }
    }
  }
}

template <class Out>
void widen_q2_k(const uint8_t* src, int64_t n, Out* dst) {
  const BlockQ2_K* b = reinterpret_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    read_block_ahead(b + i);
    const float d = f16(b[i].d), dmin = f16(b[i].dmin);
    float dl[16], ml[16];
    for (int s = 0; s < 16; ++s) {
      dl[s] = d * float(b[i].scales[s] & 0xF);
      ml[s] = dmin * float(b[i].scales[s] >> 4);
    }
    widen_k2<false>(b[i], dl, ml, dst);
  }
}

template <class Out>
void widen_q3_k(const uint8_t* src, int64_t n, Out* dst) {
  const BlockQ3_K* b = reinterpret_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    read_block_ahead(b + i);
    const float d = f16(b[i].d);
    float dl[16];
    for (int s = 0; s < 16; ++s) dl[s] = d * float(q3_k_scale(s, b[i].scales) - 32);
    widen_k2<true>(b[i], dl, nullptr, dst);
  }
}

// Q4_K and Q5_K: sub-block s (32 values) is nibble s % 2 of qs[32 (s / 2) ..], Q5_K's fifth bit
// bit s of qh; d * scale_s * q - dmin * min_s.
template <class Block, bool kFifthBit, class Out>
void widen_k_affine(const uint8_t* src, int64_t n, Out* dst) {
  const Block* b = reinterpret_cast<const Block*>(src);
  const __m256i low4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    read_block_ahead(b + i);
    const float d = f16(b[i].d), dmin = f16(b[i].dmin);
    for (int s = 0; s < 8; ++s, dst += 32) {
      uint8_t sc, m;
      k_scale_min(s, b[i].scales, sc, m);
      __m256i q =
          _mm256_and_si256(_mm256_srli_epi16(load256(b[i].qs + 32 * (s / 2)), 4 * (s % 2)), low4);
      if constexpr (kFifthBit)
        q = _mm256_or_si256(
            q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(load256(b[i].qh), s), one), 4));
      widen32<false, Offset::kSub>(q, d * float(sc), dmin * float(m), dst);
    }
  }
}

// Q6_K: run (n2, k) of 32 values has its low 4 bits in nibble k / 2 of ql[64 n2 + 32 (k % 2) ..]
// and its top 2 bits at bits 2k of qh[32 n2 ..]; codes - 32 times d * scale of each 16 values.
template <class Out>
void widen_q6_k(const uint8_t* src, int64_t n, Out* dst) {
  const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(src);
  const __m256i low4 = _mm256_set1_epi8(0xF), low2 = _mm256_set1_epi8(3),
                bias = _mm256_set1_epi8(32);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    read_block_ahead(b + i);
    const float d = f16(b[i].d);
    float dl[16];
    for (int s = 0; s < 16; ++s) dl[s] = d * float(b[i].scales[s]);
    for (int n2 = 0; n2 < 2; ++n2) {
      const __m256i hb = load256(b[i].qh + 32 * n2);
      for (int k = 0; k < 4; ++k, dst += 32) {
        const __m256i low = _mm256_and_si256(
            _mm256_srli_epi16(load256(b[i].ql + 64 * n2 + 32 * (k % 2)), 4 * (k / 2)), low4);
        const __m256i high =
            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), low2), 4);
        widen32<true, Offset::kNone>(_mm256_sub_epi8(_mm256_or_si256(low, high), bias),
                                     dl + 8 * n2 + 2 * k, nullptr, dst);
      }
    }
  }
}

// The slot of each type: to_float (Out float) or to_bf16 (Out uint16_t).
template <class Out>
void set_slots(Kernels& k, void (*WeightKernels::*slot)(const uint8_t*, int64_t, Out*)) {
  using W = WeightType;
  k.weight[weight_index(W::kQ8_0)].*slot = widen_symmetric<BlockQ8_0, Out>;
  k.weight[weight_index(W::kQ4_0)].*slot = widen_symmetric<BlockQ4_0, Out>;
  k.weight[weight_index(W::kQ5_0)].*slot = widen_symmetric<BlockQ5_0, Out>;
  k.weight[weight_index(W::kIQ4_NL)].*slot = widen_symmetric<BlockIQ4_NL, Out>;
  k.weight[weight_index(W::kQ4_1)].*slot = widen_affine<BlockQ4_1, Out>;
  k.weight[weight_index(W::kQ5_1)].*slot = widen_affine<BlockQ5_1, Out>;
  k.weight[weight_index(W::kQ2_K)].*slot = widen_q2_k<Out>;
  k.weight[weight_index(W::kQ3_K)].*slot = widen_q3_k<Out>;
  k.weight[weight_index(W::kQ4_K)].*slot = widen_k_affine<BlockQ4_K, false, Out>;
  k.weight[weight_index(W::kQ5_K)].*slot = widen_k_affine<BlockQ5_K, true, Out>;
  k.weight[weight_index(W::kQ6_K)].*slot = widen_q6_k<Out>;
}

}  // namespace

#if defined(__AVX512BF16__)
void install(Kernels& k) { set_slots<uint16_t>(k, &WeightKernels::to_bf16); }
#else
void install(Kernels& k) { set_slots<float>(k, &WeightKernels::to_float); }
#endif
