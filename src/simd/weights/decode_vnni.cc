// Decode products on packed weight blocks for the avx512-vnni rung: weights/decode_x86-inl.h with
// vpdpbusd and vpdpwssd on ymm (AVX512-VL).
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "common/half.h"
#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/weights/blocks.h"
#include "simd/weights/decode.h"
#include "simd/weights/decode_lay.h"

namespace kvrt::simd::avx512vnni::weights {

#include "simd/weights/decode_x86-inl.h"

}  // namespace kvrt::simd::avx512vnni::weights
