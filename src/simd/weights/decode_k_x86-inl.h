// The Q6_K decode product on x86 (the decode slot, DecodeArgs of simd/kernels.h): included by
// weights/decode_x86-inl.h, after its helpers. The Q4_0 kernel's design
// (weights/decode_groups_x86-inl.h) for super-blocks, which are already groups of 256 values:
//   - once per product each activation row (Q8_K blocks) is laid out again for all the W rows
//     (KAct, by the lay slot):
//     codes aligned, beside the 16 sums of 16 codes and the f32 scale;
//   - per block no horizontal sum: the bias -32 Σ scale bsums is subtracted lane by lane from the
//     main sum's int32 lanes (exact: the lanes are summed once per row), and no scalar scale
//     broadcasts: the sub-block scales of a step come from one register by vpshufb; the four runs
//     of a half block sum on two chains;
//   - avx512-vnni works on zmm (q6_k_block's comment), avx2 on ymm;
//   - the rows are read ahead in software (k_read_ahead).
// The integer sum of a block is the scalar twin's (weights/decode_scalar.cc) exactly, the same
// products grouped otherwise; d_a d_w Σ is an f32 step as the twin's, summed in another order
// (lanes). Q4_K and Q5_K, bound by instructions rather than bytes, have their own layout and
// kernels (weights/decode_k4_x86-inl.h).

namespace {

// One Q8_K activation block as the K kernels read it.
struct alignas(64) KAct {
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // Σ of codes 16s .. 16s + 15
  float d;
};

void k_acts(const BlockQ8_K* y, int64_t nb, KAct* out) {
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(out[b].qs, y[b].qs, sizeof out[b].qs);
    std::memcpy(out[b].bsums, y[b].bsums, sizeof out[b].bsums);
    out[b].d = q8_k_scale(y[b]);
  }
}

// vpshufb control: int16 word lo of the lower 128-bit half into all 8 words of that half, word hi
// of the upper half into all of its words.
inline __m256i word_of(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(short(0x0100 + 0x0202 * hi)),
                          _mm_set1_epi16(short(0x0100 + 0x0202 * lo)));
}

// Software prefetch of the block 8 KiB past x: in a model's decode step W streams from DRAM, and
// the 2 KiB of the Q4_0 kernel's read_ahead left the K kernels waiting on it (kvrt bench; 4 to 16
// KiB did alike, bench_decode's cache-resident matrices alike at every distance).
template <class Block>
inline void k_read_ahead(const Block* x) {
  read_ahead<sizeof(Block), true, 8192>(x);
}

#if defined(__AVX512VNNI__)

// Q6_K on zmm: the 64 bytes of ql of each half n of the block hold runs (n, 0), (n, 1) in their
// low nibbles and (n, 2), (n, 3) in their high ones, so each 128-bit lane is one 16-value
// sub-block; the bits 2k of qh come to bits 4, 5 by a shift per 256-bit half. vpdpbusd sums 4
// products of code (0..63) and activation per int32 lane (|lane| <= 4 * 63 * 128 < 2^15, so the
// lane is its low int16 word), vpdpwssd multiplies it by the sub-block scale, taken by vpshufb
// from the 8 scales of the half as int16 words; less 32 Σ_s scale_s bsums[s] (lanes of the same
// sum).
inline __m512 q6_k_block(const BlockQ6_K& x, const KAct& a, __m512 acc) {
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
  const __m256i bias = _mm256_slli_epi32(
      _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums))), 5);
  const __m512i low4 = _mm512_set1_epi8(0xF), bits45 = _mm512_set1_epi8(0x30);
  // per 256-bit half: runs 0 | 1 from bits 0, 1 | 2, 3 of qh; runs 2 | 3 from bits 4, 5 | 6, 7
  const __m512i shl_low = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr_high = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  // vpshufb control: word i of the 128-bit lane into lane i (runs k = 0, 1), word 4 + i (2, 3)
  const auto word_per_lane = [](int first) {
    const auto w = [](int i) { return int(0x80800000u | uint32_t(0x0202 * i + 0x0100)); };
    return _mm512_set_epi32(w(first + 3), w(first + 3), w(first + 3), w(first + 3), w(first + 2),
                            w(first + 2), w(first + 2), w(first + 2), w(first + 1), w(first + 1),
                            w(first + 1), w(first + 1), w(first), w(first), w(first), w(first));
  };
  __m512i sum0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(bias)),
          sum1 = _mm512_setzero_si512();
  for (int n2 = 0; n2 < 2; ++n2) {
    const __m512i l = _mm512_loadu_si512(x.ql + 64 * n2);
    const __m512i h = _mm512_broadcast_i64x4(load256(x.qh + 32 * n2));
    // bits shifted across bytes land outside bits 4, 5
    const __m512i lo = _mm512_or_si512(_mm512_and_si512(l, low4),
                                       _mm512_and_si512(_mm512_sllv_epi16(h, shl_low), bits45));
    const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4),
                                       _mm512_and_si512(_mm512_srlv_epi16(h, shr_high), bits45));
    const __m512i sc = _mm512_broadcast_i32x4(n2 == 0 ? _mm256_castsi256_si128(sc16)
                                                      : _mm256_extracti128_si256(sc16, 1));
    const __m512i* act = reinterpret_cast<const __m512i*>(a.qs + 128 * n2);
    const __m512i plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_load_si512(act));
    const __m512i phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, _mm512_load_si512(act + 1));
    sum0 = _mm512_dpwssd_epi32(sum0, plo, _mm512_shuffle_epi8(sc, word_per_lane(0)));
    sum1 = _mm512_dpwssd_epi32(sum1, phi, _mm512_shuffle_epi8(sc, word_per_lane(4)));
  }
  return _mm512_fmadd_ps(_mm512_set1_ps(a.d * f16(x.d)),
                         _mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1)), acc);
}

inline float hsum(__m512 x) { return _mm512_reduce_add_ps(x); }
using KAcc = __m512;

#else

using KAcc = __m256;

// Q6_K: run (n, k) of 32 values from ql[64n + 32(k % 2) ..] (nibble k / 2) and bits 2k of
// qh[32n ..]; codes 0..63 times a, less 32 Σ_s scale_s bsums[s] (lanes of the same sum).
inline __m256 q6_k_block(const BlockQ6_K& x, const KAct& a, __m256 acc) {
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
  const __m256i bias = _mm256_slli_epi32(
      _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums))), 5);
  const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
  __m256i sum0 = _mm256_sub_epi32(_mm256_setzero_si256(), bias), sum1 = _mm256_setzero_si256();
  for (int n2 = 0; n2 < 2; ++n2) {
    const __m256i l0 = load256(x.ql + 64 * n2), l1 = load256(x.ql + 64 * n2 + 32);
    const __m256i hb = load256(x.qh + 32 * n2);
    const __m256i low[4] = {_mm256_and_si256(l0, low4), _mm256_and_si256(l1, low4),
                            _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                            _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4)};
    // bits 2k, 2k + 1 of each byte to bits 4, 5: bits shifted across bytes land outside them
    const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45),
                             _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45),
                             _mm256_and_si256(hb, bits45),
                             _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45)};
    const __m256i scales = n2 == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00)
                                   : _mm256_permute2x128_si256(sc16, sc16, 0x11);
    for (int k = 0; k < 4; ++k) {
      const __m256i p = _mm256_maddubs_epi16(
          _mm256_or_si256(low[k], high[k]),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(a.qs + 128 * n2 + 32 * k)));
      const __m256i s =
          _mm256_shuffle_epi8(scales, word_of(2 * k, 2 * k + 1));  // sub-blocks 8n + 2k, + 1
      if (k % 2 == 0) sum0 = dot_s16(sum0, s, p);
      else sum1 = dot_s16(sum1, s, p);
    }
  }
  const __m256i sum = _mm256_add_epi32(sum0, sum1);
  return _mm256_fmadd_ps(_mm256_set1_ps(a.d * f16(x.d)), _mm256_cvtepi32_ps(sum), acc);
}

#endif

// The decode kernel of a K type: each activation row laid out once per product (lay_row), then
// each W row's blocks stepped into an accumulator (Step) that hsum reduces. Q6_K's with KAct;
// Q3_K, Q4_K and Q5_K have layouts of their own (decode_k3_x86-inl.h, decode_k4_x86-inl.h).
template <class Block, class Act, class Acc, Acc (*Step)(const Block&, const Act&, Acc)>
void decode_k_rows(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK_K;
  for (int j = 0; j < a.n_rows; ++j) {
    const Block* x = reinterpret_cast<const Block*>(a.w + size_t(j) * a.w_stride);
    for (int i = 0; i < a.m; ++i) {
      const Act* act = reinterpret_cast<const Act*>(a.act + size_t(i) * a.act_stride);
      Acc acc{};
      for (int64_t b = 0; b < nb; ++b) {
        k_read_ahead(x + b);
        acc = Step(x[b], act[b], acc);
      }
      a.y[size_t(i) * a.y_stride + size_t(j)] = hsum(acc);
    }
  }
}

template <class Block, class Act, class Acc, void (*lay_row)(const BlockQ8_K*, int64_t, Act*),
          Acc (*Step)(const Block&, const Act&, Acc)>
constexpr DecodeKernel decode_k() {
  return Layout<BlockQ8_K, kQK_K, Act, 1, lay_row>::kernel(decode_k_rows<Block, Act, Acc, Step>);
}

}  // namespace
