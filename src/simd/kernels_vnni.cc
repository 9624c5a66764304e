// q8 / q4 tile kernels for AVX-512 with VNNI (kv/tiles.h layouts); scalar twins in kernels_scalar.cc.
//   dot (q·k): lanes are the 16 tokens of a key tile; vpdpbusd adds 4 code x query products per
//              lane, so no horizontal sums. q8 codes are made unsigned with ^0x80 and the 128 Σq̃
//              it adds is taken off per group.
//   acc (p·V): lanes are 16 dims; p is folded into the value scales as int16 weights (AccArgs) and
//              vpdpwssd adds 2 tokens per lane into int32, flushed to FP32 once per kAccChunk run.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/query_groups.h"

namespace kvrt::simd::avx512vnni {

namespace {

constexpr int kT = kv::kTileTokens;

inline __m512i bcast32(const void* p) {
  int32_t w;
  std::memcpy(&w, p, sizeof w);
  return _mm512_set1_epi32(w);
}

inline __mmask16 first_lanes(int n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// Integer sums of group b of one key tile for NQ queries: acc[i] lane t = Σ code(t) * q̃_i.
template <int NQ, bool Q4>
inline void group_sums(const uint8_t* codes, const int8_t* const* qc, int b, int group, __m512i* acc) {
  for (int i = 0; i < NQ; ++i) acc[i] = _mm512_setzero_si512();
  if constexpr (Q4) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    for (int j = b * group / 8; j < (b + 1) * group / 8; ++j) {
      const __m512i v = _mm512_loadu_si512(codes + j * 64);
      const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      for (int i = 0; i < NQ; ++i) {
        acc[i] = _mm512_dpbusd_epi32(acc[i], lo, bcast32(qc[i] + 8 * j));
        acc[i] = _mm512_dpbusd_epi32(acc[i], hi, bcast32(qc[i] + 8 * j + 4));
      }
    }
  } else {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int j = b * group / 4; j < (b + 1) * group / 4; ++j) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(codes + j * 64), bias);
      for (int i = 0; i < NQ; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], v, bcast32(qc[i] + 4 * j));
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
    __m512 s[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_setzero_ps();
    for (int b = 0; b < ng; ++b) {
      __m512i acc[NQ];
      group_sums<NQ, Q4>(tile + f.header_bytes(), qc, b, a.group, acc);
      const __m512 d = _mm512_loadu_ps(tile + b * 64);
      for (int i = 0; i < NQ; ++i) {
        const int g = (i0 + i) * ng + b;
        const __m512i sum = Q4 ? acc[i] : _mm512_sub_epi32(acc[i], _mm512_set1_epi32(128 * q.csum[g]));
        s[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(q.d[g])), s[i]);
        if constexpr (Q4) s[i] = _mm512_fmadd_ps(_mm512_loadu_ps(tile + (ng + b) * 64), _mm512_set1_ps(q.sum[g]), s[i]);
      }
    }
    const __mmask16 m = first_lanes(a.n_rows - t0);
    for (int i = 0; i < NQ; ++i) _mm512_mask_storeu_ps(a.scores + (i0 + i) * a.scores_stride + t0, m, s[i]);
  }
}

template <bool Q4>
void dot_tiles(const DotArgs& a) {
  for_query_groups(a.n_q, [&](auto nq, int i0) { dot_nq<nq(), Q4>(a, i0); });
}

// One kAccChunk run of value tiles: int16 weights w[i][b][t] = round(p * d / sw), then per
// 16-dim column the int32 sums over tokens, flushed as o += sum * sw (+ Σ p m for q4).
template <int NQ, bool Q4>
void acc_run(const AccArgs& a, int i0, int t0, int t1) {
  const kv::TileFormat f{kv::TileRole::kValue, Q4, a.n, a.group};
  const int ng = f.n_groups(), n_tiles = (t1 - t0 + kT - 1) / kT;
  const uint8_t* tiles = a.rows + (t0 / kT) * a.row_stride;
  alignas(64) int16_t w[NQ][scalar::kMaxRow / 16][kAccChunk];
  float sw[NQ][scalar::kMaxRow / 16], msum[NQ][scalar::kMaxRow / 16];
  __m512 pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    pmax[i] = _mm512_setzero_ps();
    for (int k = 0; k < n_tiles; ++k) {
      const __m512 p = _mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), a.p + (i0 + i) * a.p_stride + t0 + k * kT);
      pmax[i] = _mm512_max_ps(pmax[i], _mm512_abs_ps(p));
    }
  }
  for (int b = 0; b < ng; ++b) {
    __m512 dmax = _mm512_setzero_ps();
    for (int k = 0; k < n_tiles; ++k) {
      dmax = _mm512_max_ps(dmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), tiles + k * a.row_stride + b * 64)));
    }
    const float dm = _mm512_reduce_max_ps(dmax);
    for (int i = 0; i < NQ; ++i) {
      const float range = _mm512_reduce_max_ps(pmax[i]) * dm;
      sw[i][b] = range / 32767.0f;
      const __m512 inv = _mm512_set1_ps(range > 0 ? 32767.0f / range : 0.0f);
      __m512 ms = _mm512_setzero_ps();
      for (int k = 0; k < n_tiles; ++k) {
        const uint8_t* tile = tiles + k * a.row_stride;
        const __m512 p = _mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), a.p + (i0 + i) * a.p_stride + t0 + k * kT);
        const __m512 pw = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_loadu_ps(tile + b * 64)), inv);
        _mm256_store_si256(reinterpret_cast<__m256i*>(&w[i][b][k * kT]), _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(pw)));
        if constexpr (Q4) ms = _mm512_fmadd_ps(p, _mm512_loadu_ps(tile + (ng + b) * 64), ms);
      }
      msum[i][b] = Q4 ? _mm512_reduce_add_ps(ms) : 0.0f;
    }
  }
  for (int col = 0; col < a.n / 16; ++col) {
    const int b = col * 16 / a.group;
    __m512i acc[2][NQ];
    for (int i = 0; i < NQ; ++i) acc[0][i] = acc[1][i] = _mm512_setzero_si512();
    for (int k = 0; k < n_tiles; ++k) {
      const uint8_t* codes = tiles + k * a.row_stride + f.header_bytes();
      for (int pair = 0; pair < kT / 2; ++pair) {
        __m512i v;
        if constexpr (Q4) {
          const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + pair * a.n + col * 16)));
          v = _mm512_ternarylogic_epi32(x, _mm512_slli_epi32(x, 12), _mm512_set1_epi32(0x000f000f), 0xa8);  // (x | x << 12) & mask
        } else {
          v = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + pair * 2 * a.n + col * 32)));
        }
        for (int i = 0; i < NQ; ++i) acc[pair & 1][i] = _mm512_dpwssd_epi32(acc[pair & 1][i], v, bcast32(&w[i][b][k * kT + 2 * pair]));
      }
    }
    for (int i = 0; i < NQ; ++i) {
      float* o = a.acc + (i0 + i) * a.acc_stride + col * 16;
      const __m512 sum = _mm512_cvtepi32_ps(_mm512_add_epi32(acc[0][i], acc[1][i]));
      const __m512 r = _mm512_fmadd_ps(sum, _mm512_set1_ps(sw[i][b]), _mm512_loadu_ps(o));
      _mm512_storeu_ps(o, Q4 ? _mm512_add_ps(r, _mm512_set1_ps(msum[i][b])) : r);
    }
  }
}

template <bool Q4>
void acc_tiles(const AccArgs& a) {
  if (a.n % 16 != 0 || a.group < 16) return avx2::tiles::acc(Q4 ? Codec::kQ4 : Codec::kQ8, a);
  for (int t0 = 0; t0 < a.n_rows; t0 += kAccChunk) {
    const int t1 = std::min(a.n_rows, t0 + kAccChunk);
    for_query_groups(a.n_q, [&](auto nq, int i0) { acc_run<nq(), Q4>(a, i0, t0, t1); });
  }
}

}  // namespace

void install(Kernels& t) {
  t.dot[static_cast<int>(Codec::kQ8)] = dot_tiles<false>;
  t.dot[static_cast<int>(Codec::kQ4)] = dot_tiles<true>;
  t.acc[static_cast<int>(Codec::kQ8)] = acc_tiles<false>;
  t.acc[static_cast<int>(Codec::kQ4)] = acc_tiles<true>;
}

}  // namespace kvrt::simd::avx512vnni
