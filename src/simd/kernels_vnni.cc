// Tile kernels of every quantized format for AVX-512 with VNNI (kv/tiles.h layouts), templates
// over the format descriptor F of kv/blocks.h; scalar twins in kernels_scalar.cc.
//   dot (q·k): lanes are the 16 tokens of a key tile; vpdpbusd adds 4 code x query products per
//              lane, so no horizontal sums. q8 codes are made unsigned with ^0x80 and the 128 Σq̃
//              it adds is taken off per group; narrower codes take one vpdpbusd per slot of a byte.
//   acc (p·V): lanes are 16 dims; p is folded into the value scales as int16 weights (AccArgs) and
//              vpdpwssd adds 2 tokens per lane into int32, flushed to FP32 once per kAccChunk run.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/tile_loops.h"

namespace kvrt::simd::avx512vnni {

namespace {

// The tag of this file's kernels (tile_loops.h): 16 tokens (dot) or 16 dims (acc) per vector.
struct Vnni {
  static constexpr int kColumnDims = 16;
};

template <int NQ>
using Weights = RunWeights<NQ, Vnni::kColumnDims>;

inline __m512i bcast32(const void* p) { return _mm512_set1_epi32(load32(p)); }

inline __mmask16 first_lanes(int n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// Integer sums of group b of one key tile for NQ queries: acc[i] lane t = Σ code(t) * q̃_i.
template <int NQ, class F>
inline void group_sums(const uint8_t* codes, const int8_t* const* qc, int b, int group, __m512i* acc) {
  constexpr int dims = kv::kKeyLaneDims * F::kPerByte;  // dims per run
  for (int i = 0; i < NQ; ++i) acc[i] = _mm512_setzero_si512();
  for (int j = b * group / dims; j < (b + 1) * group / dims; ++j) {
    const __m512i v = _mm512_loadu_si512(codes + j * kRun);
    if constexpr (F::kBits == 8) {
      const __m512i u = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
      for (int i = 0; i < NQ; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, bcast32(qc[i] + dims * j));
    } else {
      const __m512i mask = _mm512_set1_epi8(F::kCodeMask);
      for (int s = 0; s < F::kPerByte; ++s) {
        const __m512i c = _mm512_and_si512(_mm512_srli_epi16(v, s * F::kBits), mask);
        for (int i = 0; i < NQ; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], c, bcast32(qc[i] + dims * j + kv::kKeyLaneDims * s));
      }
    }
  }
}

template <int NQ, class F>
void dot_nq(Vnni, const DotArgs& a, int i0) {
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kKey, a.n, a.group);
  constexpr size_t ss = kv::kScaleStride<typename F::Scale>;
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const QueryRows<NQ> qc(a, i0);
  for_key_tiles(a, [&](const uint8_t* tile, int t0) {
    __m512 s[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_setzero_ps();
    for (int b = 0; b < ng; ++b) {
      __m512i acc[NQ];
      group_sums<NQ, F>(tile + f.header_bytes(), qc.c, b, a.group, acc);
      const __m512 d = _mm512_loadu_ps(tile + b * ss);
      for (int i = 0; i < NQ; ++i) {
        const int g = (i0 + i) * ng + b;
        const __m512i sum = F::kBits == 8 ? _mm512_sub_epi32(acc[i], _mm512_set1_epi32(128 * q.csum[g])) : acc[i];
        s[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(q.d[g])), s[i]);
        if constexpr (!F::kSymmetric) s[i] = _mm512_fmadd_ps(_mm512_loadu_ps(tile + (ng + b) * ss), _mm512_set1_ps(q.sum[g]), s[i]);
      }
    }
    const __mmask16 m = first_lanes(a.n_rows - t0);
    for (int i = 0; i < NQ; ++i) _mm512_mask_storeu_ps(a.scores + (i0 + i) * a.scores_stride + t0, m, s[i]);
  });
}

// Adds the value codes of 16 dims (column col) of tile k_tile of the run to acc, a pair of tokens
// at a time (vpdpwssd of 2 tokens' codes as int16 lanes with their 2 weights), alternating two
// accumulators.
template <int NQ, class F>
inline void acc_tile(const uint8_t* codes, int n, int col, const Weights<NQ>& r, int b, int k_tile, __m512i (*acc)[NQ]) {
  if constexpr (F::kBits == 8) {
    for (int pair = 0; pair < kT / 2; ++pair) {
      const __m512i v = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + pair * 2 * n + col * 32)));
      for (int i = 0; i < NQ; ++i) acc[pair & 1][i] = _mm512_dpwssd_epi32(acc[pair & 1][i], v, bcast32(r.tile(i, b, k_tile) + 2 * pair));
    }
  } else {  // byte u of dim i holds tokens k u + s in slot s (kv/tiles.h)
    constexpr int k = F::kPerByte, bits = F::kBits;
    const __m512i mask = _mm512_set1_epi32(F::kCodeMask | F::kCodeMask << 16);
    for (int u = 0; u < kT / k; ++u) {
      const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + u * n + col * 16)));
      for (int p = 0; p < k / 2; ++p) {
        const int pair = k / 2 * u + p;
        // (x >> 2p bits | x << (16 - (2p + 1) bits)) & mask: the pair's two codes as int16 lanes
        const __m512i v = _mm512_ternarylogic_epi32(_mm512_srli_epi32(x, 2 * p * bits), _mm512_slli_epi32(x, 16 - (2 * p + 1) * bits), mask, 0xa8);
        for (int i = 0; i < NQ; ++i) acc[pair & 1][i] = _mm512_dpwssd_epi32(acc[pair & 1][i], v, bcast32(r.tile(i, b, k_tile) + 2 * pair));
      }
    }
  }
}

// Weights of one kAccChunk run (as scalar::acc_tiles_run): w[i][b][t] = round(p d / sw).
template <int NQ, class F>
void run_weights(Vnni, const AccArgs& a, int i0, int t0, int t1, const TileRun& run, Weights<NQ>& r) {
  constexpr size_t ss = kv::kScaleStride<typename F::Scale>;
  const int ng = a.n / a.group;
  __m512 pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    pmax[i] = _mm512_setzero_ps();
    for (int k = 0; k < run.n_tiles; ++k) {
      const __m512 p = _mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), a.p + (i0 + i) * a.p_stride + t0 + k * kT);
      pmax[i] = _mm512_max_ps(pmax[i], _mm512_abs_ps(p));
    }
  }
  for (int b = 0; b < ng; ++b) {
    __m512 dmax = _mm512_setzero_ps();
    for (int k = 0; k < run.n_tiles; ++k) {
      dmax = _mm512_max_ps(dmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), run.tiles + k * a.row_stride + b * ss)));
    }
    const float dm = _mm512_reduce_max_ps(dmax);
    for (int i = 0; i < NQ; ++i) {
      const float range = _mm512_reduce_max_ps(pmax[i]) * dm;
      r.sw[i][b] = range / 32767.0f;
      const __m512 inv = _mm512_set1_ps(range > 0 ? 32767.0f / range : 0.0f);
      __m512 ms = _mm512_setzero_ps();
      for (int k = 0; k < run.n_tiles; ++k) {
        const uint8_t* tile = run.tiles + k * a.row_stride;
        const __m512 p = _mm512_maskz_loadu_ps(first_lanes(t1 - t0 - k * kT), a.p + (i0 + i) * a.p_stride + t0 + k * kT);
        const __m512 pw = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_loadu_ps(tile + b * ss)), inv);
        _mm256_store_si256(reinterpret_cast<__m256i*>(&r.w[i][b][k * kT]), _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(pw)));
        if constexpr (!F::kSymmetric) ms = _mm512_fmadd_ps(p, _mm512_loadu_ps(tile + (ng + b) * ss), ms);
      }
      r.msum[i][b] = F::kSymmetric ? 0.0f : _mm512_reduce_add_ps(ms);
    }
  }
}

// Column col (16 dims) of a kAccChunk run: the int32 sums over its tiles, flushed as
// o += sum * sw (+ Σ p m for asymmetric formats).
template <int NQ, class F>
void acc_column(Vnni, const AccArgs& a, int i0, const TileRun& run, const Weights<NQ>& r, int col) {
  const size_t header = kv::TileFormat::of<F>(kv::TileRole::kValue, a.n, a.group).header_bytes();
  const int b = col * 16 / a.group;
  __m512i acc[2][NQ];
  for (int i = 0; i < NQ; ++i) acc[0][i] = acc[1][i] = _mm512_setzero_si512();
  for (int k = 0; k < run.n_tiles; ++k) acc_tile<NQ, F>(run.tiles + k * a.row_stride + header, a.n, col, r, b, k, acc);
  for (int i = 0; i < NQ; ++i) {
    float* o = a.acc + (i0 + i) * a.acc_stride + col * 16;
    const __m512 sum = _mm512_cvtepi32_ps(_mm512_add_epi32(acc[0][i], acc[1][i]));
    const __m512 res = _mm512_fmadd_ps(sum, _mm512_set1_ps(r.sw[i][b]), _mm512_loadu_ps(o));
    _mm512_storeu_ps(o, F::kSymmetric ? res : _mm512_add_ps(res, _mm512_set1_ps(r.msum[i][b])));
  }
}

// Columns of 16 dims inside one group; other shapes take the AVX2 kernels.
template <class F>
void acc_columns_of_16(const AccArgs& a) {
  if (a.n % 16 != 0 || a.group % 16 != 0) return avx2::tiles::acc(F::kFormat, a);
  acc_tiles<Vnni, F>(a);
}

}  // namespace

void install(Kernels& t) {
  for_each_format_slot(t, [](auto f, FormatKernels& k) {
    k.dot = dot_tiles<Vnni, decltype(f)>;
    k.acc = acc_columns_of_16<decltype(f)>;
  });
}

}  // namespace kvrt::simd::avx512vnni
