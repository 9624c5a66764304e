// Decode products on packed weight blocks for the neon-dotprod rung (ARMv8.2, compiled with
// -march=armv8.2-a+dotprod): weight_dot_neon.inc with sdot, 4 int8 x int8 products into each
// int32 lane in one instruction.
#include <arm_neon.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/weight_blocks.h"
#include "simd/weight_dot.h"

namespace kvrt::simd::neon_dotprod::weights {
namespace {

// acc + Σ x y over 16 signed bytes, 4 per int32 lane.
inline int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y) { return vdotq_s32(acc, x, y); }

}  // namespace

#include "simd/weight_dot_neon.inc"

}  // namespace kvrt::simd::neon_dotprod::weights
