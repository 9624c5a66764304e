// Tile kernels of every quantized format for AVX-512 with VNNI (kv/tiles.h layouts), templates
// over the format descriptor F of kv/blocks.h; scalar twins in kv/scalar.cc. The FP16
// scales and minimums become floats with vcvtph2ps (exact), 16 tokens at a time.
//   dot (q·k): lanes are the 16 tokens of a key tile; vpdpbusd adds 4 code x query products per
//              lane, so no horizontal sums. q8 codes are made unsigned with ^0x80 and the 128 Σq̃
//              it adds is taken off per group; narrower codes take one vpdpbusd per slot of a byte
//              (q4s's stored codes are q + 8: 8 Σq̃ is taken off the same way); q4n's codes become
//              their levels + 128 with one vpshufb per slot, then as q8. q3's stored codes
//              (q + 4) join a slot of the 2-bit plane with the bit of the high-bit plane.
//   acc (p·V): lanes are 16 dims (8, in ymm with AVX512-VL, for rows or groups of 8); p is folded
//              into the value scales as int16 weights (AccArgs) and vpdpwssd adds 2 tokens per
//              lane into int32, flushed to FP32 once per kAccChunk run. q4n's int16 codes become
//              their levels with vpermw; q3's take bit 2 from the high-bit plane.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/kv/tile_loops.h"

namespace kvrt::simd::avx512vnni {

namespace {

// The tags of this file's kernels (kv/tile_loops.h): 16 tokens per vector (dot), and W = 16 dims
// per column of zmm or, for rows and groups of 8, W = 8 dims per column of ymm (AVX512-VL) (acc).
template <int W>
struct Vnni : ColumnDims<W> {};

template <int W>
struct LaneVector;
template <>
struct LaneVector<16> {
  using I = __m512i;
};
template <>
struct LaneVector<8> {
  using I = __m256i;
};

// The value-column operations of W int32 lanes.
template <int W>
struct Lanes {
  using I = typename LaneVector<W>::I;
  static I zero() { return I{}; }
  // acc + the int16 pairs of v times the int16 pair at w, per lane
  static I dot_pairs(I acc, I v, const int16_t* w) {
    if constexpr (W == 16) return _mm512_dpwssd_epi32(acc, v, _mm512_set1_epi32(load32(w)));
    else return _mm256_dpwssd_epi32(acc, v, _mm256_set1_epi32(load32(w)));
  }
  // 2W int8 codes (W dims of two tokens, interleaved) as int16 lanes
  static I codes_i8(const uint8_t* p) {
    if constexpr (W == 16)
      return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    else return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // W bytes as int32 lanes
  static I bytes(const uint8_t* p) {
    if constexpr (W == 16)
      return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    else return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  // (x >> lo | x << hi) & mask
  static I pair_codes(I x, int lo, int hi, int mask) {
    if constexpr (W == 16)
      return _mm512_ternarylogic_epi32(_mm512_srli_epi32(x, lo), _mm512_slli_epi32(x, hi),
                                       _mm512_set1_epi32(mask), 0xa8);
    else
      return _mm256_ternarylogic_epi32(_mm256_srli_epi32(x, lo), _mm256_slli_epi32(x, hi),
                                       _mm256_set1_epi32(mask), 0xa8);
  }
  // q3's high bits of the token pair (s, s + 1) of each byte of x (int32 lanes): bit 2 of both
  // int16 lanes (x << 2 puts bit s at s + 2, which >> s takes to 2, and bit s + 1 at s + 3,
  // which << (15 - s) takes to 18)
  static I high_pair(I x, int s) {
    if constexpr (W == 16) return pair_codes(_mm512_slli_epi32(x, 2), s, 15 - s, 4 | 4 << 16);
    else return pair_codes(_mm256_slli_epi32(x, 2), s, 15 - s, 4 | 4 << 16);
  }
  static I or_(I a, I b) {
    if constexpr (W == 16) return _mm512_or_si512(a, b);
    else return _mm256_or_si256(a, b);
  }
  // the level of kv::kQ4NLevels each int16 lane of x (0..15) indexes
  static I levels16(I x) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kv::kQ4NLevels));
    if constexpr (W == 16)
      return _mm512_permutexvar_epi16(x, _mm512_cvtepi8_epi16(_mm256_broadcastsi128_si256(t)));
    else return _mm256_permutexvar_epi16(x, _mm256_cvtepi8_epi16(t));
  }
  // every int16 lane of x less `bias`
  static I sub16(I x, int bias) {
    if constexpr (W == 16)
      return _mm512_sub_epi16(x, _mm512_set1_epi16(static_cast<int16_t>(bias)));
    else return _mm256_sub_epi16(x, _mm256_set1_epi16(static_cast<int16_t>(bias)));
  }
  // o[0 .. W) = fma(a0 + a1, sw, o) (+ msum)
  static void flush(float* o, I a0, I a1, float sw, bool add_msum, float msum) {
    if constexpr (W == 16) {
      const __m512 r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a0, a1)),
                                       _mm512_set1_ps(sw), _mm512_loadu_ps(o));
      _mm512_storeu_ps(o, add_msum ? _mm512_add_ps(r, _mm512_set1_ps(msum)) : r);
    } else {
      const __m256 r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a0, a1)),
                                       _mm256_set1_ps(sw), _mm256_loadu_ps(o));
      _mm256_storeu_ps(o, add_msum ? _mm256_add_ps(r, _mm256_set1_ps(msum)) : r);
    }
  }
};

inline __m512i bcast32(const void* p) { return _mm512_set1_epi32(load32(p)); }

inline __mmask16 first_lanes(int n) {
  return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// The 16 FP16 scales (or minimums) at p as floats, lanes outside `m` zero.
inline __m512 load_scales(const uint8_t* p, __mmask16 m = 0xffff) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// Bit `from` of each byte of x moved to bit `to`, the other bits zero.
inline __m512i move_bit(__m512i x, int from, int to) {
  const __m512i y = from >= to ? _mm512_srli_epi16(x, from - to) : _mm512_slli_epi16(x, to - from);
  return _mm512_and_si512(y, _mm512_set1_epi8(static_cast<char>(1 << to)));
}

// Integer sums of group b of one key tile for NQ queries: acc[i] lane t = Σ code(t) * q̃_i.
// `high`: q3's high-bit plane (kv/tiles.h), 32 dims a run.
template <int NQ, class F>
inline void group_sums(const uint8_t* codes, const uint8_t* high, const int8_t* const* qc, int b,
                       int group, __m512i* acc) {
  constexpr int dims = kv::kKeyLaneDims * F::kPerByte;  // dims per run
  for (int i = 0; i < NQ; ++i) acc[i] = _mm512_setzero_si512();
  for (int j = b * group / dims; j < (b + 1) * group / dims; ++j) {
    const __m512i v = _mm512_loadu_si512(codes + j * kRun);
    if constexpr (F::kBits == 8) {
      const __m512i u = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
      for (int i = 0; i < NQ; ++i)
        acc[i] = _mm512_dpbusd_epi32(acc[i], u, bcast32(qc[i] + dims * j));
    } else if constexpr (F::kHighPlane) {  // dim 16 j + 4 s + e: high bit 4 (j % 2) + s
      const __m512i h = _mm512_loadu_si512(high + j / 2 * kRun);
      const __m512i mask = _mm512_set1_epi8(F::kLowMask);
      for (int s = 0; s < F::kPerByte; ++s) {
        const __m512i c =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, s * F::kLowBits), mask),
                            move_bit(h, 4 * (j % 2) + s, F::kLowBits));
        for (int i = 0; i < NQ; ++i)
          acc[i] = _mm512_dpbusd_epi32(acc[i], c, bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s));
      }
    } else if constexpr (F::kCodebook) {
      const __m512i table = _mm512_broadcast_i32x4(
          _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kv::kQ4NLevels)),
                        _mm_set1_epi8(static_cast<char>(0x80))));  // levels + 128
      const __m512i mask = _mm512_set1_epi8(F::kCodeMask);
      for (int s = 0; s < F::kPerByte; ++s) {
        const __m512i u =
            _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, s * F::kBits), mask));
        for (int i = 0; i < NQ; ++i)
          acc[i] = _mm512_dpbusd_epi32(acc[i], u, bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s));
      }
    } else {
      const __m512i mask = _mm512_set1_epi8(F::kCodeMask);
      for (int s = 0; s < F::kPerByte; ++s) {
        const __m512i c = _mm512_and_si512(_mm512_srli_epi16(v, s * F::kBits), mask);
        for (int i = 0; i < NQ; ++i)
          acc[i] = _mm512_dpbusd_epi32(acc[i], c, bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s));
      }
    }
  }
}

template <int NQ, class F>
void dot_nq(Vnni<16>, const DotArgs& a, int i0) {
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kKey, a.n, a.group);
  constexpr size_t ss = kv::kScaleStride;
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const QueryRows<NQ> qc(a, i0);
  for_key_tiles(a, [&](const uint8_t* tile, int t0) {
    __m512 s[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_setzero_ps();
    for (int b = 0; b < ng; ++b) {
      __m512i acc[NQ];
      group_sums<NQ, F>(tile + f.header_bytes(), tile + f.header_bytes() + f.high_offset(), qc.c, b,
                        a.group, acc);
      const __m512 d = load_scales(tile + b * ss);
      for (int i = 0; i < NQ; ++i) {
        const int g = (i0 + i) * ng + b;
        constexpr int bias = F::kBits == 8 || F::kCodebook
                                 ? 128
                                 : F::kCodeBias;  // added to each code to make it unsigned
        const __m512i sum =
            bias != 0 ? _mm512_sub_epi32(acc[i], _mm512_set1_epi32(bias * q.csum[g])) : acc[i];
        s[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(q.d[g])),
                               s[i]);
        if constexpr (!F::kSymmetric)
          s[i] = _mm512_fmadd_ps(load_scales(tile + (ng + b) * ss), _mm512_set1_ps(q.sum[g]), s[i]);
      }
    }
    const __mmask16 m = first_lanes(a.n_rows - t0);
    for (int i = 0; i < NQ; ++i)
      _mm512_mask_storeu_ps(a.scores + (i0 + i) * a.scores_stride + t0, m, s[i]);
  });
}

// Adds the value codes of W dims (column col) of tile k_tile of the run to acc, a pair of tokens
// at a time (vpdpwssd of 2 tokens' codes as int16 lanes with their 2 weights), alternating two
// accumulators.
template <int W, int NQ, class F>
inline void acc_tile(const uint8_t* codes, const uint8_t* high, int n, int col,
                     const RunWeights<NQ, W>& r, int b, int k_tile,
                     typename Lanes<W>::I (*acc)[NQ]) {
  using L = Lanes<W>;
  if constexpr (F::kBits == 8) {
    for (int pair = 0; pair < kT / 2; ++pair) {
      const auto v = L::codes_i8(codes + pair * 2 * n + col * 2 * W);
      for (int i = 0; i < NQ; ++i)
        acc[pair & 1][i] = L::dot_pairs(acc[pair & 1][i], v, r.tile(i, b, k_tile) + 2 * pair);
    }
  } else {  // byte u of dim i holds tokens k u + s in slot s (kv/tiles.h); q3's high bits of
            // tokens 8 u' + s in bit s of byte u' of dim i
    constexpr int k = F::kPerByte, bits = F::kLowBits;
    for (int u = 0; u < kT / k; ++u) {
      const auto x = L::bytes(codes + u * n + col * W);
      for (int p = 0; p < k / 2; ++p) {
        const int pair = k / 2 * u + p;
        // (x >> 2p bits | x << (16 - (2p + 1) bits)) & mask: the pair's two codes as int16 lanes
        auto v = L::pair_codes(x, 2 * p * bits, 16 - (2 * p + 1) * bits,
                               F::kLowMask | F::kLowMask << 16);
        if constexpr (F::kHighPlane)
          v = L::or_(v, L::high_pair(L::bytes(high + k * u / 8 * n + col * W), k * u % 8 + 2 * p));
        if constexpr (F::kCodebook) v = L::levels16(v);
        if constexpr (F::kCodeBias != 0) v = L::sub16(v, F::kCodeBias);
        for (int i = 0; i < NQ; ++i)
          acc[pair & 1][i] = L::dot_pairs(acc[pair & 1][i], v, r.tile(i, b, k_tile) + 2 * pair);
      }
    }
  }
}

// Weights of one kAccChunk run (as scalar::acc_tiles_run): w[i][b][t] = round(p d / sw). The run's
// p and, per group, its scales (and minimums) are loaded and converted once, not once per query.
template <int NQ, class F, int W>
void run_weights(Vnni<W>, const AccArgs& a, int i0, int t0, int t1, const TileRun& run,
                 RunWeights<NQ, W>& r) {
  constexpr size_t ss = kv::kScaleStride;
  constexpr int kTiles = kAccChunk / kT;
  const int ng = a.n / a.group;
  __mmask16 lanes[kTiles];
  for (int k = 0; k < run.n_tiles; ++k) lanes[k] = first_lanes(t1 - t0 - k * kT);
  __m512 p[NQ][kTiles];
  float pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    __m512 mx = _mm512_setzero_ps();
    for (int k = 0; k < run.n_tiles; ++k) {
      p[i][k] = _mm512_maskz_loadu_ps(lanes[k], a.p + (i0 + i) * a.p_stride + t0 + k * kT);
      mx = _mm512_max_ps(mx, _mm512_abs_ps(p[i][k]));
    }
    pmax[i] = _mm512_reduce_max_ps(mx);
  }
  for (int b = 0; b < ng; ++b) {
    __m512 d[kTiles], mins[kTiles];
    __m512 dmax = _mm512_setzero_ps();
    for (int k = 0; k < run.n_tiles; ++k) {
      const uint8_t* tile = run.tiles + k * a.row_stride;
      d[k] = load_scales(tile + b * ss, lanes[k]);
      if constexpr (!F::kSymmetric) mins[k] = load_scales(tile + (ng + b) * ss, lanes[k]);
      dmax = _mm512_max_ps(dmax, _mm512_abs_ps(d[k]));
    }
    const float dm = _mm512_reduce_max_ps(dmax);
    for (int i = 0; i < NQ; ++i) {
      const float range = pmax[i] * dm;
      r.sw[i][b] = range / 32767.0f;
      const __m512 inv = _mm512_set1_ps(range > 0 ? 32767.0f / range : 0.0f);
      __m512 ms = _mm512_setzero_ps();
      for (int k = 0; k < run.n_tiles; ++k) {
        const __m512 pw = _mm512_mul_ps(_mm512_mul_ps(p[i][k], d[k]), inv);
        _mm256_store_si256(reinterpret_cast<__m256i*>(&r.w[i][b][k * kT]),
                           _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(pw)));
        if constexpr (!F::kSymmetric) ms = _mm512_fmadd_ps(p[i][k], mins[k], ms);
      }
      r.msum[i][b] = F::kSymmetric ? 0.0f : _mm512_reduce_add_ps(ms);
    }
  }
}

// Column col (W dims) of a kAccChunk run: the int32 sums over its tiles, flushed as
// o += sum * sw (+ Σ p m for asymmetric formats).
template <int NQ, class F, int W>
void acc_column(Vnni<W>, const AccArgs& a, int i0, const TileRun& run, const RunWeights<NQ, W>& r,
                int col) {
  using L = Lanes<W>;
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kValue, a.n, a.group);
  const int b = col * W / a.group;
  typename L::I acc[2][NQ];
  for (int i = 0; i < NQ; ++i) acc[0][i] = acc[1][i] = L::zero();
  for (int k = 0; k < run.n_tiles; ++k) {
    const uint8_t* codes = run.tiles + k * a.row_stride + f.header_bytes();
    acc_tile<W, NQ, F>(codes, codes + f.high_offset(), a.n, col, r, b, k, acc);
  }
  for (int i = 0; i < NQ; ++i) {
    L::flush(a.acc + (i0 + i) * a.acc_stride + col * W, acc[0][i], acc[1][i], r.sw[i][b],
             !F::kSymmetric, r.msum[i][b]);
  }
}

// Columns of 16 dims inside one group where rows and groups allow, else of 8 (the value unit of
// every quantized format, kv/formats.h).
template <class F>
void acc_columns(const AccArgs& a) {
  if (a.n % 16 == 0 && a.group % 16 == 0) acc_tiles<Vnni<16>, F>(a);
  else acc_tiles<Vnni<8>, F>(a);
}

}  // namespace

void install(Kernels& t) {
  weights::install(t);  // weights/decode_vnni.cc
  for_each_format_slot(t, [](auto f, FormatKernels& k) {
    k.dot = dot_tiles<Vnni<16>, decltype(f)>;
    k.acc = acc_columns<decltype(f)>;
  });
}

}  // namespace kvrt::simd::avx512vnni
