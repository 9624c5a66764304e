// Reading K and V of one kv head through the cache's read view: FP32 sink rows, packed rows,
// token tiles, channel tiles and the FP32 residual ring. A chunk of packed positions is read in
// one call: a sliding-window layer's ring of tiles never wraps inside one (kv::kRingAlign).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kv/rotation.h"
#include "ops/attention_internal.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

using kv::Packing;
using kv::SideView;

// Calls f(first position, run length, rows pointer, row stride) for each contiguous run of the
// residual ring covering [j0, j1).
template <class F>
void for_ring_runs(const SideView& s, int j0, int j1, F f) {
  while (j0 < j1) {
    const int run = s.ring_run(j0, j1);
    f(j0, run, reinterpret_cast<const uint8_t*>(s.ring_row(j0)), s.ring_stride * sizeof(float));
    j0 += run;
  }
}

}  // namespace

void k_scores(const kv::HeadView& v, const float* q, int n_q, int j0, int j1, float* scores,
              ThreadScratch& ts) {
  const SideView& s = v.k;
  const int hd = v.head_dim;
  const simd::Kernels& k = simd::kernels();
  const simd::FormatKernels& fk = k.format[static_cast<int>(s.format().format)];
  // Scores of the n rows of positions [j, j + n) at `rows`, `group` values per block (0: FP32).
  const auto args = [&](int j, int n, const uint8_t* rows, size_t row_stride, int group) {
    return simd::DotArgs{.q = q,
                         .n_q = n_q,
                         .q_stride = static_cast<size_t>(hd),
                         .rows = rows,
                         .row_stride = row_stride,
                         .n_rows = n,
                         .n = hd,
                         .group = group,
                         .scores = scores + (j - j0),
                         .scores_stride = kTile};
  };
  const int p0 = std::max(j0, s.n_sinks()), p1 = std::min(j1, s.n_packed);
  if (j0 < std::min(j1, s.n_sinks())) {
    const int n = std::min(j1, s.n_sinks()) - j0;
    k.dot(args(j0, n, reinterpret_cast<const uint8_t*>(s.sink_row(j0)),
               s.sink_stride * sizeof(float), 0));
  }
  if (s.packing() == Packing::kChannelTiles) {
    // one call per run of consecutive tiles (a ring may wrap once)
    for (int j = p0, n; j < p1; j += n) {
      n = s.consecutive_run(j, p1);
      simd::DotArgs a = args(j, n, s.tile_of(j), s.tile_stride, v.group);
      a.first = s.packed_index(j) % v.group;
      fk.dot_channel(a);
    }
  } else if (p0 < p1 && s.packing() == Packing::kRows) {
    KVRT_ASSERT(s.consecutive(p0, p1));
    k.dot(args(p0, p1 - p0, s.tile_of(p0), s.tile_stride, v.group));
  } else if (p0 < p1) {
    KVRT_ASSERT(s.packed_index(p0) % kv::kTileTokens == 0 && s.consecutive(p0, p1));
    simd::DotArgs a = args(p0, p1 - p0, s.tile_of(p0), s.tile_stride, v.group);
    a.qc = &ts.codes;
    fk.dot(a);
  }
  if (std::max(j0, s.n_packed) < j1) {
    for_ring_runs(
        s, std::max(j0, s.n_packed), j1,
        [&](int j, int n, const uint8_t* rows, size_t rs) { k.dot(args(j, n, rows, rs, 0)); });
  }
}

void v_accumulate(const kv::HeadView& v, const float* p, int n_q, int j0, int j1, float* o) {
  const SideView& s = v.v;
  const int hd = v.head_dim;
  const simd::Kernels& k = simd::kernels();
  // o += the probabilities of positions [j, j + n) times the n rows at `rows` (group 0: FP32).
  const auto args = [&](int j, int n, const uint8_t* rows, size_t row_stride, int group) {
    return simd::AccArgs{.p = p + (j - j0),
                         .n_q = n_q,
                         .p_stride = kTile,
                         .rows = rows,
                         .row_stride = row_stride,
                         .n_rows = n,
                         .n = hd,
                         .group = group,
                         .acc = o,
                         .acc_stride = static_cast<size_t>(hd)};
  };
  const int p0 = std::max(j0, s.n_sinks()), p1 = std::min(j1, s.n_packed);
  if (j0 < std::min(j1, s.n_sinks())) {
    const int n = std::min(j1, s.n_sinks()) - j0;
    k.acc(args(j0, n, reinterpret_cast<const uint8_t*>(s.sink_row(j0)),
               s.sink_stride * sizeof(float), 0));
  }
  if (p0 < p1) {
    KVRT_ASSERT(s.consecutive(p0, p1));
    const simd::AccArgs a = args(p0, p1 - p0, s.tile_of(p0), s.tile_stride, v.group);
    if (s.packing() == Packing::kRows) {
      k.acc(a);
    } else {
      KVRT_ASSERT(s.packed_index(p0) % kv::kTileTokens == 0);
      k.format[static_cast<int>(s.format().format)].acc(a);
    }
  }
  if (std::max(j0, s.n_packed) < j1) {
    for_ring_runs(
        s, std::max(j0, s.n_packed), j1,
        [&](int j, int n, const uint8_t* rows, size_t rs) { k.acc(args(j, n, rows, rs, 0)); });
  }
}

void prefetch_packed(const SideView& s, int j0, int j1) {
  const int p1 = std::min(j1, s.n_packed), t = s.tile_tokens();
  for (int j = std::max(j0, s.n_sinks()), n; j < p1;
       j += n) {  // runs of consecutive tiles (a ring may wrap once)
    n = s.consecutive_run(j, p1);
    const uint8_t* tile = s.tile_of(j);
    for (int k = (s.packed_index(j) % t + n + t - 1) / t; k > 0; --k, tile += s.tile_stride) {
      for (size_t off = 0; off < s.tile_bytes(); off += 64) __builtin_prefetch(tile + off, 0, 2);
    }
  }
}

void load_rows(const kv::HeadView& v, const SideView& s, int j0, int j1, float* x) {
  const int hd = v.head_dim, g = v.group;
  const kv::FormatTraits& f = s.format();
  const auto dequantize_tile = simd::kernels()
                                   .format[static_cast<int>(f.format)]
                                   .dequantize_tile[static_cast<int>(s.role())];
  for (int j = j0; j < j1; ++j) {
    float* dst = x + static_cast<size_t>(j - j0) * hd;
    if (j >= s.n_packed) {
      std::memcpy(dst, s.ring_row(j), sizeof(float) * hd);
    } else if (j < s.n_sinks()) {
      std::memcpy(dst, s.sink_row(j), sizeof(float) * hd);
    } else if (s.packing() == Packing::kChannelTiles) {
      f.channel_dequantize_row(s.tile_of(j), s.packed_index(j) % g, hd, dst);
    } else if (s.packing() == Packing::kRows) {
      std::memcpy(dst, s.tile_of(j), sizeof(float) * hd);
    } else if (s.packed_index(j) % kv::kTileTokens ==
               0) {  // whole tiles: x has room for them (chunks start on a tile, kTile rows)
      KVRT_ASSERT(j - j0 + kv::kTileTokens <= kTile);
      dequantize_tile(s.tile_of(j), hd, g, dst);
    }
  }
}

void prepare_query_codes(const kv::HeadView& v, const float* q, int n_q, ThreadScratch& ts) {
  if (v.k.packing() != Packing::kTokenTiles) return;
  const simd::QueryBuffers b{
      .c = ts.qc.data(), .d = ts.qc_d.data(), .sum = ts.qc_sum.data(), .csum = ts.qc_csum.data()};
  simd::kernels().quantize_queries(q, n_q, v.head_dim, v.head_dim, v.group, b);
  ts.codes = b.view();
}

void prepare_query(const kv::HeadView& v, float scale, const float* q, float* dst) {
  const int hd = v.head_dim;
  for (int d = 0; d < hd; ++d) dst[d] = q[d] * scale;
  kv::rotate_row(dst, hd, v.k.rot_block());
}

void finish_row(const kv::HeadView& v, const float* o, float l, float* out) {
  const int hd = v.head_dim;
  const float inv = 1.0f / l;
  for (int d = 0; d < hd; ++d) out[d] = o[d] * inv;
  kv::rotate_row(out, hd, v.v.rot_block());  // H is symmetric and orthonormal: H⁻¹ = H
}

}  // namespace kvrt::ops
