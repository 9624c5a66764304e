// Reading K and V of one kv head: packed token rows, channel tiles and the FP32 residual ring.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"

#include "kv/channel_tile.h"
#include "ops/attention_internal.h"
#include "simd/dispatch.h"
#include "simd/kernels_scalar.h"

namespace kvrt::ops {

namespace {

using kv::SideStore;

simd::Codec codec_of(kv::Format f) {
  return f == kv::Format::kQ8 ? simd::Codec::kQ8 : f == kv::Format::kQ4 ? simd::Codec::kQ4 : simd::Codec::kF32;
}

size_t token_stride(const HeadView& v, const SideStore& s) { return s.row_bytes * v.c->shape.n_kv_heads; }
size_t ring_stride(const HeadView& v) { return sizeof(float) * v.c->shape.n_kv_heads * v.c->shape.head_dim; }

// Calls f(first position, run length, rows pointer, row stride) for each contiguous run of the
// residual ring covering [j0, j1).
template <class F>
void for_ring_runs(const HeadView& v, const SideStore& s, int j0, int j1, F f) {
  while (j0 < j1) {
    const int run = std::min(j1 - j0, s.window - j0 % s.window);
    f(j0, run, reinterpret_cast<const uint8_t*>(v.c->ring_row(s, v.layer, j0, v.kv_head)), ring_stride(v));
    j0 += run;
  }
}

// Scores of channel-axis key tile positions [j0, j1) (inside one tile).
void channel_scores(const HeadView& v, const float* q, int n_q, int j0, int j1, float* scores, size_t stride, ThreadScratch& ts) {
  const SideStore& s = v.c->k;
  const int hd = v.c->shape.head_dim, g = v.c->group_size;
  const uint8_t* tile = v.c->tile(s, v.layer, j0 / g, v.kv_head);
  const auto* d = reinterpret_cast<const float*>(tile);  // [head_dim] scales, then [head_dim] minimums (q4)
  for (int i = 0; i < n_q; ++i) {
    float bias = 0;
    for (int c = 0; c < hd; ++c) {
      ts.qd[i * hd + c] = q[i * hd + c] * d[c];
      if (s.format == kv::Format::kQ4) bias += q[i * hd + c] * d[hd + c];
    }
    ts.bias[i] = bias;
  }
  const size_t row = kv::channel_code_row_bytes(s.format, hd);
  const uint8_t* codes = tile + kv::channel_codes_offset(s.format, hd) + (j0 % g) * row;
  const simd::Codec codec = s.format == kv::Format::kQ8 ? simd::Codec::kRaw8 : simd::Codec::kRaw4;
  simd::kernels().dot[static_cast<int>(codec)]({ts.qd.data(), n_q, static_cast<size_t>(hd), codes, row, j1 - j0, hd, g, scores, stride});
  for (int i = 0; i < n_q; ++i) {
    for (int j = 0; j < j1 - j0; ++j) scores[i * stride + j] += ts.bias[i];
  }
}

}  // namespace

void k_scores(const HeadView& v, const float* q, int n_q, int j0, int j1, float* scores, ThreadScratch& ts) {
  const SideStore& s = v.c->k;
  const int hd = v.c->shape.head_dim, n_packed = s.n_packed[v.layer];
  const simd::Kernels& k = simd::kernels();
  const size_t stride = kTile;
  const int p1 = std::min(j1, n_packed);
  if (s.per_channel) {
    const int g = v.c->group_size;
    for (int j = j0; j < p1; j = (j / g + 1) * g) {
      const int end = std::min(p1, (j / g + 1) * g);
      channel_scores(v, q, n_q, j, end, scores + (j - j0), stride, ts);
    }
  } else if (j0 < p1 && s.format == kv::Format::kF32) {
    k.dot[0]({q, n_q, static_cast<size_t>(hd), v.c->row(s, v.layer, j0, v.kv_head), token_stride(v, s), p1 - j0, hd,
              v.c->group_size, scores, stride});
  } else if (j0 < p1) {
    KVRT_ASSERT(j0 % kv::kTileTokens == 0);
    k.dot[static_cast<int>(codec_of(s.format))]({q, n_q, static_cast<size_t>(hd), v.c->token_tile(s, v.layer, j0, v.kv_head),
                                                v.c->tile_stride(s), p1 - j0, hd, v.c->group_size, scores, stride, &ts.codes});
  }
  if (std::max(j0, n_packed) < j1) {
    for_ring_runs(v, s, std::max(j0, n_packed), j1, [&](int j, int n, const uint8_t* rows, size_t rs) {
      k.dot[0]({q, n_q, static_cast<size_t>(hd), rows, rs, n, hd, 0, scores + (j - j0), stride});
    });
  }
}

void v_accumulate(const HeadView& v, const float* p, int n_q, int j0, int j1, float* o) {
  const SideStore& s = v.c->v;
  const int hd = v.c->shape.head_dim, n_packed = s.n_packed[v.layer];
  const simd::Kernels& k = simd::kernels();
  const int p1 = std::min(j1, n_packed);
  const bool tiled = s.format != kv::Format::kF32;
  KVRT_ASSERT(!tiled || j0 % kv::kTileTokens == 0);
  if (j0 < p1) {
    k.acc[static_cast<int>(codec_of(s.format))]({p, n_q, kTile, tiled ? v.c->token_tile(s, v.layer, j0, v.kv_head) : v.c->row(s, v.layer, j0, v.kv_head),
                                                tiled ? v.c->tile_stride(s) : token_stride(v, s), p1 - j0, hd, v.c->group_size, o,
                                                static_cast<size_t>(hd)});
  }
  if (std::max(j0, n_packed) < j1) {
    for_ring_runs(v, s, std::max(j0, n_packed), j1, [&](int j, int n, const uint8_t* rows, size_t rs) {
      k.acc[0]({p + (j - j0), n_q, kTile, rows, rs, n, hd, 0, o, static_cast<size_t>(hd)});
    });
  }
}

void load_rows(const HeadView& v, const SideStore& s, int j0, int j1, float* x) {
  const int hd = v.c->shape.head_dim, n_packed = s.n_packed[v.layer], g = v.c->group_size;
  const simd::Kernels& k = simd::kernels();
  const bool tiled = !s.per_channel && s.format != kv::Format::kF32;
  for (int j = j0; j < j1; ++j) {
    float* dst = x + static_cast<size_t>(j - j0) * hd;
    if (j >= n_packed) {
      std::memcpy(dst, v.c->ring_row(s, v.layer, j, v.kv_head), sizeof(float) * hd);
    } else if (s.per_channel) {
      kv::channel_tile_dequantize_row(s.format, v.c->tile(s, v.layer, j / g, v.kv_head), j % g, hd, dst);
    } else if (!tiled) {
      std::memcpy(dst, v.c->row(s, v.layer, j, v.kv_head), sizeof(float) * hd);
    } else if (j % kv::kTileTokens == 0) {  // whole tiles: x has room for them (j0 is tile-aligned, kTile rows)
      KVRT_ASSERT(j - j0 + kv::kTileTokens <= kTile);
      k.dequantize_tile[&s == &v.c->k ? 0 : 1][s.format == kv::Format::kQ4](v.c->token_tile(s, v.layer, j, v.kv_head), hd, g, dst);
    }
  }
}

void prepare_query_codes(const kv::KvCache::Impl& c, const float* q, int n_q, ThreadScratch& ts) {
  if (c.k.per_channel || c.k.format == kv::Format::kF32) return;
  simd::scalar::QueryBuffers b{ts.qc.data(), ts.qc_d.data(), ts.qc_sum.data(), ts.qc_csum.data()};
  simd::scalar::quantize_queries(q, n_q, c.shape.head_dim, c.shape.head_dim, c.group_size, b);
  ts.codes = b.view();
}

void prepare_query(const kv::KvCache::Impl& c, const float* q, float* dst) {
  const int hd = c.shape.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int d = 0; d < hd; ++d) dst[d] = q[d] * scale;
  if (c.k.rotated) simd::kernels().hadamard(dst, hd);
}

void finish_row(const kv::KvCache::Impl& c, const float* o, float l, float* out) {
  const int hd = c.shape.head_dim;
  const float inv = 1.0f / l;
  for (int d = 0; d < hd; ++d) out[d] = o[d] * inv;
  if (c.v.rotated) simd::kernels().hadamard(out, hd);  // H is symmetric and orthonormal: H⁻¹ = H
}

}  // namespace kvrt::ops
