// The decode products on x86 of the 32-value types whose codes are nibbles (Q4_0, Q5_0's low 4
// bits, IQ4_NL's grid indices; Q4_1 and Q5_1 against Q8_1, affine_group) and of Q8_0 (the decode
// slot, DecodeArgs of simd/kernels.h): included by weights/decode_x86-inl.h. Once per product (the
// lay slot), each activation row (Q8_0 blocks) is laid out again for all the W rows, in groups of 8
// blocks (NibbleGroup): the codes of blocks 2p and 2p + 1 side by side, as the nibbles of two W
// blocks loaded into one ymm give them; each block's scale as f32; and its bias -c Σ a. The W codes
// then enter vpdpbusd (vpmaddubsw on avx2) as unsigned bytes u = q + c (pair_codes): Σ u a - c Σ a
// is the scalar twin's exact integer sum Σ q a, with no sign trick (but for IQ4_NL and Q8_0 on
// avx2, where vpmaddubsw could saturate on q + 128: signed codes, c = 0, the sign trick). Three
// vphaddd reduce a group's 8 blocks to one sum per lane, so the 8 W scales are widened in one
// vcvtph2ps (gathered by one vpermt2w where AVX512BW is there and blocks are 18 bytes) and one FMA
// per group adds d_w d_a Σ, as the twin's d_w d_a Σ per block; only the order of the float sums
// differs. The rows are read ahead in software (read_ahead).

namespace {

// 8 activation blocks; d and bias in the lane order of the reduced sums: blocks 0, 2, 4, 6, 1, 3,
// 5, 7.
struct alignas(32) NibbleGroup {
  int8_t codes[4][2][32];  // pair p: [0] values 0..15 of block 2p, then of block 2p + 1; [1]
                           // values 16..31
  float d[8];
  int32_t bias[8];  // -c Σ a
};
constexpr int kPairLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // the lane of block k of a group

// Block k of a group's codes (qs, or zeros for null) in their places of the pairs.
inline void pair_place(int8_t (*codes)[2][32], int k, const int8_t* qs) {
  int8_t* lo = codes[k / 2][0] + 16 * (k % 2);
  int8_t* hi = codes[k / 2][1] + 16 * (k % 2);
  if (qs) {
    std::memcpy(lo, qs, kQK / 2);
    std::memcpy(hi, qs + kQK / 2, kQK / 2);
  } else {
    std::memset(lo, 0, kQK / 2);
    std::memset(hi, 0, kQK / 2);
  }
}

// The groups of one activation row of nb blocks for W codes offset by c, the last group padded
// with zero blocks.
template <int c>
void nibble_groups(const BlockQ8_0* y, int64_t nb, NibbleGroup* g) {
  for (int64_t b = 0; b < (nb + 7) / 8 * 8; ++b) {
    NibbleGroup& group = g[b / 8];
    const int k = int(b % 8), lane = kPairLane[k];
    pair_place(group.codes, k, b < nb ? y[b].qs : nullptr);
    int32_t sum = 0;
    if (b < nb)
      for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
    group.d[lane] = b < nb ? f16(y[b].d) : 0.0f;
    group.bias[lane] = -c * sum;
  }
}

// The nibbles of two blocks' qs in a pair's order: lo = values 0..15 of the first, then of the
// second; hi = values 16..31. pair_codes below: a pair's codes in that order as bytes u = q + c.
inline void pair_nibbles(const uint8_t* qs0, const uint8_t* qs1, __m256i& lo, __m256i& hi) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  const __m256i w = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(qs1),
                                        reinterpret_cast<const __m128i*>(qs0));
  lo = _mm256_and_si256(w, low4);
  hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), low4);
}

// Q4_0: q = nibble - 8, c = 8.
inline void pair_codes(const BlockQ4_0* x, __m256i& lo, __m256i& hi) {
  pair_nibbles(x[0].qs, x[1].qs, lo, hi);
}

// Q4_1: q = nibble, c = 0.
inline void pair_codes(const BlockQ4_1* x, __m256i& lo, __m256i& hi) {
  pair_nibbles(x[0].qs, x[1].qs, lo, hi);
}

// Q5_0: q = nibble + 16 h - 16 (h the value's bit of qh), c = 16; Q5_1: q = nibble + 16 h, c = 0.
template <class Block>
requires std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>
inline void pair_codes(const Block* x, __m256i& lo, __m256i& hi) {
  pair_nibbles(x[0].qs, x[1].qs, lo, hi);
  uint32_t h0, h1;
  std::memcpy(&h0, x[0].qh, sizeof h0);
  std::memcpy(&h1, x[1].qh, sizeof h1);
  const uint32_t h_lo = (h0 & 0xFFFF) | (h1 << 16), h_hi = (h0 >> 16) | (h1 & 0xFFFF0000);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  lo = _mm256_or_si256(lo, _mm256_maskz_mov_epi8(__mmask32(h_lo), bit4));
  hi = _mm256_or_si256(hi, _mm256_maskz_mov_epi8(__mmask32(h_hi), bit4));
#else
  lo = _mm256_or_si256(lo, _mm256_and_si256(bit_bytes(h_lo), bit4));
  hi = _mm256_or_si256(hi, _mm256_and_si256(bit_bytes(h_hi), bit4));
#endif
}

// IQ4_NL: q = kIq4nlValues[nibble]. On VNNI as u = q + 128 (c = 128); on avx2 as q itself (c = 0,
// kSignedCodes), summed by the sign trick, since vpmaddubsw's pairs of q + 128 could saturate.
#if defined(__AVX512VNNI__)
constexpr int kIq4nlOffset = 128;
#else
constexpr int kIq4nlOffset = 0;
#endif
inline void pair_codes(const BlockIQ4_NL* x, __m256i& lo, __m256i& hi) {
  pair_nibbles(x[0].qs, x[1].qs, lo, hi);
  const __m128i grid =
      _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)),
                    _mm_set1_epi8(char(kIq4nlOffset)));
  const __m256i grid2 = _mm256_set_m128i(grid, grid);
  lo = _mm256_shuffle_epi8(grid2, lo);
  hi = _mm256_shuffle_epi8(grid2, hi);
}
template <class Block>
constexpr bool kSignedCodes = std::is_same_v<Block, BlockIQ4_NL>&& kIq4nlOffset == 0;

// Σ u0 s0 + u1 s1 per int32 lane (u unsigned, s signed bytes): on avx2 the two vpmaddubsw are
// added as int16 first, exact for u <= 31 (4 * 31 * 128 < 2^15).
inline __m256i dot_pairs(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
#if defined(__AVX512VNNI__)
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
  const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
}

// An f16 field (the scale d, or Q4_1's and Q5_1's min m) of blocks 0, 2, 4, 6, 1, 3, 5, 7 at x.
template <class Block>
inline __m128i pair_halves(const Block* x, uint16_t Block::*field) {
#if defined(__AVX512BW__)
  // 18-byte blocks (Q4_0, IQ4_NL) have one such field, d, their first 2 bytes: from the first
  // 128 bytes (block k's at word 9k)
  if constexpr (sizeof(Block) == 18) {
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0, 63, 45, 27, 9, 54, 36, 18, 0);
    const __m512i words = _mm512_permutex2var_epi16(
        _mm512_loadu_si512(x), idx, _mm512_loadu_si512(reinterpret_cast<const uint8_t*>(x) + 64));
    return _mm512_castsi512_si128(words);
  }
#endif
  return _mm_setr_epi16(short(x[0].*field), short(x[2].*field), short(x[4].*field),
                        short(x[6].*field), short(x[1].*field), short(x[3].*field),
                        short(x[5].*field), short(x[7].*field));
}

// Σ u a of the 8 blocks at x and a group's codes (pair order), lane kPairLane[k] with block k's.
template <class Block>
inline __m256i pair_sums(const Block* x, const int8_t (*codes)[2][32]) {
  __m256i s[4];
  for (int p = 0; p < 4; ++p) {
    __m256i lo, hi;
    pair_codes(x + 2 * p, lo, hi);
    if constexpr (kSignedCodes<Block>)
      s[p] = _mm256_add_epi32(dot_s8(lo, load256(codes[p][0])), dot_s8(hi, load256(codes[p][1])));
    else s[p] = dot_pairs(lo, load256(codes[p][0]), hi, load256(codes[p][1]));
  }
  return _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
}

// acc + the products of the 8 blocks at x and group a.
template <class Block>
inline __m256 nibble_group(const Block* x, const NibbleGroup& a, __m256 acc) {
  const __m256i isum = _mm256_add_epi32(pair_sums(x, a.codes), load256(a.bias));
  const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(pair_halves(x, &Block::d)), _mm256_load_ps(a.d));
  return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
}

// Software prefetch of a pair of groups 2 KiB past x (simd/prefetch.h), a line more than their
// bytes for the line they straddle: the rows of a product are one sequential stream, but the
// hardware prefetchers alone left decode slower (bench_matmul; 2 KiB was the best of the distances
// tried, 1 to 8 KiB).
template <class Block>
inline void read_ahead_pair(const Block* x) {
  read_ahead<16 * sizeof(Block) + 64>(x);
}

// The driver of the kernels on groups of 8 blocks, whose activation rows are groups (lay_row):
// per W row and activation row the sum of step over the row's groups, two accumulators, the last
// nb % 8 blocks from a copy padded with zero blocks.
template <class Block, class Group, __m256 (*step)(const Block*, const Group&, __m256)>
void decode_groups(const DecodeArgs& a) {
  const int64_t nb = a.n_in / kQK, full = nb / 8, ng = (nb + 7) / 8;
  Block tail[8] = {};
  for (int j = 0; j < a.n_rows; ++j) {
    const Block* x = reinterpret_cast<const Block*>(a.w + size_t(j) * a.w_stride);
    if (full < ng) std::memcpy(tail, x + 8 * full, size_t(nb - 8 * full) * sizeof(Block));
    for (int i = 0; i < a.m; ++i) {
      const Group* g = reinterpret_cast<const Group*>(a.act + size_t(i) * a.act_stride);
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
      int64_t k = 0;
      for (; k + 1 < full; k += 2) {
        read_ahead_pair(x + 8 * k);
        acc0 = step(x + 8 * k, g[k], acc0);
        acc1 = step(x + 8 * (k + 1), g[k + 1], acc1);
      }
      if (k < full) acc0 = step(x + 8 * k, g[k], acc0);
      if (full < ng) acc1 = step(tail, g[full], acc1);
      a.y[size_t(i) * a.y_stride + size_t(j)] = hsum(_mm256_add_ps(acc0, acc1));
    }
  }
}

template <class Block, int c>
constexpr DecodeKernel decode_nibbles() {
  return Layout<BlockQ8_0, kQK, NibbleGroup, 8, nibble_groups<c>>::kernel(
      decode_groups<Block, NibbleGroup, nibble_group<Block>>);
}

// Q4_1 and Q5_1 (d q + m) against Q8_1 activations, as the nibble types: the codes q enter as they
// are (c = 0), and each block adds m_w s_a (Q8_1's s = d_a Σ a) as the twin does, the 8 mins
// widened in one vcvtph2ps and added by one more FMA per group.
struct alignas(32) AffineGroup {
  int8_t codes[4][2][32];  // as NibbleGroup's
  float d[8];              // in the lane order of the reduced sums (kPairLane)
  float s[8];
};

void affine_groups(const BlockQ8_1* y, int64_t nb, AffineGroup* g) {
  for (int64_t b = 0; b < (nb + 7) / 8 * 8; ++b) {
    AffineGroup& group = g[b / 8];
    const int k = int(b % 8), lane = kPairLane[k];
    pair_place(group.codes, k, b < nb ? y[b].qs : nullptr);
    group.d[lane] = b < nb ? f16(y[b].d) : 0.0f;
    group.s[lane] = b < nb ? f16(y[b].s) : 0.0f;
  }
}

template <class Block>
inline __m256 affine_group(const Block* x, const AffineGroup& a, __m256 acc) {
  const __m256i sums = pair_sums(x, a.codes);
  const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(pair_halves(x, &Block::d)), _mm256_load_ps(a.d));
  acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), acc);
  return _mm256_fmadd_ps(_mm256_cvtph_ps(pair_halves(x, &Block::m)), _mm256_load_ps(a.s), acc);
}

template <class Block>
constexpr DecodeKernel decode_affine() {
  return Layout<BlockQ8_1, kQK, AffineGroup, 8, affine_groups>::kernel(
      decode_groups<Block, AffineGroup, affine_group<Block>>);
}

// Q8_0 the same way, in block order: an activation group holds 8 blocks' codes as they are, their
// scales as f32 and -c Σ a. On VNNI the W codes enter vpdpbusd as q + 128 (the sign bit flipped,
// c = 128), so Σ (q + 128) a - 128 Σ a is the twin's exact Σ q a; on avx2, where vpmaddubsw could
// saturate on such bytes, each block is summed by the sign trick (c = 0). Two vphaddd levels and
// one exchange of halves reduce the 8 blocks to one sum per lane.
struct alignas(32) Q8Group {
  int8_t codes[8][32];
  float d[8];
  int32_t bias[8];  // -c Σ a
};

#if defined(__AVX512VNNI__)
constexpr int kQ8Offset = 128;
#else
constexpr int kQ8Offset = 0;
#endif

void q8_groups(const BlockQ8_0* y, int64_t nb, Q8Group* g) {
  for (int64_t b = 0; b < (nb + 7) / 8 * 8; ++b) {
    Q8Group& group = g[b / 8];
    const int k = int(b % 8);
    int32_t sum = 0;
    if (b < nb) {
      for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
      std::memcpy(group.codes[k], y[b].qs, kQK);
    } else {
      std::memset(group.codes[k], 0, kQK);
    }
    group.d[k] = b < nb ? f16(y[b].d) : 0.0f;
    group.bias[k] = -kQ8Offset * sum;
  }
}

inline __m256 q8_group(const BlockQ8_0* x, const Q8Group& a, __m256 acc) {
  __m256i s[8];
  for (int k = 0; k < 8; ++k) {
#if defined(__AVX512VNNI__)
    s[k] = _mm256_dpbusd_epi32(_mm256_setzero_si256(),
                               _mm256_xor_si256(load256(x[k].qs), _mm256_set1_epi8(char(0x80))),
                               load256(a.codes[k]));
#else
    s[k] = dot_s8(load256(x[k].qs), load256(a.codes[k]));
#endif
  }
  const __m256i v0 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  const __m256i v1 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
  const __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(v0, v1, 0x20),
                                        _mm256_permute2x128_si256(v0, v1, 0x31));
  const __m256i isum = _mm256_add_epi32(sums, load256(a.bias));
  const __m128i dw = _mm_setr_epi16(short(x[0].d), short(x[1].d), short(x[2].d), short(x[3].d),
                                    short(x[4].d), short(x[5].d), short(x[6].d), short(x[7].d));
  const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(dw), _mm256_load_ps(a.d));
  return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
}

constexpr DecodeKernel decode_q8_0 = Layout<BlockQ8_0, kQK, Q8Group, 8, q8_groups>::kernel(
    decode_groups<BlockQ8_0, Q8Group, q8_group>);
constexpr DecodeKernel decode_iq4_nl = decode_nibbles<BlockIQ4_NL, kIq4nlOffset>();

}  // namespace
