// The neon-dotprod rung (ARMv8.2 dot product, compiled with -march=armv8.2-a+dotprod): q·k over the
// key tiles of every quantized format with sdot, and the decode products of the weight types
// (weights/decode_neon_dotprod.cc). sdot adds 4 int8 x int8 products into each int32 lane, and a
// key tile's lane is 4 dims of one token (kv/tiles.h), so one sdot per run of 4 tokens and query,
// with the query's 4 codes in every lane; 8 tokens (2 quarters) per step. The integer sums are
// exact
// (|code|, |q̃| <= 127), the same as the neon rung's and the scalar twin's; the other slots (p·V
// with its int16 weights, the dequantization) stay as the neon rung left them.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kv/tile_loops.h"

namespace kvrt::simd::neon_dotprod {

namespace {

struct NeonDot {
  static constexpr int kQuarters = 2;
  template <int NQ>
  using Queries = QueryRows<NQ>;
};
using Tag = NeonDot;

#include "simd/kv/qk_tiles_neon-inl.h"

// Integer sums of group b over 8 tokens (2 x 16 code bytes per run of 4k dims) for NQ queries.
template <int NQ, class F>
inline void group_sums(NeonDot, const uint8_t* codes, const uint8_t* high, const QueryRows<NQ>& qc,
                       int b, int group, int32x4_t (*sums)[2]) {
  constexpr int dims = kv::kKeyLaneDims * F::kPerByte;  // dims per run
  for (int i = 0; i < NQ; ++i) sums[i][0] = sums[i][1] = vdupq_n_s32(0);
  for (int j = b * group / dims; j < (b + 1) * group / dims; ++j) {
    const uint8x16x2_t v = vld1q_u8_x2(codes + j * kRun);
    const uint8x16_t h[2] = {high_bits<F>(high, j), high_bits<F>(high + 16, j)};
    for_slots<F::kPerByte>([&](auto s) {
      const int8x16_t c[2] = {slot_codes<F, s()>(v.val[0], h[0]),
                              slot_codes<F, s()>(v.val[1], h[1])};
      for (int i = 0; i < NQ; ++i) {
        const int8x16_t qv = query4(qc.c[i] + dims * j + kv::kKeyLaneDims * s());
        for (int r = 0; r < 2; ++r) sums[i][r] = vdotq_s32(sums[i][r], c[r], qv);
      }
    });
  }
}

}  // namespace

void install(Kernels& t) {
  weights::install(t);
  for_each_format_slot(t,
                       [](auto f, FormatKernels& k) { k.dot = dot_tiles<NeonDot, decltype(f)>; });
}

}  // namespace kvrt::simd::neon_dotprod
