#include "ops/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "kv/kv_cache_impl.h"

namespace kvrt::ops {

struct AttentionScratch::Impl {
  int n_threads = 1;
  int n_ctx = 0;
  int head_dim = 0;
  std::vector<float> scores;  // [n_threads][n_ctx]
};

AttentionScratch::AttentionScratch(const kv::CacheShape& shape, int n_heads, int max_tokens, int n_threads)
    : impl_(std::make_unique<Impl>()) {
  KVRT_ASSERT(n_heads > 0 && max_tokens > 0 && n_threads > 0);
  impl_->n_threads = n_threads;
  impl_->n_ctx = shape.n_ctx;
  impl_->head_dim = shape.head_dim;
  impl_->scores.assign(static_cast<size_t>(n_threads) * shape.n_ctx, 0.0f);
}

AttentionScratch::~AttentionScratch() = default;

namespace {

// One query head over positions [0, n_pos) of an f32 cache; two passes (scores, then softmax·V).
void attend_f32(const kv::KvCache::Impl& c, int layer, int kv_head, const float* q, int n_pos,
                float* scores, float* out) {
  const int hd = c.shape.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  float max_score = -INFINITY;
  for (int j = 0; j < n_pos; ++j) {
    const float* k = reinterpret_cast<const float*>(c.row(c.k, layer, j, kv_head));  // [head_dim]
    float s = 0;
    for (int d = 0; d < hd; ++d) s += q[d] * k[d];
    scores[j] = s * scale;
    max_score = std::max(max_score, scores[j]);
  }
  float sum = 0;
  for (int j = 0; j < n_pos; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  std::fill(out, out + hd, 0.0f);
  for (int j = 0; j < n_pos; ++j) {
    const float* v = reinterpret_cast<const float*>(c.row(c.v, layer, j, kv_head));  // [head_dim]
    const float p = scores[j] / sum;
    for (int d = 0; d < hd; ++d) out[d] += p * v[d];
  }
}

}  // namespace

void attention(const kv::KvCache& cache, const AttentionArgs& args, AttentionScratch& scratch) {
  const kv::KvCache::Impl& c = cache.impl();
  AttentionScratch::Impl& s = scratch.impl();
  const int hd = c.shape.head_dim;
  const int group = args.n_heads / c.shape.n_kv_heads;
  KVRT_ASSERT(group * c.shape.n_kv_heads == args.n_heads);
  KVRT_ASSERT(args.pos0 + args.n_tokens <= c.length[args.layer]);
  const int n_items = args.n_tokens * args.n_heads;
#pragma omp parallel for num_threads(s.n_threads) schedule(dynamic, 1)
  for (int item = 0; item < n_items; ++item) {
    const int t = item / args.n_heads;
    const int h = item % args.n_heads;
    const size_t off = (static_cast<size_t>(t) * args.n_heads + h) * hd;
    float* scores = s.scores.data() + static_cast<size_t>(omp_get_thread_num()) * s.n_ctx;
    attend_f32(c, args.layer, h / group, args.q + off, args.pos0 + t + 1, scores, args.out + off);
  }
}

}  // namespace kvrt::ops
