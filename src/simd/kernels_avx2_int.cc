// q8 / q4 tile kernels for AVX2 (kv/tiles.h layouts), the same integer arithmetic as the scalar
// twins in kernels_scalar.cc (exact integer sums, then the same float steps per lane).
//   dot (q·k): lanes are 8 tokens of a key tile (two halves per tile). vpmaddubsw takes u8 x s8:
//              q8 uses |k| x sign(q, k) (|products| <= 128 * 127, a pair <= 32512, no int16
//              saturation), q4 nibbles x q (pairs <= 3810); vpmaddwd by ones sums 4 dims per lane.
//   acc (p·V): lanes are 8 dims; p folded into the value scales as int16 weights (AccArgs),
//              vpmaddwd adds 2 tokens per lane into int32, flushed to FP32 once per kAccChunk run.
//   dequantize_tile (prefill): 8 dims of a token per vector, bit-exact with kv::tile_load_row.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/query_groups.h"

namespace kvrt::simd::avx2::tiles {

namespace {

constexpr int kT = kv::kTileTokens;

inline __m256i bcast32(const void* p) {
  int32_t w;
  std::memcpy(&w, p, sizeof w);
  return _mm256_set1_epi32(w);
}

// Lanes [0, n) set (n clamped to 0..8).
inline __m256i first_lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }

inline __m256 load_first(const void* p, int n) {
  return _mm256_maskload_ps(static_cast<const float*>(p), first_lanes(n));
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

// Integer sums of group b over 8 tokens (32 code bytes per 4 dims, 64 apart) for NQ queries.
template <int NQ, bool Q4>
inline void group_sums(const uint8_t* codes, const int8_t* const* qc, int b, int group, __m256i* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_si256();
  if constexpr (Q4) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    for (int j = b * group / 8; j < (b + 1) * group / 8; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + j * 64));
      const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      for (int i = 0; i < NQ; ++i) {
        const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast32(qc[i] + 8 * j)), _mm256_maddubs_epi16(hi, bcast32(qc[i] + 8 * j + 4)));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
      }
    }
  } else {
    for (int j = b * group / 4; j < (b + 1) * group / 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + j * 64));
      const __m256i av = _mm256_abs_epi8(v);
      for (int i = 0; i < NQ; ++i) {
        const __m256i s16 = _mm256_maddubs_epi16(av, _mm256_sign_epi8(bcast32(qc[i] + 4 * j), v));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
      }
    }
  }
}

template <int NQ, bool Q4>
void dot_nq(const DotArgs& a, int i0) {
  const kv::TileFormat f{kv::TileRole::kKey, Q4, a.n, a.group};
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const int8_t* qc[NQ];
  for (int i = 0; i < NQ; ++i) qc[i] = q.c + (i0 + i) * a.n;
  for (int t0 = 0; t0 < a.n_rows; t0 += kT) {
    const uint8_t* tile = a.rows + (t0 / kT) * a.row_stride;
    _mm_prefetch(reinterpret_cast<const char*>(tile + 4 * a.row_stride), _MM_HINT_T0);
    for (int h = 0; h < 2 && t0 + 8 * h < a.n_rows; ++h) {
      __m256 s[NQ];
      for (int i = 0; i < NQ; ++i) s[i] = _mm256_setzero_ps();
      for (int b = 0; b < ng; ++b) {
        __m256i acc[NQ];
        group_sums<NQ, Q4>(tile + f.header_bytes() + 32 * h, qc, b, a.group, acc);
        const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(tile + b * 64 + 32 * h));
        for (int i = 0; i < NQ; ++i) {
          const int g = (i0 + i) * ng + b;
          s[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[i]), _mm256_mul_ps(d, _mm256_set1_ps(q.d[g])), s[i]);
          if constexpr (Q4) {
            const __m256 m = _mm256_loadu_ps(reinterpret_cast<const float*>(tile + (ng + b) * 64 + 32 * h));
            s[i] = _mm256_fmadd_ps(m, _mm256_set1_ps(q.sum[g]), s[i]);
          }
        }
      }
      const __m256i m = first_lanes(a.n_rows - t0 - 8 * h);
      for (int i = 0; i < NQ; ++i) _mm256_maskstore_ps(a.scores + (i0 + i) * a.scores_stride + t0 + 8 * h, m, s[i]);
    }
  }
}

template <bool Q4>
void dot_tiles(const DotArgs& a) {
  for_query_groups(a.n_q, [&](auto nq, int i0) { dot_nq<nq(), Q4>(a, i0); });
}

// Weights of one kAccChunk run (as scalar::acc_tiles_run): w[i][b][t] = round(p d / sw) as int16,
// zero past the run's tokens; sw[i][b] the weight scale, msum[i][b] = Σ p m (q4).
template <int NQ, bool Q4>
struct RunWeights {
  alignas(32) int16_t w[NQ][scalar::kMaxRow / 8][kAccChunk];
  float sw[NQ][scalar::kMaxRow / 8];
  float msum[NQ][scalar::kMaxRow / 8];
};

template <int NQ, bool Q4>
void run_weights(const AccArgs& a, int i0, int t0, int t1, RunWeights<NQ, Q4>& r) {
  const int ng = a.n / a.group, n_tiles = (t1 - t0 + kT - 1) / kT;
  const uint8_t* tiles = a.rows + (t0 / kT) * a.row_stride;
  float pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    __m256 m = _mm256_setzero_ps();
    for (int t = 0; t < t1 - t0; t += 8) m = _mm256_max_ps(m, abs_ps(load_first(a.p + (i0 + i) * a.p_stride + t0 + t, t1 - t0 - t)));
    pmax[i] = hmax(m);
  }
  for (int b = 0; b < ng; ++b) {
    __m256 dmax = _mm256_setzero_ps();
    for (int t = 0; t < t1 - t0; t += 8) dmax = _mm256_max_ps(dmax, abs_ps(load_first(tiles + t / kT * a.row_stride + b * 64 + t % kT * 4, t1 - t0 - t)));
    const float dm = hmax(dmax);
    for (int i = 0; i < NQ; ++i) {
      const float range = pmax[i] * dm;
      r.sw[i][b] = range / 32767.0f;
      const __m256 inv = _mm256_set1_ps(range > 0 ? 32767.0f / range : 0.0f);
      __m256 ms = _mm256_setzero_ps();
      for (int t = 0; t < n_tiles * kT; t += 8) {
        const uint8_t* tile = tiles + t / kT * a.row_stride;
        const __m256 p = load_first(a.p + (i0 + i) * a.p_stride + t0 + t, t1 - t0 - t);
        const __m256 pw = _mm256_mul_ps(_mm256_mul_ps(p, load_first(tile + b * 64 + t % kT * 4, t1 - t0 - t)), inv);
        const __m256i w32 = _mm256_cvtps_epi32(pw);
        _mm_store_si128(reinterpret_cast<__m128i*>(&r.w[i][b][t]), _mm_packs_epi32(_mm256_castsi256_si128(w32), _mm256_extracti128_si256(w32, 1)));
        if constexpr (Q4) ms = _mm256_fmadd_ps(p, load_first(tile + (ng + b) * 64 + t % kT * 4, t1 - t0 - t), ms);
      }
      r.msum[i][b] = Q4 ? hsum(ms) : 0.0f;
    }
  }
}

// One kAccChunk run of value tiles: per 8-dim column the int32 sums over tokens, then
// o = fma(sum, sw, o) (+ Σ p m for q4).
template <int NQ, bool Q4>
void acc_run(const AccArgs& a, int i0, int t0, int t1) {
  const kv::TileFormat f{kv::TileRole::kValue, Q4, a.n, a.group};
  const int n_tiles = (t1 - t0 + kT - 1) / kT;
  const uint8_t* tiles = a.rows + (t0 / kT) * a.row_stride;
  RunWeights<NQ, Q4> r;
  run_weights<NQ, Q4>(a, i0, t0, t1, r);
  for (int col = 0; col < a.n / 8; ++col) {
    const int b = col * 8 / a.group;
    __m256i acc[NQ];
    for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_si256();
    for (int k = 0; k < n_tiles; ++k) {
      const uint8_t* codes = tiles + k * a.row_stride + f.header_bytes();
      for (int pair = 0; pair < kT / 2; ++pair) {
        __m256i v;
        if constexpr (Q4) {
          const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + pair * a.n + col * 8)));
          v = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 12)), _mm256_set1_epi32(0x000f000f));
        } else {
          v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + pair * 2 * a.n + col * 16)));
        }
        for (int i = 0; i < NQ; ++i) acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(v, bcast32(&r.w[i][b][k * kT + 2 * pair])));
      }
    }
    for (int i = 0; i < NQ; ++i) {
      float* o = a.acc + (i0 + i) * a.acc_stride + col * 8;
      const __m256 res = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[i]), _mm256_set1_ps(r.sw[i][b]), _mm256_loadu_ps(o));
      _mm256_storeu_ps(o, Q4 ? _mm256_add_ps(res, _mm256_set1_ps(r.msum[i][b])) : res);
    }
  }
}

template <bool Q4>
void acc_tiles(const AccArgs& a) {
  for (int t0 = 0; t0 < a.n_rows; t0 += kAccChunk) {
    const int t1 = std::min(a.n_rows, t0 + kAccChunk);
    for_query_groups(a.n_q, [&](auto nq, int i0) { acc_run<nq(), Q4>(a, i0, t0, t1); });
  }
}

// Codes of 8 dims [8 col, 8 col + 8) of token t of a tile as int32 lanes.
template <kv::TileRole R, bool Q4>
inline __m256i token_codes(const uint8_t* codes, int n, int t, int col) {
  int32_t w0, w1;
  if constexpr (R == kv::TileRole::kKey && Q4) {  // dims 8 col + e in low nibbles, + 4 + e in high
    std::memcpy(&w0, codes + col * 64 + t * 4, sizeof w0);
    const __m256i x = _mm256_cvtepu8_epi32(_mm_set1_epi32(w0));
    return _mm256_and_si256(_mm256_srlv_epi32(x, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi32(15));
  } else if constexpr (R == kv::TileRole::kKey) {
    std::memcpy(&w0, codes + 2 * col * 64 + t * 4, sizeof w0);
    std::memcpy(&w1, codes + (2 * col + 1) * 64 + t * 4, sizeof w1);
    return _mm256_cvtepi8_epi32(_mm_setr_epi32(w0, w1, 0, 0));
  } else if constexpr (Q4) {  // token 2p in low nibbles, 2p + 1 in high
    const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + t / 2 * n + col * 8)));
    return _mm256_and_si256(_mm256_srli_epi32(x, 4 * (t % 2)), _mm256_set1_epi32(15));
  } else {  // dims interleaved with the other token of the pair
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + t / 2 * 2 * n + col * 16));
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    return _mm256_cvtepi8_epi32(_mm_shuffle_epi8(x, _mm_add_epi8(even, _mm_set1_epi8(static_cast<char>(t % 2)))));
  }
}

// The product is rounded on its own: GCC would fuse it with the next add (-ffp-contract=fast),
// while the scalar twin, built without -mfma, rounds twice.
inline __m256 rounded(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// x [16][n] = d * code (q8) or m + d * code (q4), as kv::tile_load_row (no fused multiply-add).
template <kv::TileRole R, bool Q4>
void dequantize_tile(const uint8_t* tile, int n, int group, float* x) {
  const kv::TileFormat f{R, Q4, n, group};
  const uint8_t* codes = tile + f.header_bytes();
  for (int t = 0; t < kT; ++t) {
    for (int col = 0; col < n / 8; ++col) {
      const int b = col * 8 / group;
      const __m256 c = _mm256_cvtepi32_ps(token_codes<R, Q4>(codes, n, t, col));
      __m256 v = _mm256_mul_ps(_mm256_set1_ps(kv::tile_scale(tile, b, t)), c);
      if constexpr (Q4) v = _mm256_add_ps(_mm256_set1_ps(kv::tile_min(f, tile, b, t)), rounded(v));
      _mm256_storeu_ps(x + t * n + col * 8, v);
    }
  }
}

}  // namespace

void acc(Codec codec, const AccArgs& a) { codec == Codec::kQ4 ? acc_tiles<true>(a) : acc_tiles<false>(a); }

void install(Kernels& t) {
  t.dot[static_cast<int>(Codec::kQ8)] = dot_tiles<false>;
  t.dot[static_cast<int>(Codec::kQ4)] = dot_tiles<true>;
  t.acc[static_cast<int>(Codec::kQ8)] = acc_tiles<false>;
  t.acc[static_cast<int>(Codec::kQ4)] = acc_tiles<true>;
  t.dequantize_tile[0][0] = dequantize_tile<kv::TileRole::kKey, false>;
  t.dequantize_tile[0][1] = dequantize_tile<kv::TileRole::kKey, true>;
  t.dequantize_tile[1][0] = dequantize_tile<kv::TileRole::kValue, false>;
  t.dequantize_tile[1][1] = dequantize_tile<kv::TileRole::kValue, true>;
}

}  // namespace kvrt::simd::avx2::tiles
