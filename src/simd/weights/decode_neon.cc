// Decode products on packed weight blocks for the neon rung (plain ARMv8.0):
// weights/decode_neon-inl.h with vmull_s8 (|products| <= 128 * 128 fit int16) and vpadalq_s16 into
// int32 lanes; Q4_0's nibble products (|q a| <= 15 * 128) summed 16 to an int16 lane before they
// are widened.
#include <arm_neon.h>

#include <cstring>
#include <type_traits>
#include <utility>

#include "simd/kernels_isa.h"
#include "simd/weights/blocks.h"
#include "simd/weights/decode.h"
#include "simd/weights/decode_lay.h"

namespace kvrt::simd::neon::weights {
namespace {

// acc + Σ x y over 16 signed bytes, 4 per int32 lane.
inline int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y) {
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(x), vget_low_s8(y)));
  return vpadalq_s16(acc, vmull_high_s8(x, y));
}

// Σ q a of Q4_0 blocks x[k] (nibbles q = 0..15) and Q8_0 blocks y[k] in lane k < 4: vmull_s8 and
// 3 vmlal_s8 leave 4 products per int16 lane, two pairwise adds 16 (|sum| <= 30720 < 2^15).
inline int32x4_t q4_sums(const BlockQ4_0* x, const BlockQ8_0* y) {
  int16x8_t s[4];
  for (int k = 0; k < 4; ++k) {
    const uint8x16_t v = vld1q_u8(x[k].qs);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0xF))),
                    hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    const int8x16_t a0 = vld1q_s8(y[k].qs), a1 = vld1q_s8(y[k].qs + 16);
    const int16x8_t p = vmlal_s8(vmlal_high_s8(vmull_s8(vget_low_s8(lo), vget_low_s8(a0)), lo, a0),
                                 vget_low_s8(hi), vget_low_s8(a1));
    s[k] = vmlal_high_s8(p, hi, a1);
  }
  return vpaddlq_s16(vpaddq_s16(vpaddq_s16(s[0], s[1]), vpaddq_s16(s[2], s[3])));
}

}  // namespace

#include "simd/weights/decode_neon-inl.h"

}  // namespace kvrt::simd::neon::weights
