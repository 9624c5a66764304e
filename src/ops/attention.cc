// Attention entry point and the decode path: a few query tokens, all query heads of a kv head
// at once, online softmax over tiles of kTile positions read straight from the packed cache.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "ops/attention_internal.h"
#include "ops/decode_size.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

constexpr int kPrefillRows = 64;  // query rows (tokens x group heads) per prefill block

}  // namespace

namespace {

// Sizes of one thread's buffers (ThreadScratch), for the constructor and bytes_for alike.
struct ThreadSizes {
  int prefill_tokens;        // query tokens per prefill block
  int rows;                  // query rows handled together, padded to kGemmRows
  size_t q, s, x, group_hd;  // floats of q and o, s, x, the per-group-head buffers
  size_t pairs;              // bf16 pairs of Q [head_dim / 2][rows] and P [kTile / 2][rows]
  int group;

  ThreadSizes(const kv::CacheShape& shape, int n_heads) {
    group = n_heads / shape.n_kv_heads;
    prefill_tokens = std::max(1, kPrefillRows / group);
    rows = (std::max(group, prefill_tokens * group) + simd::kGemmRows - 1) / simd::kGemmRows *
           simd::kGemmRows;
    q = static_cast<size_t>(rows) * shape.head_dim;
    s = static_cast<size_t>(rows) * kTile;
    x = static_cast<size_t>(shape.head_dim) * kTile;
    group_hd = static_cast<size_t>(group) * shape.head_dim;  // head_dim / G <= head_dim groups
    pairs = (q + s) / 2;
  }
  size_t bytes()
      const {  // q, o; s; m, l; x; qc_d, qc_sum (floats), qc (int8), qc_csum (int32), pairs
    return (2 * q + s + 2 * size_t(rows) + x + 2 * group_hd) * sizeof(float) +
           pairs * sizeof(uint32_t) + group_hd * (sizeof(int8_t) + sizeof(int32_t));
  }
};

}  // namespace

AttentionScratch::AttentionScratch(const kv::CacheShape& shape, int n_heads, int max_tokens,
                                   int n_threads, bool bf16_prefill)
    : AttentionScratch(shape, n_heads, max_tokens,
                       std::make_shared<ThreadPool>(std::max(1, n_threads)), bf16_prefill) {}

AttentionScratch::AttentionScratch(const kv::CacheShape& shape, int n_heads, int max_tokens,
                                   std::shared_ptr<ThreadPool> pool, bool bf16_prefill)
    : impl_(std::make_unique<Impl>()) {
  KVRT_ASSERT(pool && n_heads > 0 && max_tokens > 0 && n_heads % shape.n_kv_heads == 0);
  const ThreadSizes z(shape, n_heads);
  Impl& s = *impl_;
  s.n_threads = pool->n_threads();
  s.pool = std::move(pool);
  const int n_threads = s.n_threads;
  s.prefill_tokens = z.prefill_tokens;
  s.max_rows = z.rows;
  s.threads.resize(n_threads);
  for (ThreadScratch& t : s.threads) {
    t.q.assign(z.q, 0.0f);
    t.s.assign(z.s, 0.0f);
    t.m.assign(z.rows, 0.0f);
    t.l.assign(z.rows, 0.0f);
    t.o.assign(z.q, 0.0f);
    t.x.assign(z.x, 0.0f);
    t.pairs.assign(z.pairs, 0);
    t.qc.assign(z.group_hd, 0);
    t.qc_d.assign(z.group_hd, 0.0f);
    t.qc_sum.assign(z.group_hd, 0.0f);
    t.qc_csum.assign(z.group_hd, 0);
  }
  if (bf16_prefill) s.staged.assign(staged_pairs_size(shape), 0);
  simd::kernels();  // decide the ISA now, not inside the first decode step
}

size_t AttentionScratch::bytes_for(const kv::CacheShape& shape, int n_heads, int n_threads,
                                   bool bf16_prefill) {
  return ThreadSizes(shape, n_heads).bytes() * size_t(n_threads) +
         (bf16_prefill ? staged_pairs_size(shape) * sizeof(uint32_t) : 0);
}

size_t AttentionScratch::bytes_allocated() const {
  size_t n = impl_->staged.size() * sizeof(uint32_t);
  for (const ThreadScratch& t : impl_->threads) {
    n += (t.q.size() + t.s.size() + t.m.size() + t.l.size() + t.o.size() + t.x.size() +
          t.qc_d.size() + t.qc_sum.size()) *
             sizeof(float) +
         t.qc.size() * sizeof(int8_t) + t.qc_csum.size() * sizeof(int32_t) +
         t.pairs.size() * sizeof(uint32_t);
  }
  return n;
}

AttentionScratch::~AttentionScratch() = default;

namespace {

// max(s[0 .. n)) over 8 independent running maxima: one chain of n dependent compares cost the
// decode step ~8% at 1k context (AMD Zen 4).
float row_max(const float* s, int n) {
  float m[8];
  std::fill(m, m + 8, -INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int e = 0; e < 8; ++e) m[e] = std::max(m[e], s[j + e]);
  }
  for (; j < n; ++j) m[0] = std::max(m[0], s[j]);
  return *std::max_element(m, m + 8);
}

// Online softmax update of rows [0, n_q) with the scores of n positions in ts.s (row stride
// kTile): rescales o and l to the new maximum and turns the scores into probabilities.
void softmax_step(ThreadScratch& ts, int n_q, int n, int hd) {
  const simd::Kernels& k = simd::kernels();
  for (int i = 0; i < n_q; ++i) {
    float* s = ts.s.data() + i * kTile;
    const float tile_max = row_max(s, n);
    if (tile_max == -INFINITY) {
      std::fill(s, s + n, 0.0f);
      continue;
    }
    const float m_new = std::max(ts.m[i], tile_max);
    const float corr = std::exp(ts.m[i] - m_new);
    if (corr != 1.0f) {
      for (int d = 0; d < hd; ++d) ts.o[i * hd + d] *= corr;
    }
    ts.l[i] = ts.l[i] * corr + k.exp_sum(s, n, m_new);
    ts.m[i] = m_new;
  }
}

// Query token t of the call, all `group` heads of one kv head.
void decode_item(const kv::KvCache& cache, const AttentionArgs& a, int kv_head, int t,
                 ThreadScratch& ts) {
  const kv::HeadView view = cache.view(a.layer, kv_head);
  const int hd = view.head_dim, group = a.n_heads / cache.shape().n_kv_heads;
  const int pos = a.pos0 + t, n_pos = pos + 1;
  const size_t q_off = (static_cast<size_t>(t) * a.n_heads + kv_head * group) * hd;
  const float scale = query_scale(a, hd);
  for (int i = 0; i < group; ++i)
    prepare_query(view, scale, a.q + q_off + i * hd, ts.q.data() + i * hd);
  prepare_query_codes(view, ts.q.data(), group, ts);
  std::fill(ts.m.begin(), ts.m.begin() + group, -INFINITY);
  std::fill(ts.l.begin(), ts.l.begin() + group, 0.0f);
  std::fill(ts.o.begin(), ts.o.begin() + static_cast<size_t>(group) * hd, 0.0f);
  for (int j0 = chunk_start(view, first_key(a, pos)), j1; j0 < n_pos; j0 = j1) {
    j1 = chunk_end(view, j0, n_pos);
    const int next_end = j1 < n_pos ? chunk_end(view, j1, n_pos) : j1;
    prefetch_packed(view.k, j1, next_end);
    prefetch_packed(view.v, j1, next_end);
    k_scores(view, ts.q.data(), group, j0, j1, ts.s.data(), ts);
    for (int i = 0; i < group; ++i) finish_scores(a, pos, j0, ts.s.data() + i * kTile, j1 - j0);
    softmax_step(ts, group, j1 - j0, hd);
    v_accumulate(view, ts.s.data(), group, j0, j1, ts.o.data());
  }
  for (int i = 0; i < group; ++i)
    finish_row(view, ts.o.data() + i * hd, ts.l[i], a.out + q_off + i * hd);
}

}  // namespace

float query_scale(const AttentionArgs& a, int head_dim) {
  return a.q_scale > 0.0f ? a.q_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

int first_key(const AttentionArgs& a, int pos) {
  return a.window > 0 ? std::max(0, pos - a.window + 1) : 0;
}

void finish_scores(const AttentionArgs& a, int pos, int j0, float* s, int n) {
  const int lo = std::clamp(first_key(a, pos) - j0, 0, n), hi = std::clamp(pos + 1 - j0, 0, n);
  if (a.softcap > 0.0f) {  // as llama.cpp: scale by 1/cap, tanh, scale by cap
    const float inv = 1.0f / a.softcap;
    for (int j = lo; j < hi; ++j) s[j] = a.softcap * std::tanh(s[j] * inv);
  }
  std::fill(s, s + lo, -INFINITY);
  std::fill(s + hi, s + n, -INFINITY);
}

void attention(const kv::KvCache& cache, const AttentionArgs& args, AttentionScratch& scratch) {
  AttentionScratch::Impl& s = scratch.impl();
  const int n_kv_heads = cache.shape().n_kv_heads;
  KVRT_ASSERT(args.n_heads % n_kv_heads == 0);
  KVRT_ASSERT(args.pos0 + args.n_tokens <= cache.length(args.layer));
  if (args.n_tokens > kDecodeMaxTokens) {
    attention_prefill(cache, args, s);
    return;
  }
  s.pool->run(args.n_tokens * n_kv_heads, [&](int64_t item, int t) {
    decode_item(cache, args, int(item % n_kv_heads), int(item / n_kv_heads), s.threads[size_t(t)]);
  });
}

}  // namespace kvrt::ops
