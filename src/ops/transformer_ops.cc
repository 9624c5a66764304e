#include "ops/transformer_ops.h"

#include <algorithm>
#include <cmath>

#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

// Items of a loop over rows or values, each `per_item` long; fewer than two items' worth is one
// item, run by the caller. The cut does not depend on the thread count, nor do the results.
template <class Fn>
void for_items(int64_t n, int64_t per_item, ThreadPool& pool, Fn&& fn) {
  const int64_t n_items = n < 2 * per_item ? 1 : (n + per_item - 1) / per_item;
  pool.run(n_items, [&](int64_t item, int) {
    const int64_t i0 = item * per_item, i1 = n_items == 1 ? n : std::min(n, i0 + per_item);
    fn(i0, i1);
  });
}

// Σ x[i]² in double, in 8 interleaved partial sums (vectors) added at the end.
double sum_squares(const float* x, int n) {
  double part[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += double(x[i + j]) * double(x[i + j]);
  double ss = 0.0;
  for (; i < n; ++i) ss += double(x[i]) * double(x[i]);
  for (double p : part) ss += p;
  return ss;
}

}  // namespace

void rms_norm(const float* x, const float* weight, int n_rows, int n, float eps, float* y,
              ThreadPool& pool) {
  for_items(n_rows, 16, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + size_t(r) * size_t(n);
      float* yr = y + size_t(r) * size_t(n);
      const float scale = float(1.0 / std::sqrt(sum_squares(xr, n) / n + double(eps)));
      for (int i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
    }
  });
}

namespace {

// YaRN's correction range: the pairs [low, high] between which the angle blends from unscaled to
// slowed, from the pairs that turn beta_fast and beta_slow times in orig_ctx positions (float, as
// llama.cpp's ggml_rope_yarn_corr_dims).
struct YarnRamp {
  float low = 0, high = 0;
  YarnRamp(int rope_dim, const RopeParams& p) {
    const auto dim = [&](float turns) {
      return float(rope_dim) * std::log(float(p.orig_ctx) / (turns * 2.0f * float(M_PI))) /
             (2.0f * std::log(p.base));
    };
    low = std::max(0.0f, std::floor(dim(p.yarn_beta_fast)));
    high = std::min(float(rope_dim - 1), std::ceil(dim(p.yarn_beta_slow)));
  }
  // 1 for pairs that keep their angle, 0 for pairs that are slowed.
  float unscaled_share(int pair) const {
    const float y = (float(pair) - low) / std::max(0.001f, high - low);
    return 1.0f - std::min(1.0f, std::max(0.0f, y));
  }
};

}  // namespace

RopeTable::RopeTable(int n_ctx, int rope_dim, const RopeParams& p, const float* freq_factors)
    : half_(rope_dim / 2), cos_(size_t(n_ctx) * size_t(rope_dim / 2)), sin_(cos_.size()) {
  // Angles in float by llama.cpp's recurrence (ggml_rope_cache_init): theta_i = pos * step^i with
  // step = base^(-2 / rope_dim), divided by the pair's frequency factor. Computing them in double
  // instead moves logits by ~2e-4 at 200 positions, as much as the whole budget against llama.cpp.
  const float step = std::pow(p.base, -2.0f / float(rope_dim));
  const float freq_scale = p.scaling == RopeScaling::kNone ? 1.0f : 1.0f / p.factor;
  const bool yarn = p.scaling == RopeScaling::kYarn;
  const YarnRamp ramp(rope_dim, p);
  // What multiplies cos and sin: the attention factor and, for YaRN, its magnitude correction
  // m(1) / m(mscale_all_dim) with m(x) = 1 + 0.1 x ln(factor) (m(1) without mscale_all_dim), in
  // llama.cpp's order of float operations (its cparams.yarn_attn_factor, then rope_yarn).
  float mscale = 1.0f;
  if (yarn) {
    const float factor = 1.0f / freq_scale;
    const auto m = [factor](float x) {
      return factor <= 1.0f ? 1.0f : 0.1f * x * std::log(factor) + 1.0f;
    };
    mscale = p.yarn_log_multiplier != 0.0f ? m(1.0f) / m(p.yarn_log_multiplier) : m(1.0f);
    mscale *= 1.0f / (1.0f + 0.1f * std::log(factor));
  }
  mscale *= p.attn_factor;
  if (yarn) mscale *= 1.0f + 0.1f * std::log(1.0f / freq_scale);
  for (int pos = 0; pos < n_ctx; ++pos) {
    float theta = float(pos);
    for (int i = 0; i < half_; ++i) {
      const float extrap = theta / (freq_factors ? freq_factors[i] : 1.0f);
      float angle = freq_scale * extrap;
      if (yarn) {
        const float mix = ramp.unscaled_share(i);
        angle = angle * (1.0f - mix) + extrap * mix;
      }
      cos_[size_t(pos) * half_ + i] = std::cos(angle) * mscale;
      sin_[size_t(pos) * half_ + i] = std::sin(angle) * mscale;
      theta *= step;
    }
  }
}

void rope(const RopeTable& table, const RopeArgs& a, ThreadPool& pool) {
  const int half = table.half();
  for_items(a.n_tokens, 16, pool, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* c = table.cos_at(a.pos0 + int(t));
      const float* s = table.sin_at(a.pos0 + int(t));
      for (int h = 0; h < a.n_heads; ++h) {
        float* x = a.x + (size_t(t) * a.n_heads + h) * size_t(a.head_dim);
        for (int i = 0; i < half; ++i) {
          const int i0 = a.neox ? i : 2 * i;
          const int i1 = a.neox ? i + half : 2 * i + 1;
          const float x0 = x[i0], x1 = x[i1];
          x[i0] = x0 * c[i] - x1 * s[i];
          x[i1] = x0 * s[i] + x1 * c[i];
        }
      }
    }
  });
}

void attention_temperature(float* q, int n_tokens, int width, int pos0, float scale,
                           int floor_step) {
  for (int t = 0; t < n_tokens; ++t) {
    const int pos = pos0 + t;
    const float s =
        float(std::log(std::floor(double(pos) / double(floor_step)) + 1.0) * scale + 1.0);
    ops::scale(q + size_t(t) * size_t(width), width, s);
  }
}

// In items of kPerItem values; a decode step's few thousand values are one item, run by the
// caller.
void glu(simd::GluKernel kernel, float* gate, const float* up, int64_t n, ThreadPool& pool) {
  constexpr int64_t kPerItem = 1 << 14;
  for_items(n, kPerItem, pool,
            [&](int64_t i0, int64_t i1) { kernel(gate + i0, up + i0, i1 - i0); });
}

void scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;  // as llama.cpp: scale by 1/cap, tanh, scale by cap
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool) {
  for_items(n, 1 << 14, pool,
            [&](int64_t i0, int64_t i1) { add_inplace(y + i0, x + i0, i1 - i0); });
}

void add_bias(float* y, const float* bias, int n_rows, int n) {
  for (int r = 0; r < n_rows; ++r) add_inplace(y + size_t(r) * size_t(n), bias, n);
}

}  // namespace kvrt::ops
