// The neon-i8mm rung (ARMv8.6 int8 matrix multiply, compiled with -march=armv8.2-a+dotprod+i8mm):
// q·k over the key tiles of every quantized format with smmla. smmla multiplies a 2 x 8 int8
// matrix by the transpose of another into 2 x 2 int32 sums: here 2 tokens x 8 dims (two 4-dim
// chunks of a key tile, zipped per token) by 2 queries x the same 8 dims, twice the products of an
// sdot per instruction when a kv head serves two or more queries (GQA). 8 tokens per step; the
// integer sums are exact and the float steps those of every NEON rung (kv/qk_tiles_neon-inl.h).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kv/tiles.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"
#include "simd/kv/tile_loops.h"

namespace kvrt::simd::neon_i8mm {

namespace {

constexpr int kChunk = kv::kKeyLaneDims;  // dims of one token per 32-bit lane of a key tile

// The codes of queries [i0, i0 + NQ) as smmla's second operand: for each pair p of queries (the
// second zero when NQ is odd) and pair m of 4-dim chunks of group b, 16 bytes: query 2p's codes of
// chunks 2m and 2m + 1 of the group, then query 2p + 1's. A group of an odd number of chunks (q8
// with G = 8j + 4) pairs its last chunk with zeros.
template <int NQ>
struct QueryPairs {
  static constexpr int kPairs = (NQ + 1) / 2;
  int chunk_pairs;  // per group
  alignas(16) int8_t v[kPairs][scalar::kMaxRow / kChunk][16];

  QueryPairs(const DotArgs& a, int i0) : chunk_pairs((a.group / kChunk + 1) / 2) {
    const int chunks = a.group / kChunk;
    for (int p = 0; p < kPairs; ++p) {
      for (int b = 0; b < a.n / a.group; ++b) {
        for (int m = 0; m < chunk_pairs; ++m) {
          int8_t* out = v[p][b * chunk_pairs + m];
          std::memset(out, 0, 16);
          for (int h = 0; h < 2 && 2 * p + h < NQ; ++h) {
            for (int e = 0; e < 2 && 2 * m + e < chunks; ++e)
              std::memcpy(out + 8 * h + kChunk * e,
                          a.qc->c + (i0 + 2 * p + h) * a.n + b * a.group + kChunk * (2 * m + e),
                          kChunk);
          }
        }
      }
    }
  }
  int8x16_t at(int p, int b, int m) const { return vld1q_s8(v[p][b * chunk_pairs + m]); }
};

struct NeonMmla {
  static constexpr int kQuarters = 2;
  template <int NQ>
  using Queries = QueryPairs<NQ>;
};
using Tag = NeonMmla;

#include "simd/kv/qk_tiles_neon-inl.h"

// Integer sums of group b over 8 tokens for NQ queries. acc[p][r][h]: query pair p, quarter r,
// tokens 2h and 2h + 1 of it; lanes (token, query) = (2h, 2p), (2h, 2p + 1), (2h + 1, 2p), (2h + 1,
// 2p + 1).
template <int NQ, class F>
inline void group_sums(NeonMmla, const uint8_t* codes, const uint8_t* high,
                       const QueryPairs<NQ>& qp, int b, int group, int32x4_t (*sums)[2]) {
  constexpr int P = QueryPairs<NQ>::kPairs, k = F::kPerByte;
  int32x4_t acc[P][2][2];
  for (int p = 0; p < P; ++p)
    for (int r = 0; r < 2; ++r) acc[p][r][0] = acc[p][r][1] = vdupq_n_s32(0);
  // lo[r], hi[r]: chunks 2m and 2m + 1 of the group for the 4 tokens of quarter r.
  const auto mmla = [&](const int8x16_t* lo, const int8x16_t* hi, int m) {
    for (int r = 0; r < 2; ++r) {
      const int32x4_t l = vreinterpretq_s32_s8(lo[r]), h = vreinterpretq_s32_s8(hi[r]);
      const int8x16_t t01 = vreinterpretq_s8_s32(vzip1q_s32(l, h)),
                      t23 = vreinterpretq_s8_s32(vzip2q_s32(l, h));
      for (int p = 0; p < P; ++p) {
        const int8x16_t q = qp.at(p, b, m);
        acc[p][r][0] = vmmlaq_s32(acc[p][r][0], t01, q);
        acc[p][r][1] = vmmlaq_s32(acc[p][r][1], t23, q);
      }
    }
  };
  if constexpr (k == 1) {  // chunk c is run c
    const int c0 = b * group / kChunk, c1 = (b + 1) * group / kChunk;
    const auto run = [&](int c) {
      return vld1q_s8_x2(reinterpret_cast<const int8_t*>(codes + c * kRun));
    };
    int c = c0;
    for (; c + 1 < c1; c += 2) mmla(run(c).val, run(c + 1).val, (c - c0) / 2);
    if (c < c1)
      mmla(run(c).val, run(c).val,
           (c - c0) / 2);  // the last chunk of an odd count, with zero queries beside it
  } else {                 // chunk c is slot c % k of run c / k: pairs of slots of one run
    constexpr int dims = kChunk * k;
    const int j0 = b * group / dims;
    for (int j = j0; j < (b + 1) * group / dims; ++j) {
      const uint8x16x2_t v = vld1q_u8_x2(codes + j * kRun);
      const uint8x16_t h[2] = {high_bits<F>(high, j), high_bits<F>(high + 16, j)};
      for_slots<k / 2>([&](auto sp) {
        const int8x16_t lo[2] = {slot_codes<F, 2 * sp()>(v.val[0], h[0]),
                                 slot_codes<F, 2 * sp()>(v.val[1], h[1])};
        const int8x16_t hi[2] = {slot_codes<F, 2 * sp() + 1>(v.val[0], h[0]),
                                 slot_codes<F, 2 * sp() + 1>(v.val[1], h[1])};
        mmla(lo, hi, (j - j0) * k / 2 + sp());
      });
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < 2; ++r) {
      sums[2 * p][r] = vuzp1q_s32(acc[p][r][0], acc[p][r][1]);
      if (2 * p + 1 < NQ) sums[2 * p + 1][r] = vuzp2q_s32(acc[p][r][0], acc[p][r][1]);
    }
  }
}

}  // namespace

void install(Kernels& t) {
  for_each_format_slot(t,
                       [](auto f, FormatKernels& k) { k.dot = dot_tiles<NeonMmla, decltype(f)>; });
}

}  // namespace kvrt::simd::neon_i8mm
