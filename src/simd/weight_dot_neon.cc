// Decode products on packed weight blocks for the neon rung (plain ARMv8.0): weight_dot_neon.inc
// with vmull_s8 (|products| <= 128 * 128 fit int16) and vpadalq_s16 into int32 lanes.
#include <arm_neon.h>

#include <cstring>

#include "simd/kernels_isa.h"
#include "simd/weight_blocks.h"
#include "simd/weight_dot.h"

namespace kvrt::simd::neon::weights {
namespace {

// acc + Σ x y over 16 signed bytes, 4 per int32 lane.
inline int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y) {
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(x), vget_low_s8(y)));
  return vpadalq_s16(acc, vmull_high_s8(x, y));
}

}  // namespace

#include "simd/weight_dot_neon.inc"

}  // namespace kvrt::simd::neon::weights
