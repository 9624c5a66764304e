// The Q4_0 decode product on x86 (the decode slot, DecodeArgs of simd/kernels.h): included by
// weights/decode_x86-inl.h. Once per call, each activation row (Q8_0 blocks) is laid out again for
// all the W rows of the call, in groups of 8 blocks (Q4Group): the codes of blocks 2p and 2p + 1
// side by side, as the nibbles of two W blocks loaded into one ymm give them; each block's scale as
// f32; and its bias -8 Σ a. The W codes then enter vpdpbusd (vpmaddubsw on avx2) as the unsigned
// nibbles q = 0..15: Σ q a - 8 Σ a is the scalar twin's exact integer sum Σ (q - 8) a, with no
// sign trick per row. Three vphaddd reduce a group's 8 blocks to one sum per lane, so the 8 W
// scales are widened in one vcvtph2ps (gathered by one vpermt2w where AVX512BW is there) and one
// FMA per group adds d_w d_a Σ, as the twin's d_w d_a Σ per block; only the order of the float
// sums differs. The rows are read ahead in software (read_ahead).

namespace {

// 8 activation blocks; d and bias in the lane order of the reduced sums: blocks 0, 2, 4, 6, 1, 3,
// 5, 7.
struct alignas(32) Q4Group {
  int8_t codes[4][2][32];  // pair p: [0] values 0..15 of block 2p, then of block 2p + 1; [1]
                           // values 16..31
  float d[8];
  int32_t bias[8];  // -8 Σ a
};
constexpr int kQ4Lane[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // the lane of block k of a group

// The groups of one activation row of nb blocks, the last one padded with zero blocks.
void q4_groups(const BlockQ8_0* y, int64_t nb, Q4Group* g) {
  for (int64_t b = 0; b < (nb + 7) / 8 * 8; ++b) {
    Q4Group& group = g[b / 8];
    const int k = int(b % 8), lane = kQ4Lane[k];
    int8_t* lo = group.codes[k / 2][0] + 16 * (k % 2);
    int8_t* hi = group.codes[k / 2][1] + 16 * (k % 2);
    if (b < nb) {
      int32_t sum = 0;
      for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
      std::memcpy(lo, y[b].qs, kQK / 2);
      std::memcpy(hi, y[b].qs + kQK / 2, kQK / 2);
      group.d[lane] = f16(y[b].d);
      group.bias[lane] = -8 * sum;
    } else {
      std::memset(lo, 0, kQK / 2);
      std::memset(hi, 0, kQK / 2);
      group.d[lane] = 0.0f;
      group.bias[lane] = 0;
    }
  }
}

// Σ u0 s0 + u1 s1 per int32 lane (u unsigned, s signed bytes): on avx2 the two vpmaddubsw are
// added as int16 first, exact for nibbles (4 * 15 * 128 < 2^15).
inline __m256i dot_nibbles(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
#if defined(__AVX512VNNI__)
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
  const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
}

// acc + the products of the 8 blocks at x and group a, lane kQ4Lane[k] with block k's.
inline __m256 q4_group(const BlockQ4_0* x, const Q4Group& a, __m256 acc) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256i s[4];
  for (int p = 0; p < 4; ++p) {
    const __m256i w = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(x[2 * p + 1].qs),
                                          reinterpret_cast<const __m128i*>(x[2 * p].qs));
    s[p] = dot_nibbles(_mm256_and_si256(w, low4), load256(a.codes[p][0]),
                       _mm256_and_si256(_mm256_srli_epi16(w, 4), low4), load256(a.codes[p][1]));
  }
  const __m256i sums =
      _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  const __m256i isum = _mm256_add_epi32(sums, load256(a.bias));
#if defined(__AVX512BW__)
  // the 8 scales from the first 128 bytes of the group (block k's at word 9k)
  const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 63, 45, 27, 9, 54, 36, 18, 0);
  const __m512i words = _mm512_permutex2var_epi16(
      _mm512_loadu_si512(x), idx, _mm512_loadu_si512(reinterpret_cast<const uint8_t*>(x) + 64));
  const __m128i dw = _mm512_castsi512_si128(words);
#else
  const __m128i dw = _mm_setr_epi16(short(x[0].d), short(x[2].d), short(x[4].d), short(x[6].d),
                                    short(x[1].d), short(x[3].d), short(x[5].d), short(x[7].d));
#endif
  const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(dw), _mm256_load_ps(a.d));
  return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
}

// Software prefetch of the 5 lines (a pair of groups, 288 bytes, and the line it straddles) 2 KiB
// past x: the rows of a product are one sequential stream, but the hardware prefetchers alone
// left decode slower (bench_matmul; 2 KiB was the best of the distances tried, 1 to 8 KiB).
inline void read_ahead(const BlockQ4_0* x) {
  const char* p = reinterpret_cast<const char*>(x) + 2048;
  for (int l = 0; l < 5; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

void decode_q4_0(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK, full = nb / 8, ng = (nb + 7) / 8;
  thread_local std::vector<Q4Group> groups;
  if (groups.size() < size_t(a.m * ng)) groups.resize(size_t(a.m * ng));
  Q4Group* const act = groups.data();
  for (int i = 0; i < a.m; ++i)
    q4_groups(reinterpret_cast<const BlockQ8_0*>(a.act + size_t(i) * a.act_stride), nb,
              act + i * ng);
  BlockQ4_0 tail[8] = {};  // the last nb % 8 blocks of a row, then zero blocks
  for (int j = 0; j < a.n_rows; ++j) {
    const BlockQ4_0* x = reinterpret_cast<const BlockQ4_0*>(a.w + size_t(j) * a.w_stride);
    if (full < ng) std::memcpy(tail, x + 8 * full, size_t(nb - 8 * full) * sizeof(BlockQ4_0));
    for (int i = 0; i < a.m; ++i) {
      const Q4Group* g = act + i * ng;
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
      int64_t k = 0;
      for (; k + 1 < full; k += 2) {
        read_ahead(x + 8 * k);
        acc0 = q4_group(x + 8 * k, g[k], acc0);
        acc1 = q4_group(x + 8 * (k + 1), g[k + 1], acc1);
      }
      if (k < full) acc0 = q4_group(x + 8 * k, g[k], acc0);
      if (full < ng) acc1 = q4_group(tail, g[full], acc1);
      a.y[size_t(i) * a.y_stride + size_t(j)] = hsum(_mm256_add_ps(acc0, acc1));
    }
  }
}

}  // namespace
