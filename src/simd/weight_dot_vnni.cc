// Decode products on packed weight blocks for the avx512-vnni rung: weight_dot_x86.inc with
// vpdpbusd and vpdpwssd on ymm (AVX512-VL).
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/half.h"
#include "simd/kernels_isa.h"
#include "simd/weight_blocks.h"
#include "simd/weight_dot.h"

namespace kvrt::simd::avx512vnni::weights {

#include "simd/weight_dot_x86.inc"

}  // namespace kvrt::simd::avx512vnni::weights
