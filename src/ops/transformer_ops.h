// Element-wise and per-row operations of the transformer block: RMSNorm, RoPE, SwiGLU and GeGLU,
// biases, scales and soft-caps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "simd/kernels.h"

namespace kvrt::ops {

// y[r] = x[r] / sqrt(mean(x[r]²) + eps) * weight, for n_rows rows of n values, on the threads of
// `pool` (whose count does not change the result), as are rope and the pooled add_inplace.
void rms_norm(const float* x, const float* weight, int n_rows, int n, float eps, float* y,
              ThreadPool& pool);

// How RoPE angles are stretched past the trained context (a model's rope.scaling.*).
enum class RopeScaling : uint8_t { kNone, kLinear, kYarn };

struct RopeParams {
  float base = 10000.0f;
  RopeScaling scaling = RopeScaling::kNone;
  float factor = 1.0f;  // angles turn `factor` times slower (linear; YaRN past its ramp)
  int orig_ctx = 0;     // the trained context before scaling (0: not given)
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;  // YaRN's ramp ends, in turns per orig_ctx
  float yarn_log_multiplier = 0.0f;                     // YaRN's mscale_all_dim (0: none)
  float attn_factor = 1.0f;  // multiplies cos and sin (LongRoPE's attention factor)
};

// Precomputed rotation angles for positions [0, n_ctx): cos/sin [n_ctx][rope_dim / 2]. Pair i
// turns by pos * base^(-2i / rope_dim) / freq_factors[i] (freq_factors [rope_dim / 2]: Llama 3's
// rope_freqs.weight or LongRoPE's factors; null: all 1), slowed by the scaling; YaRN blends the
// slowed and the unscaled angle by pair and scales cos and sin by its magnitude correction.
class RopeTable {
 public:
  RopeTable(int n_ctx, int rope_dim, const RopeParams& params, const float* freq_factors = nullptr);
  static size_t bytes_for(int n_ctx, int rope_dim) {
    return 2 * size_t(n_ctx) * size_t(rope_dim / 2) * sizeof(float);
  }
  size_t bytes_allocated() const { return (cos_.size() + sin_.size()) * sizeof(float); }
  const float* cos_at(int pos) const { return cos_.data() + size_t(pos) * size_t(half_); }
  const float* sin_at(int pos) const { return sin_.data() + size_t(pos) * size_t(half_); }
  int half() const { return half_; }

 private:
  int half_;
  std::vector<float> cos_, sin_;  // [n_ctx][rope_dim / 2]
};

struct RopeArgs {
  float* x =
      nullptr;  // [n_tokens][n_heads][head_dim], rotated in place (its first rope_dim values)
  int n_tokens = 0;
  int n_heads = 0;
  int head_dim = 0;
  int pos0 = 0;       // position of token 0
  bool neox = false;  // pair (i, i + rope_dim/2) instead of (2i, 2i+1)
};
void rope(const RopeTable& table, const RopeArgs& args, ThreadPool& pool);

// Llama 4's attention temperature: row t of q [n_tokens][width], at position pos0 + t, times
// 1 + scale * ln(floor(pos / floor_step) + 1).
void attention_temperature(float* q, int n_tokens, int width, int pos0, float scale,
                           int floor_step);

// gate[i] = act(gate[i]) * up[i] for n values by `kernel` (simd::Kernels' swiglu or geglu), on
// the threads of `pool` (whose count does not change the result).
void glu(simd::GluKernel kernel, float* gate, const float* up, int64_t n, ThreadPool& pool);

// x[i] *= s for n values.
void scale(float* x, int64_t n, float s);

// x[i] = cap * tanh(x[i] / cap) for n values (Gemma 2's logit soft-cap).
void softcap(float* x, int64_t n, float cap);

// y[i] += x[i] for n values.
void add_inplace(float* y, const float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool);

// y[r][i] += bias[i] for n_rows rows of n values.
void add_bias(float* y, const float* bias, int n_rows, int n);

}  // namespace kvrt::ops
