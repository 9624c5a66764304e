// The Q6_K decode product on x86 (the decode slot, DecodeArgs of simd/kernels.h): included by
// weights/decode_x86-inl.h, after its helpers. The Q4_0 kernel's design
// (weights/decode_q4_0_x86-inl.h) for super-blocks, which are already groups of 256 values:
//   - once per call each activation row (Q8_K blocks) is laid out again for all the W rows (KAct):
//     codes aligned, beside the 16 sums of 16 codes and the f32 scale;
//   - per block no horizontal sum: the bias -32 Σ scale bsums is subtracted lane by lane from the
//     main sum's int32 lanes (exact: the lanes are summed once per row), and no scalar scale
//     broadcasts: the sub-block scales of a step come from one register by vpshufb; the four runs
//     of a half block sum on two chains;
//   - the rows are read ahead in software (k_read_ahead).
// The integer sum of a block is the scalar twin's (weights/decode_scalar.cc) exactly, the same
// products grouped otherwise; d_a d_w Σ is an f32 step as the twin's, summed in another order
// (lanes). Q4_K and Q5_K, bound by instructions rather than bytes, have their own layout and
// kernels (weights/decode_k4_x86-inl.h).

namespace {

// One Q8_K activation block as the K kernels read it.
struct alignas(32) KAct {
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

// Software prefetch of the block 2 KiB past x (the distance of the Q4_0 kernel's read_ahead).
template <class Block>
inline void k_read_ahead(const Block* x) {
  const char* p = reinterpret_cast<const char*>(x) + 2048;
  for (size_t l = 0; l < sizeof(Block); l += 64) _mm_prefetch(p + l, _MM_HINT_T0);
  _mm_prefetch(p + sizeof(Block) - 1, _MM_HINT_T0);
}

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

template <class Block, __m256 (*Step)(const Block&, const KAct&, __m256)>
void decode_k(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK_K;
  thread_local std::vector<KAct> acts;
  if (acts.size() < size_t(a.m * nb)) acts.resize(size_t(a.m * nb));
  for (int i = 0; i < a.m; ++i)
    k_acts(reinterpret_cast<const BlockQ8_K*>(a.act + size_t(i) * a.act_stride), nb,
           acts.data() + i * nb);
  for (int j = 0; j < a.n_rows; ++j) {
    const Block* x = reinterpret_cast<const Block*>(a.w + size_t(j) * a.w_stride);
    for (int i = 0; i < a.m; ++i) {
      const KAct* act = acts.data() + i * nb;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        k_read_ahead(x + b);
        acc = Step(x[b], act[b], acc);
      }
      a.y[size_t(i) * a.y_stride + size_t(j)] = hsum(acc);
    }
  }
}

}  // namespace
