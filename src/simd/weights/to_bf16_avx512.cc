// The to_bf16 slots of the quantized weight types for the avx512-bf16 rung:
// weights/to_float_x86-inl.h on zmm, each 16 widened values rounded to bf16 by vcvtneps2bf16 as
// they are stored: one pass over W's blocks for the bf16 prefill products.
#include <immintrin.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/weights/blocks.h"

namespace kvrt::simd::avx512bf16::codecs {

#include "simd/weights/to_float_x86-inl.h"

}  // namespace kvrt::simd::avx512bf16::codecs
