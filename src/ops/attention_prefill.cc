// Prefill attention: blocks of query tokens x the heads of one kv head against tiles of kTile
// positions, each tile dequantized once into FP32 scratch and multiplied as small GEMMs.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "ops/attention_internal.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

void online_softmax_step(ThreadScratch& ts, int n_rows, int n, int hd);

namespace {

// K tile [j0, j1) transposed into ts.kt [head_dim][kTile], zero beyond j1.
void load_k_tile(const kv::HeadView& v, int j0, int j1, ThreadScratch& ts) {
  const int hd = v.head_dim;
  load_rows(v, v.k, j0, j1, ts.x.data());
  for (int d = 0; d < hd; ++d) {
    float* dst = ts.kt.data() + d * kTile;
    for (int j = 0; j < j1 - j0; ++j) dst[j] = ts.x[j * hd + d];
    std::fill(dst + (j1 - j0), dst + kTile, 0.0f);
  }
}

// Query block: tokens [t0, t1) of the call; row r = (t - t0) * group + head within the group.
void prefill_block(const kv::KvCache& cache, const AttentionArgs& a, int kv_head, int t0, int t1, ThreadScratch& ts) {
  const kv::HeadView view = cache.view(a.layer, kv_head);
  const int hd = view.head_dim, group = a.n_heads / cache.shape().n_kv_heads;
  const int n_rows = (t1 - t0) * group;
  const int padded = (n_rows + simd::kGemmRows - 1) / simd::kGemmRows * simd::kGemmRows;
  const simd::Kernels& k = simd::kernels();
  const float scale = query_scale(a, hd);
  for (int r = 0; r < n_rows; ++r) {
    const int t = t0 + r / group, h = kv_head * group + r % group;
    prepare_query(view, scale, a.q + (static_cast<size_t>(t) * a.n_heads + h) * hd, ts.q.data() + r * hd);
  }
  std::fill(ts.q.begin() + static_cast<size_t>(n_rows) * hd, ts.q.begin() + static_cast<size_t>(padded) * hd, 0.0f);
  std::fill(ts.m.begin(), ts.m.begin() + padded, -INFINITY);
  std::fill(ts.l.begin(), ts.l.begin() + padded, 0.0f);
  std::fill(ts.o.begin(), ts.o.begin() + static_cast<size_t>(padded) * hd, 0.0f);
  const int n_pos = a.pos0 + t1;  // the last query token sees keys before n_pos
  for (int j0 = chunk_start(view, first_key(a, a.pos0 + t0)), j1; j0 < n_pos; j0 = j1) {
    j1 = chunk_end(view, j0, n_pos);
    load_k_tile(view, j0, j1, ts);
    k.gemm_qk({ts.q.data(), ts.kt.data(), ts.s.data(), padded, hd, kTile});
    for (int r = 0; r < n_rows; ++r) {  // -inf beyond the chunk too: the sinks' chunks may end before n_pos
      float* s = ts.s.data() + r * kTile;
      finish_scores(a, a.pos0 + t0 + r / group, j0, s, j1 - j0);
      std::fill(s + (j1 - j0), s + kTile, -INFINITY);
    }
    online_softmax_step(ts, n_rows, kTile, hd);
    std::fill(ts.s.begin() + static_cast<size_t>(n_rows) * kTile, ts.s.begin() + static_cast<size_t>(padded) * kTile, 0.0f);
    load_rows(view, view.v, j0, j1, ts.x.data());
    std::fill(ts.x.begin() + static_cast<size_t>(j1 - j0) * hd, ts.x.begin() + static_cast<size_t>(kTile) * hd, 0.0f);
    k.gemm_pv({ts.s.data(), ts.x.data(), ts.o.data(), padded, hd, kTile});
  }
  for (int r = 0; r < n_rows; ++r) {
    const int t = t0 + r / group, h = kv_head * group + r % group;
    finish_row(view, ts.o.data() + r * hd, ts.l[r], a.out + (static_cast<size_t>(t) * a.n_heads + h) * hd);
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
