// The to_float slots of the quantized weight types for the avx2 rung: weight_codecs_x86.inc on
// ymm: 8 floats per conversion.
#include <immintrin.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/weight_blocks.h"

namespace kvrt::simd::avx2::codecs {

#include "simd/weight_codecs_x86.inc"

}  // namespace kvrt::simd::avx2::codecs
