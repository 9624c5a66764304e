// Decode products on packed weight blocks for the neon-dotprod rung (ARMv8.2, compiled with
// -march=armv8.2-a+dotprod): weights/decode_neon-inl.h with sdot, 4 int8 x int8 products into each
// int32 lane in one instruction; Q4_0's nibbles q = 0..15 enter sdot as they are (valid signed
// bytes).
#include <arm_neon.h>

#include <cstring>
#include <type_traits>
#include <utility>

#include "simd/kernels_isa.h"
#include "simd/weights/blocks.h"
#include "simd/weights/decode.h"
#include "simd/weights/decode_lay.h"

namespace kvrt::simd::neon_dotprod::weights {
namespace {

// acc + Σ x y over 16 signed bytes, 4 per int32 lane.
inline int32x4_t dot16(int32x4_t acc, int8x16_t x, int8x16_t y) { return vdotq_s32(acc, x, y); }

// Σ q a of Q4_0 blocks x[k] (nibbles q = 0..15) and Q8_0 blocks y[k] in lane k < 4: two sdot per
// block, two pairwise adds.
inline int32x4_t q4_sums(const BlockQ4_0* x, const BlockQ8_0* y) {
  int32x4_t s[4];
  for (int k = 0; k < 4; ++k) {
    const uint8x16_t v = vld1q_u8(x[k].qs);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0xF))),
                    hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    s[k] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(y[k].qs)), hi, vld1q_s8(y[k].qs + 16));
  }
  return vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3]));
}

}  // namespace

#include "simd/weights/decode_neon-inl.h"

}  // namespace kvrt::simd::neon_dotprod::weights
