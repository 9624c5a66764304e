// Tile kernels of every quantized format for aarch64 NEON (kv/tiles.h layouts), templates over the
// format descriptor F of kv/blocks.h, the same integer arithmetic as the scalar twins in
// kv/scalar.cc (exact integer sums, then the same float steps per lane).
//   dot (q·k, kv/qk_tiles_neon-inl.h): lanes are 4 tokens of a key tile (a quarter); vmull_s8
//   multiplies 2 tokens x 4 dims
//              by the query's 4 codes (|products| <= 128 * 128, no int16 overflow), vpadalq_s16
//              adds pairs into int32 and vpaddq_s32 folds them to one lane per token.
//   acc (p·V): lanes are dims; p folded into the value scales as int16 weights (AccArgs), vmlal
//              adds each token's codes times its weight into int32, flushed once per kAccChunk run.
// q3's codes take bit 2 from the high-bit plane beside the 2-bit plane (kv/tiles.h) on every
// kernel and rung.
//   dequantize_tile (prefill): 8 dims of a token per step, equal to kv::tile_load_row.
// The FP16 scales and minimums become floats with fcvtl (exact), 4 tokens at a time.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/kv/tile_loops.h"

namespace kvrt::simd::neon::tiles {

namespace {

// This file's tag (kv/tile_loops.h, kv/qk_tiles_neon-inl.h): 4 tokens per step of dot, 8 dims per
// column of acc.
struct Neon : ColumnDims<kAccColumnDims> {
  static constexpr int kQuarters = 1;
  template <int NQ>
  using Queries = QueryRows<NQ>;
};
using Tag = Neon;

#include "simd/kv/qk_tiles_neon-inl.h"

// acc[0] += 2 tokens x 4 dims (low half of v), acc[1] += the next 2 tokens (high half).
inline void mul_add(int8x16_t v, int8x16_t q, int32x4_t* acc) {
  acc[0] = vpadalq_s16(acc[0], vmull_s8(vget_low_s8(v), vget_low_s8(q)));
  acc[1] = vpadalq_s16(acc[1], vmull_s8(vget_high_s8(v), vget_low_s8(q)));
}

// Integer sums of group b over 4 tokens (16 code bytes per run of 4k dims) for NQ queries:
// lane t of sums[i][0] is Σ code(t) * q̃_i.
template <int NQ, class F>
inline void group_sums(Neon, const uint8_t* codes, const uint8_t* high, const QueryRows<NQ>& qc,
                       int b, int group, int32x4_t (*sums)[1]) {
  constexpr int dims = kv::kKeyLaneDims * F::kPerByte;  // dims per run
  int32x4_t acc[NQ][2];
  for (int i = 0; i < NQ; ++i) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
  for (int j = b * group / dims; j < (b + 1) * group / dims; ++j) {
    const uint8x16_t v = vld1q_u8(codes + j * kRun), h = high_bits<F>(high, j);
    for_slots<F::kPerByte>([&](auto s) {
      const int8x16_t c = slot_codes<F, s()>(v, h);
      for (int i = 0; i < NQ; ++i)
        mul_add(c, query4(qc.c[i] + dims * j + kv::kKeyLaneDims * s()), acc[i]);
    });
  }
  for (int i = 0; i < NQ; ++i) sums[i][0] = vpaddq_s32(acc[i][0], acc[i][1]);
}

// Weights of one kAccChunk run, computed as scalar::acc_tiles_run does (a 1/G share of the work):
// w[i][b][t] = round(p d / sw), zero past the run's tokens; sw the weight scale, msum = Σ p m
// (asymmetric formats). Each query's max |p| and, per group, the run's scales (and minimums) are
// taken once, not once per query and group; the scales 4 at a time (fcvtl, exact as
// kv::tile_scale).
template <int NQ, class F>
void run_weights(Neon, const AccArgs& a, int i0, int t0, int t1, const TileRun& run,
                 RunWeights<NQ, Neon::kColumnDims>& r) {
  constexpr size_t ss = kv::kScaleStride;
  const int ng = a.n / a.group, n = t1 - t0;
  float pmax[NQ];
  for (int i = 0; i < NQ; ++i) {
    const float* p = a.p + (i0 + i) * a.p_stride + t0;
    pmax[i] = 0;
    for (int t = 0; t < n; ++t) pmax[i] = std::max(pmax[i], std::fabs(p[t]));
  }
  for (int b = 0; b < ng; ++b) {
    float d[kAccChunk],
        mins[kAccChunk];  // [t]: token t0 + t's scale (and minimum), every token of the run's tiles
    for (int t = 0; t < run.n_tiles * kT; t += 4) {
      const uint8_t* scales = run.tiles + t / kT * a.row_stride + t % kT * sizeof(kv::Scale);
      vst1q_f32(d + t, load_scales(scales + b * ss));
      if constexpr (!F::kSymmetric) vst1q_f32(mins + t, load_scales(scales + (ng + b) * ss));
    }
    float dmax = 0;
    for (int t = 0; t < n; ++t) dmax = std::max(dmax, std::fabs(d[t]));
    for (int i = 0; i < NQ; ++i) {
      const float* p = a.p + (i0 + i) * a.p_stride + t0;
      float msum = 0;
      const float range = pmax[i] * dmax, inv = range > 0 ? 32767.0f / range : 0.0f;
      r.sw[i][b] = range / 32767.0f;
      std::fill_n(r.w[i][b], kAccChunk, int16_t{0});
      for (int t = 0; t < n; ++t) {
        r.w[i][b][t] = static_cast<int16_t>(std::nearbyint(p[t] * d[t] * inv));
        if constexpr (!F::kSymmetric) msum += p[t] * mins[t];
      }
      r.msum[i][b] = msum;
    }
  }
}

// 8 stored codes (0 .. 2^bits - 1) of format F as the codes q of kv/blocks.h: less q4s's bias, or
// the levels q4n's codes index (tbl).
template <class F>
inline int16x8_t codes16(uint8x8_t c) {
  if constexpr (F::kCodebook) return vmovl_s8(vqtbl1_s8(vld1q_s8(kv::kQ4NLevels), c));
  else return vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(c)), vdupq_n_s16(F::kCodeBias));
}

// Adds the value codes of 8 dims (column col) of one tile, times each token's weight, to acc.
template <int NQ, class F>
inline void acc_tile(const uint8_t* codes, const uint8_t* high, int n, int col,
                     const RunWeights<NQ, Neon::kColumnDims>& r, int b, int k_tile,
                     int32x4_t (*acc)[2]) {
  const auto add = [&](int16x8_t v, int token) {
    for (int i = 0; i < NQ; ++i) {
      const int16_t w = r.tile(i, b, k_tile)[token];
      acc[i][0] = vmlal_n_s16(acc[i][0], vget_low_s16(v), w);
      acc[i][1] = vmlal_n_s16(acc[i][1], vget_high_s16(v), w);
    }
  };
  if constexpr (F::kBits == 8) {  // dims interleaved with the other token of the pair
    for (int pair = 0; pair < kT / 2; ++pair) {
      const int8x8x2_t x =
          vld2_s8(reinterpret_cast<const int8_t*>(codes + pair * 2 * n + col * 16));
      add(vmovl_s8(x.val[0]), 2 * pair);
      add(vmovl_s8(x.val[1]), 2 * pair + 1);
    }
  } else {  // byte u of dim i holds tokens k u + s in slot s (kv/tiles.h); q3's high bits of
            // tokens 8 u' + s in bit s of byte u' of dim i
    constexpr int k = F::kPerByte;
    for (int u = 0; u < kT / k; ++u) {
      const uint8x8_t x = vld1_u8(codes + u * n + col * 8);
      for (int s = 0; s < k; ++s) {
        uint8x8_t c = vand_u8(vshl_u8(x, vdup_n_s8(static_cast<int8_t>(-s * F::kLowBits))),
                              vdup_n_u8(F::kLowMask));
        if constexpr (F::kHighPlane) {
          const uint8x8_t h = vld1_u8(high + k * u / 8 * n + col * 8);
          const int bit = k * u % 8 + s;
          c = vorr_u8(
              c, vshl_n_u8(vand_u8(vshl_u8(h, vdup_n_s8(static_cast<int8_t>(-bit))), vdup_n_u8(1)),
                           F::kLowBits));
        }
        add(codes16<F>(c), k * u + s);
      }
    }
  }
}

// Column col (8 dims) of a kAccChunk run: the int32 sums over its tiles, then
// o = fma(sum, sw, o) (+ Σ p m for asymmetric formats).
template <int NQ, class F>
void acc_column(Neon, const AccArgs& a, int i0, const TileRun& run,
                const RunWeights<NQ, Neon::kColumnDims>& r, int col) {
  const auto f = kv::TileFormat::of<F>(kv::TileRole::kValue, a.n, a.group);
  const int b = col * 8 / a.group;
  int32x4_t acc[NQ][2];
  for (int i = 0; i < NQ; ++i) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
  for (int k = 0; k < run.n_tiles; ++k) {
    const uint8_t* codes = run.tiles + k * a.row_stride + f.header_bytes();
    acc_tile<NQ, F>(codes, codes + f.high_offset(), a.n, col, r, b, k, acc);
  }
  for (int i = 0; i < NQ; ++i) {
    float* o = a.acc + (i0 + i) * a.acc_stride + col * 8;
    for (int h = 0; h < 2; ++h) {
      const float32x4_t res =
          vfmaq_n_f32(vld1q_f32(o + 4 * h), vcvtq_f32_s32(acc[i][h]), r.sw[i][b]);
      vst1q_f32(o + 4 * h, F::kSymmetric ? res : vaddq_f32(res, vdupq_n_f32(r.msum[i][b])));
    }
  }
}

// Codes of 8 dims [8 col, 8 col + 8) of token t in a plane of Bits-bit codes (kv/tiles.h) as
// int16 lanes.
template <kv::TileRole R, int Bits>
inline int16x8_t plane_codes(const uint8_t* codes, int n, int t, int col) {
  constexpr int k = 8 / Bits, bits = Bits, mask = (1 << Bits) - 1;
  uint32_t w[2];
  if constexpr (R == kv::TileRole::kKey && k == 1) {
    std::memcpy(&w[0], codes + 2 * col * kRun + t * 4, sizeof w[0]);
    std::memcpy(&w[1], codes + (2 * col + 1) * kRun + t * 4, sizeof w[1]);
    return vmovl_s8(vreinterpret_s8_u32(vld1_u32(w)));
  } else if constexpr (R == kv::TileRole::kKey) {  // dim 8 col + e in slot (8 col + e) % 4k / 4 of
                                                   // run 8 col / 4k
    constexpr int dims = kv::kKeyLaneDims * k;
    std::memcpy(&w[0], codes + 8 * col / dims * kRun + t * 4, sizeof w[0]);
    const int s0 = 8 * col % dims / 4 * bits;
    const uint8x8_t x = vreinterpret_u8_u32(vdup_n_u32(w[0]));
    const int8x8_t shift =
        vreinterpret_s8_u32(vset_lane_u32(0x01010101u * static_cast<uint8_t>(-(s0 + bits)),
                                          vdup_n_u32(0x01010101u * static_cast<uint8_t>(-s0)), 1));
    return vreinterpretq_s16_u16(vmovl_u8(vand_u8(vshl_u8(x, shift), vdup_n_u8(mask))));
  } else if constexpr (k > 1) {  // token k u + s in slot s of the bytes of row u
    const uint8x8_t x = vld1_u8(codes + t / k * n + col * 8);
    return vreinterpretq_s16_u16(vmovl_u8(
        vand_u8(vshl_u8(x, vdup_n_s8(static_cast<int8_t>(-bits * (t % k)))), vdup_n_u8(mask))));
  } else {  // dims interleaved with the other token of the pair
    const int8x8x2_t x = vld2_s8(reinterpret_cast<const int8_t*>(codes + t / 2 * 2 * n + col * 16));
    return vmovl_s8(t % 2 ? x.val[1] : x.val[0]);
  }
}

// Stored codes of 8 dims [8 col, 8 col + 8) of token t of a tile as int16 lanes (q3: the 2-bit
// plane's, bit 2 from the high-bit plane).
template <kv::TileRole R, class F>
inline int16x8_t token_codes(const kv::TileFormat& f, const uint8_t* codes, int t, int col) {
  const int16x8_t low = plane_codes<R, F::kLowBits>(codes, f.n, t, col);
  if constexpr (!F::kHighPlane) return low;
  return vorrq_s16(low, vshlq_n_s16(plane_codes<R, 1>(codes + f.high_offset(), f.n, t, col), 2));
}

// Token t, dims [8 col, 8 col + 8) of a tile: d * code (symmetric) or m + d * code as
// kv::tile_load_row, which GCC compiles to a fused multiply-add on aarch64 (-ffp-contract=fast), as
// here.
template <class F, kv::TileRole R>
void dequantize_column(Neon, const kv::TileFormat& f, const uint8_t* tile, int t, int col,
                       float* x) {
  const int b = col * 8 / f.group;
  int16x8_t c = token_codes<R, F>(f, tile + f.header_bytes(), t, col);
  if constexpr (F::kBits < 8) c = codes16<F>(vmovn_u16(vreinterpretq_u16_s16(c)));
  const float d = kv::tile_scale(f, tile, b, t);
  for (int h = 0; h < 2; ++h) {
    const float32x4_t cf = vcvtq_f32_s32(vmovl_s16(h ? vget_high_s16(c) : vget_low_s16(c)));
    vst1q_f32(x + 4 * h, F::kSymmetric
                             ? vmulq_n_f32(cf, d)
                             : vfmaq_n_f32(vdupq_n_f32(kv::tile_min(f, tile, b, t)), cf, d));
  }
}

}  // namespace

void install(Kernels& t) { install_tiles<Neon>(t); }

}  // namespace kvrt::simd::neon::tiles
