// The to_float slots of the quantized weight types for the avx512 rung: weight_codecs_x86.inc on
// zmm: 16 floats per conversion.
#include <immintrin.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/weight_blocks.h"

namespace kvrt::simd::avx512::codecs {

#include "simd/weight_codecs_x86.inc"

}  // namespace kvrt::simd::avx512::codecs
