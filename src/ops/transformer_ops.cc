#include "ops/transformer_ops.h"

#include <algorithm>
#include <cmath>

#include "simd/dispatch.h"

namespace kvrt::ops {

void rms_norm(const float* x, const float* weight, int n_rows, int n, float eps, float* y) {
  for (int r = 0; r < n_rows; ++r) {
    const float* xr = x + size_t(r) * size_t(n);
    float* yr = y + size_t(r) * size_t(n);
    double ss = 0.0;
    for (int i = 0; i < n; ++i) ss += double(xr[i]) * double(xr[i]);
    const float scale = float(1.0 / std::sqrt(ss / n + double(eps)));
    for (int i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

RopeTable::RopeTable(int n_ctx, int rope_dim, float base, const float* freq_factors)
    : half_(rope_dim / 2), cos_(size_t(n_ctx) * size_t(rope_dim / 2)), sin_(cos_.size()) {
  // Angles in float by llama.cpp's recurrence (ggml_rope_cache_init): theta_i = pos * step^i with
  // step = base^(-2 / rope_dim), divided by the pair's frequency factor. Computing them in double
  // instead moves logits by ~2e-4 at 200 positions, as much as the whole budget against llama.cpp.
  const float step = std::pow(base, -2.0f / float(rope_dim));
  for (int pos = 0; pos < n_ctx; ++pos) {
    float theta = float(pos);
    for (int i = 0; i < half_; ++i) {
      const float angle = theta / (freq_factors ? freq_factors[i] : 1.0f);
      cos_[size_t(pos) * half_ + i] = std::cos(angle);
      sin_[size_t(pos) * half_ + i] = std::sin(angle);
      theta *= step;
    }
  }
}

void rope(const RopeTable& table, const RopeArgs& a) {
  const int half = table.half();
  for (int t = 0; t < a.n_tokens; ++t) {
    const float* c = table.cos_at(a.pos0 + t);
    const float* s = table.sin_at(a.pos0 + t);
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
}

namespace {

// gate[i] = act(gate[i]) * up[i] by a kernel of the table, split between up to n_threads threads.
void gated(void (*kernel)(float*, const float*, int64_t), float* gate, const float* up, int64_t n, int n_threads) {
  constexpr int64_t kPerThread = 1 << 15;  // fewer values stay on one thread: a parallel region costs µs
  const int nt = static_cast<int>(std::clamp<int64_t>(n / kPerThread, 1, n_threads));
  // Pieces start on multiples of 64 values, so each value takes the same (vector or tail) path
  // whatever the thread count.
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int t = 0; t < nt; ++t) {
    const int64_t i0 = n * t / nt / 64 * 64, i1 = t + 1 == nt ? n : n * (t + 1) / nt / 64 * 64;
    kernel(gate + i0, up + i0, i1 - i0);
  }
}

}  // namespace

void swiglu(float* gate, const float* up, int64_t n, int n_threads) { gated(simd::kernels().swiglu, gate, up, n, n_threads); }

void geglu(float* gate, const float* up, int64_t n, int n_threads) { gated(simd::kernels().geglu, gate, up, n, n_threads); }

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

void add_bias(float* y, const float* bias, int n_rows, int n) {
  for (int r = 0; r < n_rows; ++r) add_inplace(y + size_t(r) * size_t(n), bias, n);
}

}  // namespace kvrt::ops
