// Tile kernels of every quantized format for AVX2 (kv/tiles.h layouts), templates over the format
// descriptor F of kv/blocks.h, the same integer arithmetic as the scalar twins in kv/scalar.cc
// (exact integer sums, then the same float steps per lane).
//   dot (q·k): lanes are 8 tokens of a key tile (two halves per tile). vpmaddubsw takes u8 x s8:
//              q8 uses |k| x sign(q, k) (|products| <= 128 * 127, a pair <= 32512, no int16
//              saturation); narrower codes x q, summed over the k slots of a byte (q4: pairs
//              <= 3810, twice); vpmaddwd by ones sums 4 dims per lane. q4s's stored codes are
//              q + 8 (unsigned, as vpmaddubsw needs): 8 Σq̃ is taken off per group. q4n's codes
//              become their levels with vpshufb, then as q8, one slot at a time. q3's stored
//              codes (q + 4, pairs <= 1792, four times) join a slot of the 2-bit plane with the
//              bit of the high-bit plane.
//   acc (p·V): lanes are 8 dims; p folded into the value scales as int16 weights (AccArgs),
//              vpmaddwd adds 2 tokens per lane into int32, flushed to FP32 once per kAccChunk run.
//   dequantize_tile (prefill): 8 dims of a token per vector, bit-exact with kv::tile_load_row.
// The FP16 scales and minimums become floats with F16C's vcvtph2ps (exact), 8 tokens at a time.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/kv/tile_loops.h"

namespace kvrt::simd::avx2::tiles {

namespace {

struct Avx2 : ColumnDims<kAccColumnDims> {
};  // this file's tag (kv/tile_loops.h): 8 tokens (dot) or 8 dims (acc) per vector

inline __m256i bcast32(const void* p) { return _mm256_set1_epi32(load32(p)); }

// kv::kQ4NLevels in both 128-bit halves, for vpshufb.
inline __m256i level_table() {
  return _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kv::kQ4NLevels)));
}

// The levels that the int16 lanes of x (0..15) index: vpshufb on the low bytes, sign-extended.
inline __m256i levels16(__m256i x) {
  return _mm256_srai_epi16(_mm256_slli_epi16(_mm256_shuffle_epi8(level_table(), x), 8), 8);
}

// The levels that the int32 lanes of x (0..15) index: vpermd on each half of the table.
inline __m256i levels32(__m256i x) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kv::kQ4NLevels));
  const __m256i lo = _mm256_permutevar8x32_epi32(_mm256_cvtepi8_epi32(t), x),
                hi = _mm256_permutevar8x32_epi32(_mm256_cvtepi8_epi32(_mm_srli_si128(t, 8)), x);
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi),
                                              _mm256_castsi256_ps(_mm256_slli_epi32(x, 28))));
}

// Lanes [0, n) set (n clamped to 0..8).
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256 load_first(const void* p, int n) {
  return _mm256_maskload_ps(static_cast<const float*>(p), first_lanes(n));
}

// The 8 FP16 scales (or minimums) at p as floats (F16C vcvtph2ps, exact), lanes [n, 8) zero.
inline __m256 load_scales(const uint8_t* p, int n = 8) {
  return _mm256_and_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                       _mm256_castsi256_ps(first_lanes(n)));
}

inline __m256 abs_ps(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }

inline float hmax(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

inline float hsum(__m256 x) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_add_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// Bit `from` of each byte of x moved to bit `to`, the other bits zero.
inline __m256i move_bit(__m256i x, int from, int to) {
  const __m256i y = from >= to ? _mm256_srli_epi16(x, from - to) : _mm256_slli_epi16(x, to - from);
  return _mm256_and_si256(y, _mm256_set1_epi8(static_cast<char>(1 << to)));
}

// Integer sums of group b over 8 tokens (32 code bytes per run of 4k dims) for NQ queries.
// `high`: q3's high-bit plane (kv/tiles.h), 32 dims a run.
template <int NQ, class F>
inline void group_sums(const uint8_t* codes, const uint8_t* high, const int8_t* const* qc, int b,
                       int group, __m256i* acc) {
  constexpr int dims = kv::kKeyLaneDims * F::kPerByte;  // dims per run
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_si256();
  for (int j = b * group / dims; j < (b + 1) * group / dims; ++j) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + j * kRun));
    if constexpr (F::kBits == 8) {
      const __m256i av = _mm256_abs_epi8(v);
      for (int i = 0; i < NQ; ++i) {
        const __m256i s16 =
            _mm256_maddubs_epi16(av, _mm256_sign_epi8(bcast32(qc[i] + dims * j), v));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
      }
    } else if constexpr (F::kCodebook) {  // as q8, a slot at a time (two slots could saturate)
      const __m256i mask = _mm256_set1_epi8(F::kCodeMask), table = level_table();
      for (int s = 0; s < F::kPerByte; ++s) {
        const __m256i lv =
            _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, s * F::kBits), mask));
        const __m256i av = _mm256_abs_epi8(lv);
        for (int i = 0; i < NQ; ++i) {
          const __m256i s16 = _mm256_maddubs_epi16(
              av, _mm256_sign_epi8(bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s), lv));
          acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
        }
      }
    } else {  // q3: dim 16 j + 4 s + e takes high bit 4 (j % 2) + s
      const __m256i mask = _mm256_set1_epi8(F::kLowMask);
      __m256i c[F::kPerByte];
      for (int s = 0; s < F::kPerByte; ++s)
        c[s] = _mm256_and_si256(_mm256_srli_epi16(v, s * F::kLowBits), mask);
      if constexpr (F::kHighPlane) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high + j / 2 * kRun));
        for (int s = 0; s < F::kPerByte; ++s)
          c[s] = _mm256_or_si256(c[s], move_bit(h, 4 * (j % 2) + s, F::kLowBits));
      }
      for (int i = 0; i < NQ; ++i) {
        __m256i s16 = _mm256_maddubs_epi16(c[0], bcast32(qc[i] + dims * j));
        for (int s = 1; s < F::kPerByte; ++s)
          s16 = _mm256_add_epi16(
              s16, _mm256_maddubs_epi16(c[s], bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s)));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
      }
    }
  }
}

template <int NQ, class F>
void dot_nq(Avx2, const DotArgs& a, int i0) {
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kKey, a.n, a.group);
  constexpr size_t ss = kv::kScaleStride;
  constexpr size_t half_codes = 8 * kv::kKeyLaneDims,
                   half_scales = 8 * sizeof(kv::Scale);  // tokens 8..15
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const QueryRows<NQ> qc(a, i0);
  for_key_tiles(a, [&](const uint8_t* tile, int t0) {
    for (int h = 0; h < 2 && t0 + 8 * h < a.n_rows; ++h) {
      __m256 s[NQ];
      for (int i = 0; i < NQ; ++i) s[i] = _mm256_setzero_ps();
      for (int b = 0; b < ng; ++b) {
        __m256i acc[NQ];
        const uint8_t* codes = tile + f.header_bytes() + half_codes * h;
        group_sums<NQ, F>(codes, codes + f.high_offset(), qc.c, b, a.group, acc);
        const __m256 d = load_scales(tile + b * ss + half_scales * h);
        for (int i = 0; i < NQ; ++i) {
          const int g = (i0 + i) * ng + b;
          const __m256i sum =
              F::kCodeBias != 0
                  ? _mm256_sub_epi32(acc[i], _mm256_set1_epi32(F::kCodeBias * q.csum[g]))
                  : acc[i];
          s[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, _mm256_set1_ps(q.d[g])),
                                 s[i]);
          if constexpr (!F::kSymmetric) {
            const __m256 m = load_scales(tile + (ng + b) * ss + half_scales * h);
            s[i] = _mm256_fmadd_ps(m, _mm256_set1_ps(q.sum[g]), s[i]);
          }
        }
      }
      const __m256i m = first_lanes(a.n_rows - t0 - 8 * h);
      for (int i = 0; i < NQ; ++i)
        _mm256_maskstore_ps(a.scores + (i0 + i) * a.scores_stride + t0 + 8 * h, m, s[i]);
    }
  });
}

// Weights of one kAccChunk run (as scalar::acc_tiles_run): w[i][b][t] = round(p d / sw). The run's
// p and, per group, its scales (and minimums) are loaded and converted once, not once per query.
template <int NQ, class F>
void run_weights(Avx2, const AccArgs& a, int i0, int t0, int t1, const TileRun& run,
                 RunWeights<NQ, Avx2::kColumnDims>& r) {
  constexpr size_t ss = kv::kScaleStride;
  constexpr int kVecs = kAccChunk / 8;  // 8 tokens per vector
  const int ng = a.n / a.group, nv = run.n_tiles * kT / 8;
  __m256 p[NQ][kVecs];
  float pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    __m256 mx = _mm256_setzero_ps();
    for (int v = 0; v < nv; ++v) {
      p[i][v] = load_first(a.p + (i0 + i) * a.p_stride + t0 + 8 * v, t1 - t0 - 8 * v);
      mx = _mm256_max_ps(mx, abs_ps(p[i][v]));
    }
    pmax[i] = hmax(mx);
  }
  for (int b = 0; b < ng; ++b) {
    __m256 d[kVecs], mins[kVecs];
    __m256 dmax = _mm256_setzero_ps();
    for (int v = 0; v < nv; ++v) {
      const uint8_t* scales =
          run.tiles + 8 * v / kT * a.row_stride + 8 * v % kT * sizeof(kv::Scale);
      d[v] = load_scales(scales + b * ss, t1 - t0 - 8 * v);
      if constexpr (!F::kSymmetric) mins[v] = load_scales(scales + (ng + b) * ss, t1 - t0 - 8 * v);
      dmax = _mm256_max_ps(dmax, abs_ps(d[v]));
    }
    const float dm = hmax(dmax);
    for (int i = 0; i < NQ; ++i) {
      const float range = pmax[i] * dm;
      r.sw[i][b] = range / 32767.0f;
      const __m256 inv = _mm256_set1_ps(range > 0 ? 32767.0f / range : 0.0f);
      __m256 ms = _mm256_setzero_ps();
      for (int v = 0; v < nv; ++v) {
        const __m256i w32 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_mul_ps(p[i][v], d[v]), inv));
        _mm_store_si128(
            reinterpret_cast<__m128i*>(&r.w[i][b][8 * v]),
            _mm_packs_epi32(_mm256_castsi256_si128(w32), _mm256_extracti128_si256(w32, 1)));
        if constexpr (!F::kSymmetric) ms = _mm256_fmadd_ps(p[i][v], mins[v], ms);
      }
      r.msum[i][b] = F::kSymmetric ? 0.0f : hsum(ms);
    }
  }
}

// Adds the value codes of 8 dims (column col) of one tile to acc, a pair of tokens at a time:
// vpmaddwd of the codes of 2 tokens (int16 lanes) with their 2 weights.
// q3's high bits of the token pair (s, s + 1) of each byte of x (int32 lanes): bit 2 of both int16
// lanes (x << 2 puts bit s at s + 2, which >> s takes to 2, and bit s + 1 at s + 3, which
// << (15 - s) takes to 18).
inline __m256i high_pair(__m256i x, int s) {
  const __m256i y = _mm256_slli_epi32(x, 2);
  return _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(y, s), _mm256_slli_epi32(y, 15 - s)),
                          _mm256_set1_epi32(4 | 4 << 16));
}

template <int NQ, class F>
inline void acc_tile(const uint8_t* codes, const uint8_t* high, int n, int col,
                     const RunWeights<NQ, Avx2::kColumnDims>& r, int b, int k_tile, __m256i* acc) {
  if constexpr (F::kBits == 8) {  // dims interleaved with the other token of the pair
    for (int pair = 0; pair < kT / 2; ++pair) {
      const __m256i v = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + pair * 2 * n + col * 16)));
      for (int i = 0; i < NQ; ++i)
        acc[i] = _mm256_add_epi32(acc[i],
                                  _mm256_madd_epi16(v, bcast32(r.tile(i, b, k_tile) + 2 * pair)));
    }
  } else {  // byte u of dim i holds tokens k u + s in slot s: token pairs (2p, 2p + 1) of the byte
            // to int16; q3's high bits of tokens 8 u' + s in bit s of byte u' of dim i
    constexpr int k = F::kPerByte, bits = F::kLowBits;
    const __m256i mask = _mm256_set1_epi32(F::kLowMask | F::kLowMask << 16);
    for (int u = 0; u < kT / k; ++u) {
      const __m256i x = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + u * n + col * 8)));
      for (int p = 0; p < k / 2; ++p) {
        __m256i v = _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(x, 2 * p * bits),
                                                     _mm256_slli_epi32(x, 16 - (2 * p + 1) * bits)),
                                     mask);
        if constexpr (F::kHighPlane) {
          const __m256i hx = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(high + k * u / 8 * n + col * 8)));
          v = _mm256_or_si256(v, high_pair(hx, k * u % 8 + 2 * p));
        }
        if constexpr (F::kCodebook) v = levels16(v);
        if constexpr (F::kCodeBias != 0) v = _mm256_sub_epi16(v, _mm256_set1_epi16(F::kCodeBias));
        for (int i = 0; i < NQ; ++i)
          acc[i] = _mm256_add_epi32(
              acc[i], _mm256_madd_epi16(v, bcast32(r.tile(i, b, k_tile) + k * u + 2 * p)));
      }
    }
  }
}

// Column col (8 dims) of a kAccChunk run: the int32 sums over its tiles, then
// o = fma(sum, sw, o) (+ Σ p m for asymmetric formats).
template <int NQ, class F>
void acc_column(Avx2, const AccArgs& a, int i0, const TileRun& run,
                const RunWeights<NQ, Avx2::kColumnDims>& r, int col) {
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kValue, a.n, a.group);
  const int b = col * 8 / a.group;
  __m256i acc[NQ];
  for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_si256();
  for (int k = 0; k < run.n_tiles; ++k) {
    const uint8_t* codes = run.tiles + k * a.row_stride + f.header_bytes();
    acc_tile<NQ, F>(codes, codes + f.high_offset(), a.n, col, r, b, k, acc);
  }
  for (int i = 0; i < NQ; ++i) {
    float* o = a.acc + (i0 + i) * a.acc_stride + col * 8;
    const __m256 res =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[i]), _mm256_set1_ps(r.sw[i][b]), _mm256_loadu_ps(o));
    _mm256_storeu_ps(o, F::kSymmetric ? res : _mm256_add_ps(res, _mm256_set1_ps(r.msum[i][b])));
  }
}

// Codes of 8 dims [8 col, 8 col + 8) of token t in a plane of Bits-bit codes (kv/tiles.h) as
// int32 lanes.
template <kv::TileRole R, int Bits>
inline __m256i plane_codes(const uint8_t* codes, int n, int t, int col) {
  constexpr int k = 8 / Bits, bits = Bits, mask = (1 << Bits) - 1;
  int32_t w0, w1;
  if constexpr (R == kv::TileRole::kKey && k == 1) {
    std::memcpy(&w0, codes + 2 * col * kRun + t * 4, sizeof w0);
    std::memcpy(&w1, codes + (2 * col + 1) * kRun + t * 4, sizeof w1);
    return _mm256_cvtepi8_epi32(_mm_setr_epi32(w0, w1, 0, 0));
  } else if constexpr (R == kv::TileRole::kKey) {  // dim 8 col + e in slot (8 col + e) % 4k / 4 of
                                                   // run 8 col / 4k
    constexpr int dims = kv::kKeyLaneDims * k;
    std::memcpy(&w0, codes + 8 * col / dims * kRun + t * 4, sizeof w0);
    const int s0 = 8 * col % dims / 4 * bits;
    const __m256i x = _mm256_cvtepu8_epi32(_mm_set1_epi32(w0));
    return _mm256_and_si256(
        _mm256_srlv_epi32(
            x, _mm256_setr_epi32(s0, s0, s0, s0, s0 + bits, s0 + bits, s0 + bits, s0 + bits)),
        _mm256_set1_epi32(mask));
  } else if constexpr (k > 1) {  // token k u + s in slot s of the bytes of row u
    const __m256i x = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + t / k * n + col * 8)));
    return _mm256_and_si256(_mm256_srli_epi32(x, bits * (t % k)), _mm256_set1_epi32(mask));
  } else {  // dims interleaved with the other token of the pair
    const __m128i x =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + t / 2 * 2 * n + col * 16));
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    return _mm256_cvtepi8_epi32(
        _mm_shuffle_epi8(x, _mm_add_epi8(even, _mm_set1_epi8(static_cast<char>(t % 2)))));
  }
}

// Stored codes of 8 dims [8 col, 8 col + 8) of token t of a tile as int32 lanes (q3: the 2-bit
// plane's, bit 2 from the high-bit plane).
template <kv::TileRole R, class F>
inline __m256i token_codes(const kv::TileFormat& f, const uint8_t* codes, int t, int col) {
  const __m256i low = plane_codes<R, F::kLowBits>(codes, f.n, t, col);
  if constexpr (!F::kHighPlane) return low;
  return _mm256_or_si256(
      low, _mm256_slli_epi32(plane_codes<R, 1>(codes + f.high_offset(), f.n, t, col), 2));
}

// The product is rounded on its own: GCC would fuse it with the next add (-ffp-contract=fast),
// while the scalar twin, built without -mfma, rounds twice.
inline __m256 rounded(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// Token t, dims [8 col, 8 col + 8) of a tile: d * code (symmetric) or m + d * code, as
// kv::tile_load_row (no fused multiply-add).
template <class F, kv::TileRole R>
void dequantize_column(Avx2, const kv::TileFormat& f, const uint8_t* tile, int t, int col,
                       float* x) {
  const int b = col * 8 / f.group;
  const __m256i stored = token_codes<R, F>(f, tile + f.header_bytes(), t, col);
  const __m256 c = _mm256_cvtepi32_ps(
      F::kCodebook ? levels32(stored) : _mm256_sub_epi32(stored, _mm256_set1_epi32(F::kCodeBias)));
  __m256 v = _mm256_mul_ps(_mm256_set1_ps(kv::tile_scale(f, tile, b, t)), c);
  if constexpr (!F::kSymmetric)
    v = _mm256_add_ps(_mm256_set1_ps(kv::tile_min(f, tile, b, t)), rounded(v));
  _mm256_storeu_ps(x, v);
}

}  // namespace

void install(Kernels& t) { install_tiles<Avx2>(t); }

}  // namespace kvrt::simd::avx2::tiles
