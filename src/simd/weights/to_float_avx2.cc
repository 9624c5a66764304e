// The to_float slots of the quantized weight types for the avx2 rung: weights/to_float_x86-inl.h on
// ymm: 8 floats per conversion.
#include <immintrin.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/weights/blocks.h"

namespace kvrt::simd::avx2::codecs {

#include "simd/weights/to_float_x86-inl.h"

}  // namespace kvrt::simd::avx2::codecs
