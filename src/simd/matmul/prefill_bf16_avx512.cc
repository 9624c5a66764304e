// The avx512-bf16 rung: the bf16 prefill tiles (simd/kernels.h GemmBf16Args) with vdpbf16ps, which
// sums 32 products into 16 f32 lanes, twice the FMAs'; and the rounding to bf16 of the operands of
// bf16 matrix products (activations, F16 weights; the quantized types in weights/to_bf16_avx512.cc)
// with vcvtneps2bf16.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "common/half.h"
#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::avx512bf16 {
namespace {

// c[i0 + ii][r0 + 16 v ..] for ii < I, v < V, as matmul/prefill_tiles-inl.h's gemm_block on pairs.
template <int V, int I>
inline void gemm_block(const GemmBf16Args& g, int i0, int r0) {
  __m512 c[I][V];
  for (int ii = 0; ii < I; ++ii) {
    float* row = g.c + static_cast<size_t>(i0 + ii) * g.n_r + r0;
    for (int v = 0; v < V; ++v)
      c[ii][v] = g.accumulate ? _mm512_loadu_ps(row + 16 * v) : _mm512_setzero_ps();
  }
  const uint32_t* b = g.b + i0 * g.b_i;
  const uint32_t* a = g.a + r0;
  for (int p = 0; p < g.n_kp; ++p, b += g.b_k, a += g.n_r) {
    __m512bh av[V];
    for (int v = 0; v < V; ++v) av[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + 16 * v));
    for (int ii = 0; ii < I; ++ii) {
      const __m512bh bv =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(b[ii * g.b_i])));
      for (int v = 0; v < V; ++v) c[ii][v] = _mm512_dpbf16_ps(c[ii][v], bv, av[v]);
    }
  }
  for (int ii = 0; ii < I; ++ii) {
    float* row = g.c + static_cast<size_t>(i0 + ii) * g.n_r + r0;
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(row + 16 * v, c[ii][v]);
  }
}

template <int V>
void gemm_rows(const GemmBf16Args& g, int r0) {
  constexpr int kI = 8;
  int i = 0;
  for (; i + kI <= g.n_i; i += kI) gemm_block<V, kI>(g, i, r0);
  for (; i < g.n_i; ++i) gemm_block<V, 1>(g, i, r0);
}

void gemm(const GemmBf16Args& g) {
  int r0 = 0;
  for (; r0 + 32 <= g.n_r; r0 += 32) gemm_rows<2>(g, r0);
  for (; r0 < g.n_r; r0 += 16) gemm_rows<1>(g, r0);
}

// vcvtne2ps2bf16 rounds to nearest, ties to even, as the twin (denormals, which it flushes, aside).
void pairs(const float* x0, const float* x1, int step, int n, uint32_t* dst) {
  int i = 0;
  if (step == 2 &&
      x1 == x0 + 1) {  // a row's consecutive values: 32 of them are 16 pairs as they lie
    for (; i + 16 <= n; i += 16) {
      const __m512bh b =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x0 + 2 * i + 16), _mm512_loadu_ps(x0 + 2 * i));
      _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(b));
    }
  } else if (step == 1) {  // two rows: 16 values of each, then interleaved
    const __m512i order =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (; i + 16 <= n; i += 16) {
      const __m512 hi = x1 ? _mm512_loadu_ps(x1 + i) : _mm512_setzero_ps();
      const __m512bh b = _mm512_cvtne2ps_pbh(hi, _mm512_loadu_ps(x0 + i));
      _mm512_storeu_si512(dst + i, _mm512_permutexvar_epi16(order, reinterpret_cast<__m512i>(b)));
    }
  }
  if (i < n) scalar::bf16_pairs(x0 + i * step, x1 ? x1 + i * step : nullptr, step, n - i, dst + i);
}

// f32 -> bf16 with vcvtneps2bf16, which rounds as the twin (common/half.h f32_to_bf16) but for
// denormal inputs, which it flushes to zero: a vector holding one goes through the twin.
void bf16_from_float(const float* x, int64_t n, uint8_t* bytes) {
  uint16_t* dst = reinterpret_cast<uint16_t*>(bytes);
  constexpr int kDenormal = 0x20;  // the fpclass category of denormal inputs
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 v = _mm512_loadu_ps(x + k);
    if (_mm512_fpclass_ps_mask(v, kDenormal) != 0) {
      for (int j = 0; j < 16; ++j) dst[k + j] = f32_to_bf16(x[k + j]);
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k),
                        reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
  }
  for (; k < n; ++k) dst[k] = f32_to_bf16(x[k]);
}

// f16 -> bf16 through f32 in registers: an f16 value widens to a normal f32 (or zero), which
// vcvtneps2bf16 rounds as the twin. A line of W per step, read 2 KiB ahead as the f32 widening
// (matmul/gemm_tiles-inl.h): W streams from DRAM, and the hardware prefetchers alone read it at
// 9.2 GB/s against 11.0 with it (one thread, 512 MiB, Intel Xeon).
void f16_to_bf16(const uint8_t* src, int64_t n, uint16_t* dst) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    read_ahead<64>(h + k);
    for (int64_t j = k; j < k + 32; j += 16) {
      const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + j)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j),
                          reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
    }
  }
  for (; k + 16 <= n; k += 16) {
    const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + k)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k),
                        reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
  }
  for (; k < n; ++k) dst[k] = f32_to_bf16(f16_to_f32(h[k]));
}

}  // namespace

void install(Kernels& t) {
  t.gemm_bf16 = gemm;
  t.bf16_pairs = pairs;
  t.weight[weight_index(WeightType::kBF16)].from_float = bf16_from_float;
  t.weight[weight_index(WeightType::kF16)].to_bf16 = f16_to_bf16;
  codecs::install(t);
}

}  // namespace kvrt::simd::avx512bf16
