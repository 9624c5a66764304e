// The tile kernel body of the blocked GEMM over xsimd batches, included once per ISA by
// matmul_blocked_<isa>.cc. Internal linkage, so no instantiation compiled with one ISA's -m flags
// can be merged by the linker into another ISA's code.
#pragma once

#include <xsimd/xsimd.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <utility>

#include "common/half.h"

#include "ops/matmul_blocked.h"

namespace kvrt::ops {
namespace {

// An mr x nr block of dot products: mr + nr vector loads feed mr * nr FMAs per step of k.
template <class Arch, int MR, int NR>
void blocked_tile(const TileArgs& a) {
  using Batch = xsimd::batch<float, Arch>;
  constexpr int64_t kLanes = Batch::size;
  Batch acc[MR][NR];  // [mr][nr] partial sums, one lane per k residue
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = Batch(0.0f);
  int64_t k = 0;
  for (; k + kLanes <= a.n_in; k += kLanes) {
    Batch xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = Batch::load_unaligned(a.x + i * a.x_stride + k);
    for (int j = 0; j < NR; ++j) {
      const Batch wv = Batch::load_unaligned(a.w + j * a.w_stride + k);
      for (int i = 0; i < MR; ++i) acc[i][j] = xsimd::fma(xv[i], wv, acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = xsimd::hadd(acc[i][j]);
      for (int64_t t = k; t < a.n_in; ++t) sum += a.x[i * a.x_stride + t] * a.w[j * a.w_stride + t];
      a.y[i * a.y_stride + j] = sum;
    }
  }
}

// f16 -> f32 with the conversion instructions this translation unit was compiled for.
void widen_f16_rows(const uint16_t* src, int64_t n, float* dst) {
  int64_t k = 0;
#if defined(__AVX512F__)
  for (; k + 16 <= n; k += 16)
    _mm512_storeu_ps(dst + k, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k))));
#endif
#if defined(__F16C__)
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k))));
#endif
#if defined(__aarch64__)
  for (; k + 4 <= n; k += 4) vst1q_f32(dst + k, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + k))));
#endif
  for (; k < n; ++k) dst[k] = f16_to_f32(src[k]);
}

// bf16 -> f32 is a 16-bit shift; written so the compiler vectorizes it.
void widen_bf16_rows(const uint16_t* src, int64_t n, float* dst) {
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  for (int64_t k = 0; k < n; ++k) d[k] = uint32_t(src[k]) << 16;
}

// Every tile shape up to MR x NR, for the edges of y.
template <class Arch, int MR, int NR>
constexpr TileKernels blocked_tile_table(const char* name) {
  TileKernels t{name, MR, NR, {}, &widen_f16_rows, &widen_bf16_rows};
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((t.fn[I / NR][I % NR] = &blocked_tile<Arch, I / NR + 1, I % NR + 1>), ...);
  }(std::make_integer_sequence<int, MR * NR>{});
  return t;
}

}  // namespace
}  // namespace kvrt::ops
