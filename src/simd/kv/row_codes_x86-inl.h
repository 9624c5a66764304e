// x86 primitives of kv/row_kernels-inl.h: L int8 codes, L narrower codes or L FP16 scales to L
// floats, for 16, 8 and 4 lanes.

template <class A>
inline Vec<A> cvt_i8(const uint8_t* p) {
  if constexpr (kLanes<A> == 16) {
    return Vec<A>(_mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
  } else if constexpr (kLanes<A> == 8) {
    return Vec<A>(_mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
  } else {
    int32_t w;
    std::memcpy(&w, p, sizeof w);
    return Vec<A>(_mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(w))));
  }
}

// L codes of Bits bits, at bit `shift` of L bytes, to L floats.
template <class A, int Bits>
inline Vec<A> cvt_codes(const uint8_t* p, int shift) {
  const int mask = (1 << Bits) - 1;
  const __m128i count = _mm_cvtsi32_si128(shift);
  if constexpr (kLanes<A> == 16) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return Vec<A>(
        _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srl_epi32(b, count), _mm512_set1_epi32(mask))));
  } else if constexpr (kLanes<A> == 8) {
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return Vec<A>(
        _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(b, count), _mm256_set1_epi32(mask))));
  } else {
    int32_t w;
    std::memcpy(&w, p, sizeof w);
    const __m128i b = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(w));
    return Vec<A>(_mm_cvtepi32_ps(_mm_and_si128(_mm_srl_epi32(b, count), _mm_set1_epi32(mask))));
  }
}

// L 4-bit codes at bit `shift` of L bytes, as the levels of kv::kQ4NLevels they index (pshufb),
// to L floats.
template <class A>
inline Vec<A> cvt_levels(const uint8_t* p, int shift) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kv::kQ4NLevels));
  const auto lookup = [&](__m128i b) {
    return _mm_shuffle_epi8(
        table, _mm_and_si128(_mm_srl_epi16(b, _mm_cvtsi32_si128(shift)), _mm_set1_epi8(15)));
  };
  if constexpr (kLanes<A> == 16) {
    return Vec<A>(_mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(lookup(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))));
  } else if constexpr (kLanes<A> == 8) {
    return Vec<A>(_mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(lookup(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))));
  } else {
    int32_t w;
    std::memcpy(&w, p, sizeof w);
    return Vec<A>(_mm_cvtepi32_ps(_mm_cvtepi8_epi32(lookup(_mm_cvtsi32_si128(w)))));
  }
}

// L FP16 values (kv::Scale) to L floats, exactly (F16C).
template <class A>
inline Vec<A> cvt_f16(const uint8_t* p) {
  if constexpr (kLanes<A> == 16) {
    return Vec<A>(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  } else if constexpr (kLanes<A> == 8) {
    return Vec<A>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  } else {
    return Vec<A>(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
}

// out[e] = sum of the lanes of v[e] for e < L. xsimd 8.1's AVX-512 haddp permutes its result,
// so 16 lanes fold each vector to 8 lanes and reduce two halves with the AVX2 haddp.
template <class A>
inline void lane_sums(const Vec<A>* v, float* out) {
  if constexpr (kLanes<A> == 16) {
    using H = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
    H h[16];
    for (int e = 0; e < 16; ++e) {
      const __m512 x = v[e];
      h[e] = H(_mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1)));
    }
    xsimd::haddp(h).store_unaligned(out);
    xsimd::haddp(h + 8).store_unaligned(out + 8);
  } else {
    xsimd::haddp(v).store_unaligned(out);
  }
}
