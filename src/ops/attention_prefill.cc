// Prefill attention: blocks of query tokens x the heads of one kv head against tiles of kTile
// positions, each tile read as FP32 rows (in place for the f32 cache, else dequantized into
// scratch) and multiplied as small GEMMs with the query rows in the vector lanes; in bf16, against
// the kv head's K and V converted to bf16 pairs once per call (StagedPairs).

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "ops/attention_internal.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

// Rows [j0, j1) of one side as FP32 rows: in place when they are FP32 rows at one stride (the f32
// cache), else dequantized into x. Sets *stride to the floats from one row to the next.
const float* tile_rows(const kv::HeadView& v, const kv::SideView& s, int j0, int j1, float* x,
                       size_t* stride) {
  if (s.packing() == kv::Packing::kRows && j0 >= s.n_sinks() && j1 <= s.n_packed &&
      s.consecutive(j0, j1)) {
    *stride = s.tile_stride / sizeof(float);
    return reinterpret_cast<const float*>(s.tile_of(j0));
  }
  load_rows(v, s, j0, j1, x);
  *stride = v.head_dim;
  return x;
}

// finish_scores on the columns of scores st [n][n_r] of keys [j0, j0 + n), row r being the query
// at position pos0 + r / group (r < n_rows); nothing to do when every row sees every key uncapped.
void finish_tile(const AttentionArgs& a, int pos0, int group, int n_rows, int n_r, int j0, int n,
                 float* st) {
  if (a.softcap == 0.0f && j0 + n <= pos0 + 1 && first_key(a, pos0 + (n_rows - 1) / group) <= j0)
    return;
  float col[kTile];
  for (int r = 0; r < n_rows; ++r) {
    for (int j = 0; j < n; ++j) col[j] = st[j * n_r + r];
    finish_scores(a, pos0 + r / group, j0, col, n);
    for (int j = 0; j < n; ++j) st[j * n_r + r] = col[j];
  }
}

// x0 .. x(n - 1), rows of `len` at `stride`, as n / 2 rounded up rows of bf16 pairs: (x0, x1), ...
void pair_rows(const simd::Kernels& k, const float* x, size_t stride, int n, int len,
               uint32_t* dst) {
  for (int i = 0; i < n; i += 2) {
    k.bf16_pairs(x + i * stride, i + 1 < n ? x + (i + 1) * stride : nullptr, 1, len,
                 dst + size_t(i / 2) * len);
  }
}

// The chunks chunk_start/chunk_end walk, numbered from position 0: the index of the chunk that
// starts at j0, and the start of chunk c.
int chunk_index(const kv::HeadView& v, int j0) {
  const int sinks = v.k.n_sinks();
  return j0 < sinks ? j0 / kTile : (sinks + kTile - 1) / kTile + (j0 - sinks) / kTile;
}
int chunk_begin(const kv::HeadView& v, int c) {
  const int sinks = v.k.n_sinks(), sink_chunks = (sinks + kTile - 1) / kTile;
  return c < sink_chunks ? c * kTile : sinks + (c - sink_chunks) * kTile;
}

// The bf16 prefill's K and V of one kv head, converted once per call: chunk c of the call's key
// range holds K as pairs along head_dim [kTile][head_dim / 2] (a key's row, row after row), then
// V as pairs of positions [head_dim][kValuePairs] (a channel's consecutive positions, channel
// after channel): the b operands of Q·Kᵀ and P·V, both rows of runs of pairs (b_k = 1), as AMX
// tiles load them. Converting per query block instead read the whole range again for every block
// of 16 tokens (a fifth of an 8k prefill's time).
struct StagedPairs {
  static constexpr int kValuePairs = kTile / 2;
  kv::HeadView view;
  int j_begin, n_pos;
  uint32_t* base;

  uint32_t* keys(int j0) const {
    return base +
           size_t(chunk_index(view, j0) - chunk_index(view, j_begin)) * kTile * view.head_dim;
  }
  uint32_t* values(int j0) const { return keys(j0) + size_t(kTile) * view.head_dim / 2; }
  int n_chunks() const { return chunk_index(view, n_pos - 1) - chunk_index(view, j_begin) + 1; }
  // Converts chunk c; x is a thread's [kTile][head_dim] floats.
  void stage(int c, float* x) const {
    const int hd = view.head_dim;
    const int j0 = chunk_begin(view, chunk_index(view, j_begin) + c);
    const int j1 = chunk_end(view, j0, n_pos), n = j1 - j0;
    const simd::Kernels& k = simd::kernels();
    size_t stride;
    const float* rows = tile_rows(view, view.k, j0, j1, x, &stride);
    uint32_t* key_pairs = keys(j0);
    for (int j = 0; j < n; ++j)
      k.bf16_pairs(rows + j * stride, rows + j * stride + 1, 2, hd / 2,
                   key_pairs + size_t(j) * hd / 2);
    rows = tile_rows(view, view.v, j0, j1, x, &stride);
    uint32_t* value_pairs = values(j0);
    for (int d = 0; d < hd; ++d) {
      uint32_t* dst = value_pairs + size_t(d) * kValuePairs;
      k.bf16_pairs(rows + d, rows + stride + d, int(2 * stride), n / 2, dst);
      if (n % 2) k.bf16_pairs(rows + (n - 1) * stride + d, nullptr, 1, 1, dst + n / 2);
    }
  }
};

// Query block: tokens [t0, t1) of the call; row r = (t - t0) * group + head within the group,
// held in the lanes: queries ts.q [head_dim][n_r], scores ts.s [kTile][n_r], output ts.o
// [head_dim][n_r]. With `staged` (the bf16 products) K and V come from its pairs, Q and P as pairs
// in ts.pairs.
void prefill_block(const kv::HeadView& view, const AttentionArgs& a, int n_kv_heads, int kv_head,
                   int t0, int t1, const StagedPairs* staged, ThreadScratch& ts) {
  const int hd = view.head_dim, group = a.n_heads / n_kv_heads;
  const int n_rows = (t1 - t0) * group;
  const int n_r = (n_rows + simd::kGemmRows - 1) / simd::kGemmRows * simd::kGemmRows;
  const simd::Kernels& k = simd::kernels();
  const float scale = query_scale(a, hd);
  float* row = ts.x.data();  // one query or output row
  std::fill(ts.q.begin(), ts.q.begin() + static_cast<size_t>(n_r) * hd, 0.0f);
  for (int r = 0; r < n_rows; ++r) {
    const int t = t0 + r / group, h = kv_head * group + r % group;
    prepare_query(view, scale, a.q + (static_cast<size_t>(t) * a.n_heads + h) * hd, row);
    for (int d = 0; d < hd; ++d) ts.q[d * n_r + r] = row[d];
  }
  std::fill(ts.m.begin(), ts.m.begin() + n_r, -INFINITY);
  std::fill(ts.l.begin(), ts.l.begin() + n_r, 0.0f);
  std::fill(ts.o.begin(), ts.o.begin() + static_cast<size_t>(n_r) * hd, 0.0f);
  uint32_t* q_pairs = ts.pairs.data();                 // [head_dim / 2][n_r]
  uint32_t* p_pairs = q_pairs + size_t(hd) / 2 * n_r;  // [kTile / 2][n_r]
  if (staged) pair_rows(k, ts.q.data(), n_r, hd, n_r, q_pairs);
  const int n_pos = a.pos0 + t1;  // the last query token sees keys before n_pos
  size_t stride;
  for (int j0 = chunk_start(view, first_key(a, a.pos0 + t0)), j1; j0 < n_pos; j0 = j1) {
    j1 = chunk_end(view, j0, n_pos);
    const int n = j1 - j0;
    if (staged) {
      k.gemm_bf16({.a = q_pairs,
                   .b = staged->keys(j0),
                   .b_i = size_t(hd) / 2,
                   .b_k = 1,
                   .c = ts.s.data(),
                   .n_r = n_r,
                   .n_i = n,
                   .n_kp = hd / 2,
                   .accumulate = false});
    } else {
      const float* keys = tile_rows(view, view.k, j0, j1, ts.x.data(), &stride);
      k.gemm({.a = ts.q.data(),
              .b = keys,
              .b_i = stride,
              .b_k = 1,
              .c = ts.s.data(),
              .n_r = n_r,
              .n_i = n,
              .n_k = hd,
              .accumulate = false});
    }
    finish_tile(a, a.pos0 + t0, group, n_rows, n_r, j0, n, ts.s.data());
    k.softmax({.s = ts.s.data(),
               .m = ts.m.data(),
               .l = ts.l.data(),
               .o = ts.o.data(),
               .n_r = n_r,
               .n_j = n,
               .n_d = hd});
    if (staged) {
      pair_rows(k, ts.s.data(), n_r, n, n_r, p_pairs);
      k.gemm_bf16({.a = p_pairs,
                   .b = staged->values(j0),
                   .b_i = StagedPairs::kValuePairs,
                   .b_k = 1,
                   .c = ts.o.data(),
                   .n_r = n_r,
                   .n_i = hd,
                   .n_kp = (n + 1) / 2,
                   .accumulate = true});
    } else {
      const float* values = tile_rows(view, view.v, j0, j1, ts.x.data(), &stride);
      k.gemm({.a = ts.s.data(),
              .b = values,
              .b_i = 1,
              .b_k = stride,
              .c = ts.o.data(),
              .n_r = n_r,
              .n_i = hd,
              .n_k = n,
              .accumulate = true});
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    const int t = t0 + r / group, h = kv_head * group + r % group;
    for (int d = 0; d < hd; ++d) row[d] = ts.o[d * n_r + r];
    finish_row(view, row, ts.l[r], a.out + (static_cast<size_t>(t) * a.n_heads + h) * hd);
  }
}

}  // namespace

size_t staged_pairs_size(const kv::CacheShape& shape) {
  const int most_chunks = (shape.n_ctx + kTile - 1) / kTile + 1;  // the sinks' end may split one
  return size_t(most_chunks) * kTile * shape.head_dim;
}

void attention_prefill(const kv::KvCache& cache, const AttentionArgs& a,
                       AttentionScratch::Impl& s) {
  const int bt = s.prefill_tokens, n_kv_heads = cache.shape().n_kv_heads;
  const int n_blocks = (a.n_tokens + bt - 1) / bt;
  if (!a.bf16 || cache.shape().head_dim % 2 != 0) {
    // Later blocks see more positions: hand them out first so the threads finish together.
    s.pool->run(n_blocks * n_kv_heads, [&](int64_t item, int t) {
      const int block = n_blocks - 1 - int(item / n_kv_heads), kv_head = int(item % n_kv_heads);
      const int t0 = block * bt, t1 = std::min(a.n_tokens, t0 + bt);
      prefill_block(cache.view(a.layer, kv_head), a, n_kv_heads, kv_head, t0, t1, nullptr,
                    s.threads[size_t(t)]);
    });
    return;
  }
  KVRT_ASSERT(s.staged.size() >=
              staged_pairs_size(cache.shape()));  // a scratch made for bf16 prefill
  // One kv head at a time: the threads stage its K and V as pairs, then share its query blocks.
  for (int kv_head = 0; kv_head < n_kv_heads; ++kv_head) {
    const kv::HeadView view = cache.view(a.layer, kv_head);
    const StagedPairs staged{view, chunk_start(view, first_key(a, a.pos0)), a.pos0 + a.n_tokens,
                             s.staged.data()};
    s.pool->run(staged.n_chunks(),
                [&](int64_t c, int t) { staged.stage(int(c), s.threads[size_t(t)].x.data()); });
    s.pool->run(n_blocks, [&](int64_t i, int t) {
      const int t0 = (n_blocks - 1 - int(i)) * bt, t1 = std::min(a.n_tokens, t0 + bt);
      prefill_block(view, a, n_kv_heads, kv_head, t0, t1, &staged, s.threads[size_t(t)]);
    });
  }
}

}  // namespace kvrt::ops
