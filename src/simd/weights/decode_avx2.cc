// Decode products on packed weight blocks for the avx2 rung: weights/decode_x86-inl.h with
// vpmaddubsw.
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

namespace kvrt::simd::avx2::weights {

#include "simd/weights/decode_x86-inl.h"

}  // namespace kvrt::simd::avx2::weights
