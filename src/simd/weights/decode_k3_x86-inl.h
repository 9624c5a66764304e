// The Q3_K decode product on x86 (the decode slot, DecodeArgs of simd/kernels.h): included by
// weights/decode_x86-inl.h after weights/decode_k_x86-inl.h (k_read_ahead, word_of). The design of
// the Q4_K kernel (weights/decode_k4_x86-inl.h):
//   - once per call each activation row (Q8_K blocks) is laid out again for all the W rows
//     (K3Act): codes aligned in the order the W codes come in, beside the 16 sums of 16 codes and
//     the f32 scale;
//   - avx512-vnni: a zmm holds the 64 bytes of qs: bits 2j of its lower 32 bytes are the run of
//     values 32j .., of its upper ones the run 128 + 32j ..; the high bit (4 added) where vptestmb
//     finds bit j or 4 + j of hmask; so each 128-bit lane is one 16-value sub-block; vpdpbusd
//     sums 4 products of code (0..7) and activation per int32 lane (|lane| < 2^15, so the lane is
//     its low int16 word) and vpdpwssd multiplies that word by the sub-block scale, taken by
//     vpshufb from the 16 scales as int16 words;
//   - avx2: a ymm per run of 32 values, the high bit shifted to bit 2; vpmaddubsw sums code x
//     activation pairs, vpmaddwd multiplies them by the scale, taken by vpshufb as in Q6_K's step;
//   - the codes are biased by -4: -4 Σ_s scale_s bsums[s] is subtracted lane by lane from the
//     int32 lanes of the sum (exact: the lanes are summed once per row).
// The integer sum of a block is the scalar twin's (weights/decode_scalar.cc) exactly, the same
// products grouped otherwise; d_a d_w Σ is an f32 step as the twin's, summed in another order
// (lanes).

namespace {

// One Q8_K activation block as the Q3_K kernel reads it: on avx512-vnni the 32-value runs of the
// codes in the order 0, 4, 1, 5, 2, 6, 3, 7 (run j of each half of 128 values side by side, as a
// zmm of W codes gives them); on avx2 in order.
struct alignas(64) K3Act {
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // Σ of codes 16s .. 16s + 15
  float d;
};

void k3_acts(const BlockQ8_K* y, int64_t nb, K3Act* out) {
  for (int64_t b = 0; b < nb; ++b) {
#if defined(__AVX512VNNI__)
    for (int r = 0; r < kQK_K / 32; ++r)
      std::memcpy(out[b].qs + 32 * r, y[b].qs + 128 * (r % 2) + 32 * (r / 2), 32);
#else
    std::memcpy(out[b].qs, y[b].qs, sizeof out[b].qs);
#endif
    std::memcpy(out[b].bsums, y[b].bsums, sizeof out[b].bsums);
    out[b].d = q8_k_scale(y[b]);
  }
}

// The 16 scales of a Q3_K block less 32, as int8 (q3_k_scale_words of simd/weights/blocks.h).
inline __m128i q3_k_scales(const uint8_t* packed) {
  uint32_t w[4];
  q3_k_scale_words(packed, w);
  return _mm_sub_epi8(_mm_setr_epi32(int(w[0]), int(w[1]), int(w[2]), int(w[3])),
                      _mm_set1_epi8(32));
}

#if defined(__AVX512VNNI__)

// vpshufb control: in each int32 lane the int16 word s0 of a 128-bit lane in lanes 0 and 2, word
// s1 in lanes 1 and 3, with a zero word above it.
inline __m512i q3_scale_of(int s0, int s1) {
  const auto ctrl = [](int s) {
    return _mm_set1_epi32(int(0x80800000u | uint32_t(0x0101 * 2 * s + 0x0100)));
  };
  const __m256i half = _mm256_set_m128i(ctrl(s1), ctrl(s0));
  return _mm512_inserti64x4(_mm512_castsi256_si512(half), half, 1);
}

inline __m512 q3_k_block(const BlockQ3_K& x, const K3Act& a, __m512 acc) {
  const __m256i sc16 = _mm256_cvtepi8_epi16(q3_k_scales(x.scales));  // scale s at word s
  // 128-bit lanes: scales 0..7, 0..7, 8..15, 8..15
  const __m512i sc =
      _mm512_shuffle_i64x2(_mm512_castsi256_si512(sc16), _mm512_castsi256_si512(sc16), 0x50);
  const __m256i bias = _mm256_slli_epi32(
      _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums))), 2);
  const __m512i q = _mm512_loadu_si512(x.qs);
  const __m512i hb = _mm512_broadcast_i64x4(load256(x.hmask));
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  __m512i sum0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(bias)),
          sum1 = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) {
    __m512i c = _mm512_and_si512(_mm512_srli_epi16(q, 2 * j), three);
    const __m512i bit =
        _mm512_inserti64x4(_mm512_set1_epi8(char(1 << j)), _mm256_set1_epi8(char(1 << (4 + j))), 1);
    c = _mm512_mask_add_epi8(c, _mm512_test_epi8_mask(hb, bit), c, four);
    const __m512i p =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), c,
                            _mm512_load_si512(reinterpret_cast<const __m512i*>(a.qs + 64 * j)));
    // lanes 0, 1: sub-blocks 2j, 2j + 1; lanes 2, 3: 8 + 2j, 9 + 2j
    const __m512i s = _mm512_shuffle_epi8(sc, q3_scale_of(2 * j, 2 * j + 1));
    if (j % 2 == 0) sum0 = _mm512_dpwssd_epi32(sum0, p, s);
    else sum1 = _mm512_dpwssd_epi32(sum1, p, s);
  }
  return _mm512_fmadd_ps(_mm512_set1_ps(a.d * f16(x.d)),
                         _mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1)), acc);
}

#else

inline __m256 q3_k_block(const BlockQ3_K& x, const K3Act& a, __m256 acc) {
  const __m256i sc16 = _mm256_cvtepi8_epi16(q3_k_scales(x.scales));  // scale s at word s
  const __m256i bias = _mm256_slli_epi32(
      _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums))), 2);
  const __m256i hb = load256(x.hmask);
  const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  __m256i sum0 = _mm256_sub_epi32(_mm256_setzero_si256(), bias), sum1 = _mm256_setzero_si256();
  for (int n2 = 0; n2 < 2; ++n2) {
    const __m256i q = load256(x.qs + 32 * n2);
    // both 128-bit lanes: scales 8n .. 8n + 7
    const __m256i scales = n2 == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00)
                                   : _mm256_permute2x128_si256(sc16, sc16, 0x11);
    for (int j = 0; j < 4; ++j) {
      // bit 4n + j of each hmask byte to bit 2: bits shifted across bytes land outside it
      const int bit = 4 * n2 + j;
      const __m256i h = bit >= 2 ? _mm256_srli_epi16(hb, bit - 2) : _mm256_slli_epi16(hb, 2 - bit);
      const __m256i c = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three),
                                        _mm256_and_si256(h, four));
      const __m256i p = _mm256_maddubs_epi16(
          c, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.qs + 128 * n2 + 32 * j)));
      // lanes: sub-blocks 8n + 2j, 8n + 2j + 1
      const __m256i s = _mm256_shuffle_epi8(scales, word_of(2 * j, 2 * j + 1));
      if (j % 2 == 0) sum0 = dot_s16(sum0, s, p);
      else sum1 = dot_s16(sum1, s, p);
    }
  }
  return _mm256_fmadd_ps(_mm256_set1_ps(a.d * f16(x.d)),
                         _mm256_cvtepi32_ps(_mm256_add_epi32(sum0, sum1)), acc);
}

#endif

}  // namespace
