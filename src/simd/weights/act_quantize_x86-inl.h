// The activation side of the decode products on x86: FP32 rows into Q8_0 and Q8_K blocks (the
// from_float slots of those formats), bit for bit as the reference codecs (weight_codecs*.cc)
// write them: the same scale arithmetic and rounding. Included by weights/decode_x86-inl.h.

namespace {

// round(v), halves away from zero (std::round), for values far below 2^23.
inline __m256 round_away(__m256 v) {  // Q8_0's rounding
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
  const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));  // exact
  const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                  _mm256_or_ps(sign, _mm256_set1_ps(1.0f)));
  return _mm256_add_ps(t, up);
}

inline float hmax(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// max |x| over n (a multiple of 8) values.
inline float abs_max(const float* x, int n) {
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(m, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x + i)));
  return hmax(m);
}

// 32 int8 codes: x[i] * scale rounded by `round` (|x[i] * scale| <= 127), in order.
template <class Round>
inline __m256i codes32(const float* x, __m256 scale, Round round) {
  __m256i q[4];
  for (int k = 0; k < 4; ++k)
    q[k] = _mm256_cvtps_epi32(round(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), scale)));
  // packs interleave the 128-bit halves; the permutation puts the 32 bytes back in order
  const __m256i p =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Q8_0: d = max|x| / 127 (stored as f16), codes round(x / d).
void q8_0_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ8_0* y = reinterpret_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = abs_max(x, kQK) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs),
                        codes32(x, _mm256_set1_ps(id), round_away));
  }
}

// Q8_K: d = max / -127 for the signed value of largest magnitude (the first of equals), codes
// round(x / d) to nearest even (the conversion's rounding), and the sums of each 16 codes.
void q8_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  const auto nearest_even = [](__m256 v) {
    return v;
  };  // _mm256_cvtps_epi32 rounds to nearest even
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ8_K y{};
    const float amax = abs_max(x, kQK_K);
    if (amax != 0.0f) {
      int first = 0;
      while (std::fabs(x[first]) != amax) ++first;
      const float iscale = -127.0f / x[first];
      for (int i = 0; i < kQK_K; i += 32)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y.qs + i),
                            codes32(x + i, _mm256_set1_ps(iscale), nearest_even));
      y.d = 1.0f / iscale;
    }
    // Σ of each 16 codes: pairs to int16 (by ones), then the 8 pairs of each 16 added
    for (int i = 0; i < kQK_K; i += 32) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + i));
      const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
      const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));  // 8 sums of 4
      const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s32),
                                      _mm_srli_si128(_mm256_castsi256_si128(s32), 8));
      const __m128i g = _mm_add_epi32(_mm256_extracti128_si256(s32, 1),
                                      _mm_srli_si128(_mm256_extracti128_si256(s32, 1), 8));
      y.bsums[i / 16] = int16_t(_mm_cvtsi128_si32(h) + _mm_extract_epi32(h, 1));
      y.bsums[i / 16 + 1] = int16_t(_mm_cvtsi128_si32(g) + _mm_extract_epi32(g, 1));
    }
    std::memcpy(dst + b * int64_t(sizeof(BlockQ8_K)), &y, sizeof y);
  }
}

}  // namespace
