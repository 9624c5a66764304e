// Causal multi-head attention (GQA) of new query tokens over a layer of the KV cache.
#pragma once

#include <cstddef>
#include <memory>

#include "common/thread_pool.h"
#include "kv/kv_cache.h"

namespace kvrt::ops {

// Scratch buffers for attention, sized once for (n_ctx, max tokens per call, heads); with
// bf16_prefill also for AttentionArgs::bf16 (one kv head's K and V of up to n_ctx positions as
// bf16 pairs: n_ctx x head_dim x 4 bytes).
class AttentionScratch {
 public:
  // Attention runs on the threads of `pool` (a session's, shared with its products), or of a
  // pool of n_threads of its own.
  AttentionScratch(const kv::CacheShape& shape, int n_heads, int max_tokens,
                   std::shared_ptr<ThreadPool> pool, bool bf16_prefill = false);
  AttentionScratch(const kv::CacheShape& shape, int n_heads, int max_tokens, int n_threads,
                   bool bf16_prefill = false);
  ~AttentionScratch();
  // The bytes such a scratch allocates, without allocating (session memory plans).
  static size_t bytes_for(const kv::CacheShape& shape, int n_heads, int n_threads,
                          bool bf16_prefill = false);
  size_t bytes_allocated() const;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct AttentionArgs {
  int layer = 0;
  const float* q = nullptr;  // [n_tokens][n_heads][head_dim], RoPE applied
  int n_tokens = 0;
  int pos0 = 0;          // position of q[0]; the cache already holds [0, pos0 + n_tokens)
  int n_heads = 0;       // query heads; head h reads kv head h / (n_heads / n_kv_heads)
  float q_scale = 0.0f;  // multiplies every query; 0: 1/sqrt(head_dim)
  float softcap = 0.0f;  // scores s become softcap * tanh(s / softcap) (Gemma 2); 0: none
  int window = 0;        // the query at pos sees keys (pos - window, pos] only; 0: every key
  float* out = nullptr;  // [n_tokens][n_heads][head_dim]
  // Prefill products (Q·Kᵀ, P·V) with Q, K, P and V rounded to bf16, summed in f32, for an even
  // head_dim: the sessions of matmul precision bf16 (vdpbf16ps with AVX512-BF16, else the twins).
  // Needs a scratch made with bf16_prefill.
  bool bf16 = false;
};

// out[t][h] = softmax(cap(q_scale · q[t][h] · K[lo .. pos]ᵀ)) · V[lo .. pos] with pos = pos0 + t,
// lo = 0 or pos - window + 1
void attention(const kv::KvCache& cache, const AttentionArgs& args, AttentionScratch& scratch);

}  // namespace kvrt::ops
