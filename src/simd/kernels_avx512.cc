// Kernels for avx512: kernels_body.inc compiled with this file's -m flags (src/simd/meson.build).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kv/blocks.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::avx512 {

#include "simd/kernels_body_decl.inc"
#include "simd/kernels_x86.inc"
#include "simd/kernels_body.inc"
#include "simd/kernels_table.inc"

const Kernels& table() { return make_table<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>, xsimd::sse4_2>("avx512"); }

}  // namespace kvrt::simd::avx512
