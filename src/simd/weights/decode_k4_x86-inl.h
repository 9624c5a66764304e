// The Q4_K and Q5_K decode products on x86 (the decode slot, DecodeArgs of simd/kernels.h):
// included by weights/decode_x86-inl.h after weights/decode_k_x86-inl.h (k_read_ahead). The Q4_0
// kernel's design, and few instructions per block, as these kernels are bound by how many the
// core issues, not by the bytes of W:
//   - once per call each activation row (Q8_K blocks) is laid out again for all the W rows
//     (KAffineAct): codes aligned in the order the W nibbles come in, beside the sums of each
//     32-value sub-block and the f32 scale;
//   - the 6-bit scales and mins of a block are unpacked by 11 vector instructions on avx512-vnni
//     (k_scales_mins); on avx2, whose vector ports are the busier ones, by integer instructions as
//     ggml's utmp; the min term is one vpmaddwd of the 8 mins with the 8 activation sums, kept in
//     its own float lanes (no horizontal sum per block);
//   - avx512-vnni works on zmm, 64 codes per instruction: vpdpbusd sums 4 products of nibble and
//     activation per int32 lane (|lane| <= 4 * 31 * 128 < 2^15, so the lane is its low int16 word)
//     and vpdpwssd multiplies that word by the sub-block scale, from one register by vpshufb;
//     Q5_K's fifth bit is added where vptestmb finds it. avx2 works on ymm with vpmaddubsw and
//     vpmaddwd.
// The integer sums of a block are the scalar twin's (weights/decode_scalar.cc), the same products
// grouped otherwise; d_a d_w Σ and d_a dmin_w Σ min a are f32 steps as the twin's, summed in
// another order (lanes).

namespace {

// One Q8_K activation block as the Q4_K and Q5_K kernels read it.
struct alignas(64) KAffineAct {
  // avx512-vnni: each run of 128 values as its 32-value runs 0, 2, 1, 3 (a zmm of W codes holds
  // sub-blocks 4p, 4p + 2 in its low nibbles, 4p + 1, 4p + 3 in its high ones); avx2: in order.
  int8_t qs[kQK_K];
  int16_t sums[8];  // Σ of the codes of sub-block s (values 32s .. 32s + 31)
  float d;
};

void k_affine_acts(const BlockQ8_K* y, int64_t nb, KAffineAct* out) {
#if defined(__AVX512VNNI__)
  constexpr int kRun[4] = {0, 2, 1, 3};
#else
  constexpr int kRun[4] = {0, 1, 2, 3};
#endif
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < kQK_K / 32; ++r)
      std::memcpy(out[b].qs + 32 * r, y[b].qs + 128 * (r / 4) + 32 * kRun[r % 4], 32);
    for (int s = 0; s < 8; ++s) out[b].sums[s] = int16_t(y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    out[b].d = q8_k_scale(y[b]);
  }
}

// d_a d_w (lane 0) and d_a dmin_w (lane 1) of a block.
template <class Block>
inline __m128 k_affine_scales(const Block& x, const KAffineAct& a) {
  static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2);
  uint32_t d_dmin;
  std::memcpy(&d_dmin, &x.d, sizeof d_dmin);
  return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(int(d_dmin))), _mm_set1_ps(a.d));
}

// A row's sums so far: d_a d_w Σ scale_s Σ q a in the lanes of sum, d_a dmin_w Σ min_s sums_s
// in the 4 of min.
struct KAffineAcc {
  KAcc sum;
  __m128 min;
};
inline float hsum(const KAffineAcc& a) { return hsum(a.sum) - hsum(_mm256_zextps128_ps256(a.min)); }

#if defined(__AVX512VNNI__)

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K / Q5_K block, 6 bits each, from
// its 12 packed bytes b (k_scale_min of simd/weights/blocks.h for all 8 sub-blocks at once):
// scale j < 4 is b[j] & 63, min j < 4 b[j + 4] & 63; scale j >= 4 is b[j + 4] & 15 | b[j - 4] >> 6
// << 4, min j >= 4 b[j + 4] >> 4 | b[j] >> 6 << 4. Reads 16 bytes: the 4 past the scales are the
// block's codes.
inline __m128i k_scales_mins(const uint8_t* packed) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  constexpr char z = char(0x80);  // vpshufb: a zero byte
  const __m128i low = _mm_and_si128(
      _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, z, z, z, z)),
      _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m128i min_low = _mm_and_si128(  // b[8 .. 11] >> 4 (shifted within words, then masked)
      _mm_shuffle_epi8(_mm_srli_epi16(b, 4),
                       _mm_setr_epi8(z, z, z, z, z, z, z, z, z, z, z, z, 8, 9, 10, 11)),
      _mm_set1_epi8(0xF));
  const __m128i high = _mm_and_si128(  // b >> 6 << 4 = b >> 2 & 0x30
      _mm_shuffle_epi8(_mm_srli_epi16(b, 2),
                       _mm_setr_epi8(z, z, z, z, 0, 1, 2, 3, z, z, z, z, 4, 5, 6, 7)),
      _mm_set1_epi8(0x30));
  return _mm_or_si128(_mm_or_si128(low, min_low), high);
}

// The codes of one zmm of W (64 bytes of qs): low nibbles (sub-blocks 4p, 4p + 2) and high ones
// (4p + 1, 4p + 3); Q5_K's fifth bit from the bits 4p .. 4p + 3 of qh in zmm hb (its 32 bytes in
// both halves).
template <bool kFifthBit>
inline void k_affine_codes(__m512i q, __m512i hb, int p, __m512i& lo, __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(0xF);
  lo = _mm512_and_si512(q, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
  if constexpr (kFifthBit) {
    const auto bit = [](int s0, int s1) {  // bit s0 in the lower 32 bytes, s1 in the upper
      return _mm512_inserti64x4(_mm512_set1_epi8(char(1 << s0)), _mm256_set1_epi8(char(1 << s1)),
                                1);
    };
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hb, bit(4 * p, 4 * p + 2)), lo, sixteen);
    hi =
        _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hb, bit(4 * p + 1, 4 * p + 3)), hi, sixteen);
  }
}

// vpshufb control: in each int32 lane the byte s0 (lower 256 bits) or s1 (upper) of a 128-bit
// lane, zero-extended: the scale word of vpdpwssd.
inline __m512i k_scale_of(int s0, int s1) {
  constexpr uint32_t kZ = 0x80808000;  // bytes 1..3 zero
  return _mm512_inserti64x4(_mm512_set1_epi32(int(kZ | uint32_t(s0))),
                            _mm256_set1_epi32(int(kZ | uint32_t(s1))), 1);
}

// acc + block x: Σ scale_s Σ q a as 16 int32 lanes (added to acc.sum times d_a d_w) and Σ min_s
// sums_s as 4 lanes (to acc.min times d_a dmin_w).
template <class Block, bool kFifthBit>
inline KAffineAcc k_affine_block(const Block& x, const KAffineAct& a, KAffineAcc acc) {
  const __m128i sm = k_scales_mins(x.scales);
  const __m512i sc = _mm512_broadcast_i32x4(sm);
  __m512i hb = _mm512_setzero_si512();
  if constexpr (kFifthBit) hb = _mm512_broadcast_i64x4(load256(x.qh));
  __m512i sum0 = _mm512_setzero_si512(), sum1 = _mm512_setzero_si512();
  for (int p = 0; p < 2; ++p) {
    __m512i lo, hi;
    k_affine_codes<kFifthBit>(_mm512_loadu_si512(x.qs + 64 * p), hb, p, lo, hi);
    const __m512i* act = reinterpret_cast<const __m512i*>(a.qs + 128 * p);
    const __m512i dlo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_load_si512(act));
    const __m512i dhi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, _mm512_load_si512(act + 1));
    sum0 = _mm512_dpwssd_epi32(sum0, dlo, _mm512_shuffle_epi8(sc, k_scale_of(4 * p, 4 * p + 2)));
    sum1 =
        _mm512_dpwssd_epi32(sum1, dhi, _mm512_shuffle_epi8(sc, k_scale_of(4 * p + 1, 4 * p + 3)));
  }
  const __m128 d = k_affine_scales(x, a);
  acc.sum = _mm512_fmadd_ps(_mm512_broadcastss_ps(d),
                            _mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1)), acc.sum);
  const __m128i mins = _mm_madd_epi16(_mm_unpackhi_epi8(sm, _mm_setzero_si128()),
                                      _mm_load_si128(reinterpret_cast<const __m128i*>(a.sums)));
  acc.min = _mm_fmadd_ps(_mm_shuffle_ps(d, d, 0x55), _mm_cvtepi32_ps(mins), acc.min);
  return acc;
}

#else

// acc + block x, as the avx512-vnni step on ymm: 32 codes per instruction, the products of
// nibbles and activations in int16 pairs by vpmaddubsw (2 * 31 * 128 < 2^15), times the sub-block
// scale by vpmaddwd; the scales and mins unpacked in integer registers (k_scale_min of
// simd/weights/blocks.h for all 8 sub-blocks at once, as ggml's utmp).
template <class Block, bool kFifthBit>
inline KAffineAcc k_affine_block(const Block& x, const KAffineAct& a, KAffineAcc acc) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, x.scales, sizeof u);
  const uint32_t sm[4] = {u[0] & kLow6, (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4), u[1] & kLow6,
                          ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4)};
  const uint8_t* sc = reinterpret_cast<const uint8_t*>(sm);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256i hb = _mm256_setzero_si256();
  if constexpr (kFifthBit) hb = load256(x.qh);
  __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i q4 = load256(x.qs + 32 * k);
    __m256i lo = _mm256_and_si256(q4, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), low4);
    if constexpr (kFifthBit) {
      // bit s of each byte to bit 4: bits shifted across bytes land outside it
      const auto to_bit4 = [&](int s) {
        const __m256i h = s <= 4 ? _mm256_slli_epi16(hb, 4 - s) : _mm256_srli_epi16(hb, s - 4);
        return _mm256_and_si256(h, _mm256_set1_epi8(0x10));
      };
      lo = _mm256_or_si256(lo, to_bit4(2 * k));
      hi = _mm256_or_si256(hi, to_bit4(2 * k + 1));
    }
    const __m256i* act = reinterpret_cast<const __m256i*>(a.qs + 64 * k);
    sum0 =
        _mm256_add_epi32(sum0, _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * k]),
                                                 _mm256_maddubs_epi16(lo, _mm256_load_si256(act))));
    sum1 = _mm256_add_epi32(
        sum1, _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * k + 1]),
                                _mm256_maddubs_epi16(hi, _mm256_load_si256(act + 1))));
  }
  const __m128 d = k_affine_scales(x, a);
  acc.sum = _mm256_fmadd_ps(_mm256_broadcastss_ps(d),
                            _mm256_cvtepi32_ps(_mm256_add_epi32(sum0, sum1)), acc.sum);
  const __m128i mins =
      _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_set_epi32(0, 0, int(sm[3]), int(sm[2]))),
                     _mm_load_si128(reinterpret_cast<const __m128i*>(a.sums)));
  acc.min = _mm_fmadd_ps(_mm_shuffle_ps(d, d, 0x55), _mm_cvtepi32_ps(mins), acc.min);
  return acc;
}

#endif

}  // namespace
