// One attention problem for the attention tests: a cache shape, query heads, a prompt (in one
// call or chunks) then decode steps, random Q/K/V, the naive double-precision reference, and the
// outputs through a kv::KvCache and ops::attention.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kv/kv_cache.h"
#include "ops/attention.h"

namespace kvrt::test {

struct Case {
  kv::CacheShape shape;
  int n_heads = 0;
  int n_prompt = 0;  // tokens written and attended in one call (or chunks of n_chunk), then decode
                     // one at a time
  int n_chunk = 0;   // 0: the whole prompt in one call
  int n_decode = 0;
  float q_scale = 0.0f;  // as AttentionArgs: 0 is 1/sqrt(head_dim)
  float softcap = 0.0f;
  int window = 0;
  bool bf16 = false;  // AttentionArgs::bf16: prefill products in bf16 where the CPU has them
};

struct Data {
  std::vector<float> q, k, v;  // q [n][n_heads][hd]; k, v [n][n_kv_heads][hd]
};

inline Data make_data(const Case& c, unsigned seed, float outlier) {
  const int n = c.n_prompt + c.n_decode, hd = c.shape.head_dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data d;
  d.q.resize(static_cast<size_t>(n) * c.n_heads * hd);
  d.k.resize(static_cast<size_t>(n) * c.shape.n_kv_heads * hd);
  d.v.resize(d.k.size());
  for (float& x : d.q) x = nd(rng);
  for (size_t i = 0; i < d.k.size(); ++i) {
    const bool outlier_channel = (i % hd) == 1 || (i % hd) == static_cast<size_t>(hd) - 3;
    d.k[i] = nd(rng) * (outlier_channel ? outlier : 1.0f);
    d.v[i] = nd(rng);
  }
  return d;
}

// out[t][h] for query token t (absolute position t) in double precision.
inline std::vector<double> reference(const Case& c, const Data& d) {
  const int n = c.n_prompt + c.n_decode, hd = c.shape.head_dim, nkv = c.shape.n_kv_heads;
  const int group = c.n_heads / nkv;
  std::vector<double> out(static_cast<size_t>(n) * c.n_heads * hd, 0.0);
  std::vector<double> s(n);
  for (int t = 0; t < n; ++t) {
    for (int h = 0; h < c.n_heads; ++h) {
      const float* q = &d.q[(static_cast<size_t>(t) * c.n_heads + h) * hd];
      double mx = -INFINITY, sum = 0;
      const int lo = c.window > 0 ? std::max(0, t - c.window + 1) : 0;
      for (int j = lo; j <= t; ++j) {
        const float* k = &d.k[(static_cast<size_t>(j) * nkv + h / group) * hd];
        double dot = 0;
        for (int i = 0; i < hd; ++i) dot += static_cast<double>(q[i]) * k[i];
        s[j] = dot * (c.q_scale > 0 ? c.q_scale : 1.0 / std::sqrt(static_cast<double>(hd)));
        if (c.softcap > 0) s[j] = c.softcap * std::tanh(s[j] / c.softcap);
        mx = std::max(mx, s[j]);
      }
      for (int j = lo; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
      double* o = &out[(static_cast<size_t>(t) * c.n_heads + h) * hd];
      for (int j = lo; j <= t; ++j) {
        const float* v = &d.v[(static_cast<size_t>(j) * nkv + h / group) * hd];
        for (int i = 0; i < hd; ++i) o[i] += s[j] / sum * v[i];
      }
    }
  }
  return out;
}

// Runs prefill then decode through the cache; returns every output [n][n_heads][head_dim].
inline std::vector<float> run_cache(const kv::KvConfig& cfg, const Case& c, const Data& d,
                                    int n_threads) {
  const int hd = c.shape.head_dim, nkv = c.shape.n_kv_heads;
  kv::KvCache cache(cfg, c.shape);
  ops::AttentionScratch scratch(c.shape, c.n_heads, std::max(c.n_prompt, 1), n_threads, c.bf16);
  const size_t q_tok = static_cast<size_t>(c.n_heads) * hd, kv_tok = static_cast<size_t>(nkv) * hd;
  std::vector<float> out(q_tok * (c.n_prompt + c.n_decode));
  int pos = 0;
  auto step = [&](int n) {
    cache.write(0, pos, n, &d.k[pos * kv_tok], &d.v[pos * kv_tok]);
    ops::AttentionArgs a;
    a.layer = 0;
    a.q = &d.q[pos * q_tok];
    a.n_tokens = n;
    a.pos0 = pos;
    a.n_heads = c.n_heads;
    a.q_scale = c.q_scale;
    a.softcap = c.softcap;
    a.window = c.window;
    a.bf16 = c.bf16;
    a.out = &out[pos * q_tok];
    ops::attention(cache, a, scratch);
    pos += n;
  };
  const int chunk = c.n_chunk > 0 ? c.n_chunk : std::max(c.n_prompt, 1);
  for (int done = 0; done < c.n_prompt; done += chunk) step(std::min(chunk, c.n_prompt - done));
  for (int i = 0; i < c.n_decode; ++i) step(1);
  return out;
}

inline double max_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double err = 0;
  for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::abs(out[i] - ref[i]));
  return err;
}

inline double max_error(const kv::KvConfig& cfg, const Case& c, const Data& d, int n_threads) {
  return max_error(run_cache(cfg, c, d, n_threads), reference(c, d));
}

}  // namespace kvrt::test
