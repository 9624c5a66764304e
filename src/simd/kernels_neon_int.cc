// q8 / q4 tile kernels for aarch64 NEON (kv/tiles.h layouts), the same integer arithmetic as the
// scalar twins in kernels_scalar.cc (exact integer sums, then the same float steps per lane).
//   dot (q·k): lanes are 4 tokens of a key tile (a quarter); vmull_s8 multiplies 2 tokens x 4 dims
//              by the query's 4 codes (|products| <= 128 * 128, no int16 overflow), vpadalq_s16
//              adds pairs into int32 and vpaddq_s32 folds them to one lane per token.
//   acc (p·V): lanes are dims; p folded into the value scales as int16 weights (AccArgs), vmlal
//              adds each token's codes times its weight into int32, flushed once per kAccChunk run.
//   dequantize_tile (prefill): 8 dims of a token per step, equal to kv::tile_load_row.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/query_groups.h"

namespace kvrt::simd::neon::tiles {

namespace {

constexpr int kT = kv::kTileTokens;

// The query's 4 codes at p, twice: one per token of a vmull_s8.
inline int8x8_t query4(const int8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return vreinterpret_s8_u32(vdup_n_u32(w));
}

// acc[0] += 2 tokens x 4 dims (low half of v), acc[1] += the next 2 tokens (high half).
inline void mul_add(int8x16_t v, int8x8_t q, int32x4_t* acc) {
  acc[0] = vpadalq_s16(acc[0], vmull_s8(vget_low_s8(v), q));
  acc[1] = vpadalq_s16(acc[1], vmull_s8(vget_high_s8(v), q));
}

// Integer sums of group b over 4 tokens (16 code bytes per 4 dims, 64 apart) for NQ queries:
// lane t of the result is Σ code(t) * q̃_i.
template <int NQ, bool Q4>
inline void group_sums(const uint8_t* codes, const int8_t* const* qc, int b, int group, int32x4_t* sums) {
  int32x4_t acc[NQ][2];
  for (int i = 0; i < NQ; ++i) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
  if constexpr (Q4) {
    for (int j = b * group / 8; j < (b + 1) * group / 8; ++j) {
      const uint8x16_t v = vld1q_u8(codes + j * 64);
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))), hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
      for (int i = 0; i < NQ; ++i) {
        mul_add(lo, query4(qc[i] + 8 * j), acc[i]);
        mul_add(hi, query4(qc[i] + 8 * j + 4), acc[i]);
      }
    }
  } else {
    for (int j = b * group / 4; j < (b + 1) * group / 4; ++j) {
      const int8x16_t v = vld1q_s8(reinterpret_cast<const int8_t*>(codes + j * 64));
      for (int i = 0; i < NQ; ++i) mul_add(v, query4(qc[i] + 4 * j), acc[i]);
    }
  }
  for (int i = 0; i < NQ; ++i) sums[i] = vpaddq_s32(acc[i][0], acc[i][1]);
}

inline float32x4_t load_f32(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }

template <int NQ, bool Q4>
void dot_nq(const DotArgs& a, int i0) {
  const kv::TileFormat f{kv::TileRole::kKey, Q4, a.n, a.group};
  const int ng = f.n_groups();
  const QueryCodes& q = *a.qc;
  const int8_t* qc[NQ];
  for (int i = 0; i < NQ; ++i) qc[i] = q.c + (i0 + i) * a.n;
  for (int t0 = 0; t0 < a.n_rows; t0 += 4) {
    const uint8_t* tile = a.rows + (t0 / kT) * a.row_stride;
    const int quarter = t0 % kT / 4;
    float32x4_t s[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = vdupq_n_f32(0.0f);
    for (int b = 0; b < ng; ++b) {
      int32x4_t sums[NQ];
      group_sums<NQ, Q4>(tile + f.header_bytes() + 16 * quarter, qc, b, a.group, sums);
      const float32x4_t d = load_f32(tile + b * 64 + 16 * quarter);
      for (int i = 0; i < NQ; ++i) {
        const int g = (i0 + i) * ng + b;
        s[i] = vfmaq_f32(s[i], vcvtq_f32_s32(sums[i]), vmulq_n_f32(d, q.d[g]));
        if constexpr (Q4) s[i] = vfmaq_f32(s[i], load_f32(tile + (ng + b) * 64 + 16 * quarter), vdupq_n_f32(q.sum[g]));
      }
    }
    for (int i = 0; i < NQ; ++i) {
      float* out = a.scores + (i0 + i) * a.scores_stride + t0;
      if (a.n_rows - t0 >= 4) {
        vst1q_f32(out, s[i]);
      } else {
        float x[4];
        vst1q_f32(x, s[i]);
        std::copy_n(x, a.n_rows - t0, out);
      }
    }
  }
}

template <bool Q4>
void dot_tiles(const DotArgs& a) {
  for_query_groups(a.n_q, [&](auto nq, int i0) { dot_nq<nq(), Q4>(a, i0); });
}

// Weights of one kAccChunk run, computed as scalar::acc_tiles_run does (a 1/G share of the work):
// w[i][b][t] = round(p d / sw), zero past the run's tokens; sw the weight scale, msum = Σ p m (q4).
template <int NQ>
struct RunWeights {
  int16_t w[NQ][scalar::kMaxRow / 8][kAccChunk];
  float sw[NQ][scalar::kMaxRow / 8];
  float msum[NQ][scalar::kMaxRow / 8];
};

template <int NQ, bool Q4>
void run_weights(const AccArgs& a, int i0, int t0, int t1, RunWeights<NQ>& r) {
  const kv::TileFormat f{kv::TileRole::kValue, Q4, a.n, a.group};
  const auto tile_of = [&](int t) { return a.rows + (t / kT) * a.row_stride; };
  for (int b = 0; b < f.n_groups(); ++b) {
    float dmax = 0;
    for (int t = t0; t < t1; ++t) dmax = std::max(dmax, std::fabs(kv::tile_scale(tile_of(t), b, t % kT)));
    for (int i = 0; i < NQ; ++i) {
      const float* p = a.p + (i0 + i) * a.p_stride;
      float pmax = 0, msum = 0;
      for (int t = t0; t < t1; ++t) pmax = std::max(pmax, std::fabs(p[t]));
      const float range = pmax * dmax, inv = range > 0 ? 32767.0f / range : 0.0f;
      r.sw[i][b] = range / 32767.0f;
      std::fill_n(r.w[i][b], kAccChunk, int16_t{0});
      for (int t = t0; t < t1; ++t) {
        r.w[i][b][t - t0] = static_cast<int16_t>(std::nearbyint(p[t] * kv::tile_scale(tile_of(t), b, t % kT) * inv));
        if constexpr (Q4) msum += p[t] * kv::tile_min(f, tile_of(t), b, t % kT);
      }
      r.msum[i][b] = msum;
    }
  }
}

// Codes of 8 dims of the token pair `pair` as int16: [0] token 2 pair, [1] token 2 pair + 1.
template <bool Q4>
inline int16x8x2_t pair_codes(const uint8_t* codes, int n, int pair, int col) {
  if constexpr (Q4) {
    const uint8x8_t x = vld1_u8(codes + pair * n + col * 8);
    return {{vreinterpretq_s16_u16(vmovl_u8(vand_u8(x, vdup_n_u8(15)))), vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(x, 4)))}};
  } else {
    const int8x8x2_t x = vld2_s8(reinterpret_cast<const int8_t*>(codes + pair * 2 * n + col * 16));
    return {{vmovl_s8(x.val[0]), vmovl_s8(x.val[1])}};
  }
}

// One kAccChunk run of value tiles: per 8-dim column the int32 sums over tokens, then
// o = fma(sum, sw, o) (+ Σ p m for q4).
template <int NQ, bool Q4>
void acc_run(const AccArgs& a, int i0, int t0, int t1) {
  const kv::TileFormat f{kv::TileRole::kValue, Q4, a.n, a.group};
  const int n_tiles = (t1 - t0 + kT - 1) / kT;
  const uint8_t* tiles = a.rows + (t0 / kT) * a.row_stride;
  RunWeights<NQ> r;
  run_weights<NQ, Q4>(a, i0, t0, t1, r);
  for (int col = 0; col < a.n / 8; ++col) {
    const int b = col * 8 / a.group;
    int32x4_t acc[NQ][2];
    for (int i = 0; i < NQ; ++i) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
    for (int k = 0; k < n_tiles; ++k) {
      const uint8_t* codes = tiles + k * a.row_stride + f.header_bytes();
      for (int pair = 0; pair < kT / 2; ++pair) {
        const int16x8x2_t v = pair_codes<Q4>(codes, a.n, pair, col);
        for (int i = 0; i < NQ; ++i) {
          const int16_t* w = &r.w[i][b][k * kT + 2 * pair];
          for (int e = 0; e < 2; ++e) {
            acc[i][0] = vmlal_n_s16(acc[i][0], vget_low_s16(v.val[e]), w[e]);
            acc[i][1] = vmlal_n_s16(acc[i][1], vget_high_s16(v.val[e]), w[e]);
          }
        }
      }
    }
    for (int i = 0; i < NQ; ++i) {
      float* o = a.acc + (i0 + i) * a.acc_stride + col * 8;
      for (int h = 0; h < 2; ++h) {
        const float32x4_t res = vfmaq_n_f32(vld1q_f32(o + 4 * h), vcvtq_f32_s32(acc[i][h]), r.sw[i][b]);
        vst1q_f32(o + 4 * h, Q4 ? vaddq_f32(res, vdupq_n_f32(r.msum[i][b])) : res);
      }
    }
  }
}

template <bool Q4>
void acc_tiles(const AccArgs& a) {
  for (int t0 = 0; t0 < a.n_rows; t0 += kAccChunk) {
    const int t1 = std::min(a.n_rows, t0 + kAccChunk);
    for_query_groups(a.n_q, [&](auto nq, int i0) { acc_run<nq(), Q4>(a, i0, t0, t1); });
  }
}

// Codes of 8 dims [8 col, 8 col + 8) of token t of a tile as int16 lanes.
template <kv::TileRole R, bool Q4>
inline int16x8_t token_codes(const uint8_t* codes, int n, int t, int col) {
  uint32_t w[2];
  if constexpr (R == kv::TileRole::kKey && Q4) {  // dims 8 col + e in low nibbles, + 4 + e in high
    std::memcpy(&w[0], codes + col * 64 + t * 4, sizeof w[0]);
    const uint8x8_t x = vreinterpret_u8_u32(vdup_n_u32(w[0]));
    const int8x8_t shift = vreinterpret_s8_u32(vset_lane_u32(0xfcfcfcfcu, vdup_n_u32(0), 1));  // 0 x4, -4 x4
    return vreinterpretq_s16_u16(vmovl_u8(vand_u8(vshl_u8(x, shift), vdup_n_u8(15))));
  } else if constexpr (R == kv::TileRole::kKey) {
    std::memcpy(&w[0], codes + 2 * col * 64 + t * 4, sizeof w[0]);
    std::memcpy(&w[1], codes + (2 * col + 1) * 64 + t * 4, sizeof w[1]);
    return vmovl_s8(vreinterpret_s8_u32(vld1_u32(w)));
  } else if constexpr (Q4) {  // token 2p in low nibbles, 2p + 1 in high
    const uint8x8_t x = vld1_u8(codes + t / 2 * n + col * 8);
    return vreinterpretq_s16_u16(vmovl_u8(vand_u8(vshl_u8(x, vdup_n_s8(static_cast<int8_t>(-4 * (t % 2)))), vdup_n_u8(15))));
  } else {  // dims interleaved with the other token of the pair
    const int8x8x2_t x = vld2_s8(reinterpret_cast<const int8_t*>(codes + t / 2 * 2 * n + col * 16));
    return vmovl_s8(t % 2 ? x.val[1] : x.val[0]);
  }
}

// x [16][n] = d * code (q8) or m + d * code (q4) as kv::tile_load_row, which GCC compiles to a
// fused multiply-add on aarch64 (-ffp-contract=fast), as here.
template <kv::TileRole R, bool Q4>
void dequantize_tile(const uint8_t* tile, int n, int group, float* x) {
  const kv::TileFormat f{R, Q4, n, group};
  const uint8_t* codes = tile + f.header_bytes();
  for (int t = 0; t < kT; ++t) {
    for (int col = 0; col < n / 8; ++col) {
      const int b = col * 8 / group;
      const int16x8_t c = token_codes<R, Q4>(codes, n, t, col);
      const float d = kv::tile_scale(tile, b, t);
      for (int h = 0; h < 2; ++h) {
        const float32x4_t cf = vcvtq_f32_s32(vmovl_s16(h ? vget_high_s16(c) : vget_low_s16(c)));
        const float32x4_t v = Q4 ? vfmaq_n_f32(vdupq_n_f32(kv::tile_min(f, tile, b, t)), cf, d) : vmulq_n_f32(cf, d);
        vst1q_f32(x + t * n + col * 8 + 4 * h, v);
      }
    }
  }
}

}  // namespace

void install(Kernels& t) {
  t.dot[static_cast<int>(Codec::kQ8)] = dot_tiles<false>;
  t.dot[static_cast<int>(Codec::kQ4)] = dot_tiles<true>;
  t.acc[static_cast<int>(Codec::kQ8)] = acc_tiles<false>;
  t.acc[static_cast<int>(Codec::kQ4)] = acc_tiles<true>;
  t.dequantize_tile[0][0] = dequantize_tile<kv::TileRole::kKey, false>;
  t.dequantize_tile[0][1] = dequantize_tile<kv::TileRole::kKey, true>;
  t.dequantize_tile[1][0] = dequantize_tile<kv::TileRole::kValue, false>;
  t.dequantize_tile[1][1] = dequantize_tile<kv::TileRole::kValue, true>;
}

}  // namespace kvrt::simd::neon::tiles
