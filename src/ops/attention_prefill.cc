// Prefill attention: blocks of query tokens x the heads of one kv head against tiles of kTile
// positions, each tile read as FP32 rows once (in place for the f32 cache, else dequantized into
// scratch) and multiplied as small GEMMs with the query rows in the vector lanes.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "ops/attention_internal.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

// Rows [j0, j1) of one side as FP32 rows: in place when they are FP32 rows at one stride (the f32
// cache), else dequantized into x. Sets *stride to the floats from one row to the next.
const float* tile_rows(const kv::HeadView& v, const kv::SideView& s, int j0, int j1, float* x, size_t* stride) {
  if (s.packing() == kv::Packing::kRows && j0 >= s.n_sinks() && j1 <= s.n_packed && s.consecutive(j0, j1)) {
    *stride = s.tile_stride / sizeof(float);
    return reinterpret_cast<const float*>(s.tile_of(j0));
  }
  load_rows(v, s, j0, j1, x);
  *stride = v.head_dim;
  return x;
}

// finish_scores on the columns of scores st [n][n_r] of keys [j0, j0 + n), row r being the query
// at position pos0 + r / group (r < n_rows); nothing to do when every row sees every key uncapped.
void finish_tile(const AttentionArgs& a, int pos0, int group, int n_rows, int n_r, int j0, int n, float* st) {
  if (a.softcap == 0.0f && j0 + n <= pos0 + 1 && first_key(a, pos0 + (n_rows - 1) / group) <= j0) return;
  float col[kTile];
  for (int r = 0; r < n_rows; ++r) {
    for (int j = 0; j < n; ++j) col[j] = st[j * n_r + r];
    finish_scores(a, pos0 + r / group, j0, col, n);
    for (int j = 0; j < n; ++j) st[j * n_r + r] = col[j];
  }
}

// The bf16 products (ThreadScratch::pairs): Q once per block, then each tile's K, P and V as pairs.
struct Bf16Tiles {
  const simd::Kernels& k;
  int hd, n_r;
  uint32_t *q, *keys, *values, *p;

  Bf16Tiles(const simd::Kernels& kernels, int head_dim, int rows, ThreadScratch& ts)
      : k(kernels), hd(head_dim), n_r(rows), q(ts.pairs.data()), keys(q + size_t(hd) / 2 * n_r),
        values(keys + size_t(kTile) * hd / 2), p(values + size_t(kTile) * hd / 2) {}
  // x0 .. x(n - 1), rows of `len` at `stride`, as n / 2 rounded up rows of pairs: (x0, x1), ...
  void pair_rows(const float* x, size_t stride, int n, int len, uint32_t* dst) const {
    for (int i = 0; i < n; i += 2) {
      k.bf16_pairs(x + i * stride, i + 1 < n ? x + (i + 1) * stride : nullptr, 1, len, dst + size_t(i / 2) * len);
    }
  }
  void queries(const float* qt) const { pair_rows(qt, n_r, hd, n_r, q); }
  void scores(const float* rows, size_t stride, int n, float* s) const {
    for (int j = 0; j < n; ++j) k.bf16_pairs(rows + j * stride, rows + j * stride + 1, 2, hd / 2, keys + size_t(j) * hd / 2);
    k.gemm_bf16({q, keys, size_t(hd) / 2, 1, s, n_r, n, hd / 2, false});
  }
  void accumulate(const float* probs, const float* rows, size_t stride, int n, float* o) const {
    pair_rows(probs, n_r, n, n_r, p);
    pair_rows(rows, stride, n, hd, values);
    k.gemm_bf16({p, values, 1, size_t(hd), o, n_r, hd, (n + 1) / 2, true});
  }
};

// Query block: tokens [t0, t1) of the call; row r = (t - t0) * group + head within the group,
// held in the lanes: queries ts.q [head_dim][n_r], scores ts.s [kTile][n_r], output ts.o [head_dim][n_r].
void prefill_block(const kv::KvCache& cache, const AttentionArgs& a, int kv_head, int t0, int t1, ThreadScratch& ts) {
  const kv::HeadView view = cache.view(a.layer, kv_head);
  const int hd = view.head_dim, group = a.n_heads / cache.shape().n_kv_heads;
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
  const int n_pos = a.pos0 + t1;  // the last query token sees keys before n_pos
  const bool bf16 = a.bf16 && hd % 2 == 0;
  const Bf16Tiles b(k, hd, n_r, ts);
  if (bf16) b.queries(ts.q.data());
  size_t stride;
  for (int j0 = chunk_start(view, first_key(a, a.pos0 + t0)), j1; j0 < n_pos; j0 = j1) {
    j1 = chunk_end(view, j0, n_pos);
    const int n = j1 - j0;
    const float* keys = tile_rows(view, view.k, j0, j1, ts.x.data(), &stride);
    if (bf16) b.scores(keys, stride, n, ts.s.data());
    else k.gemm({ts.q.data(), keys, stride, 1, ts.s.data(), n_r, n, hd, false});
    finish_tile(a, a.pos0 + t0, group, n_rows, n_r, j0, n, ts.s.data());
    k.softmax({ts.s.data(), ts.m.data(), ts.l.data(), ts.o.data(), n_r, n, hd});
    const float* values = tile_rows(view, view.v, j0, j1, ts.x.data(), &stride);
    if (bf16) b.accumulate(ts.s.data(), values, stride, n, ts.o.data());
    else k.gemm({ts.s.data(), values, 1, stride, ts.o.data(), n_r, hd, n, true});
  }
  for (int r = 0; r < n_rows; ++r) {
    const int t = t0 + r / group, h = kv_head * group + r % group;
    for (int d = 0; d < hd; ++d) row[d] = ts.o[d * n_r + r];
    finish_row(view, row, ts.l[r], a.out + (static_cast<size_t>(t) * a.n_heads + h) * hd);
  }
}

}  // namespace

void attention_prefill(const kv::KvCache& cache, const AttentionArgs& a, AttentionScratch::Impl& s) {
  const int bt = s.prefill_tokens, n_kv_heads = cache.shape().n_kv_heads;
  const int n_blocks = (a.n_tokens + bt - 1) / bt;
  const int n_items = n_blocks * n_kv_heads;
  // Later blocks see more positions: hand them out first so the threads finish together.
#pragma omp parallel for num_threads(s.n_threads) schedule(dynamic, 1)
  for (int item = 0; item < n_items; ++item) {
    const int block = n_blocks - 1 - item / n_kv_heads;
    const int t0 = block * bt, t1 = std::min(a.n_tokens, t0 + bt);
    prefill_block(cache, a, item % n_kv_heads, t0, t1, s.threads[omp_get_thread_num()]);
  }
}

}  // namespace kvrt::ops
