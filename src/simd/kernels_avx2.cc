// Kernels for avx2: kv/row_kernels-inl.h compiled with this file's -m flags (src/simd/meson.build).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <xsimd/xsimd.hpp>

#include "common/half.h"
#include "kv/blocks.h"
#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::avx2 {

#include "simd/batch-inl.h"
#include "simd/kv/row_codes_x86-inl.h"
#include "simd/kv/row_kernels-inl.h"
#include "simd/matmul/prefill_tiles-inl.h"
#include "simd/kv/row_slots-inl.h"
#include "simd/matmul/gemm_tiles-inl.h"

// The avx2 rung: the row kernels, the tile kernels of every quantized format (kv/tiles_avx2.cc),
// the decode products of the weight types (weights/decode_avx2.cc), their widening to FP32
// (weights/to_float_avx2.cc) and the matmul tiles (16 registers: 12 accumulators, 3 rows of x, W
// from memory operands).
void install(Kernels& t) {
  install_rows<xsimd::fma3<xsimd::avx2>, xsimd::sse4_2>(t);
  tiles::install(t);
  weights::install(t);
  codecs::install(t);
  install_matmul<xsimd::fma3<xsimd::avx2>, 3, 4>(t, "avx2");
}

}  // namespace kvrt::simd::avx2
