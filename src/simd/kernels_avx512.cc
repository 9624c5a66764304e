// Kernels for avx512: kv/row_kernels-inl.h compiled with this file's -m flags
// (src/simd/meson.build).
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

namespace kvrt::simd::avx512 {

#include "simd/batch-inl.h"
#include "simd/kv/row_codes_x86-inl.h"
#include "simd/kv/row_kernels-inl.h"
#include "simd/matmul/prefill_tiles-inl.h"
#include "simd/kv/row_slots-inl.h"
#include "simd/matmul/gemm_tiles-inl.h"

// The avx512 rung: the row kernels, the matmul tiles (32 registers: 16 accumulators plus the
// loaded rows) and the widening of quantized weights on zmm (weights/to_float_avx512.cc). The
// format tile kernels stay as the avx2 rung left them; the avx512-vnni rung (kv/tiles_vnni.cc)
// replaces dot and acc, the avx512-bf16 rung (matmul/prefill_bf16_avx512.cc) the bf16 prefill
// tiles.
void install(Kernels& t) {
  install_rows<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>, xsimd::sse4_2>(t);
  install_matmul<xsimd::avx512f, 4, 4>(t, "avx512");
  codecs::install(t);
}

}  // namespace kvrt::simd::avx512
