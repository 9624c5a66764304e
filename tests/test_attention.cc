// Attention over the KV cache against a naive double-precision reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "kv/kv_cache.h"
#include "ops/attention.h"

namespace {

using kvrt::kv::CacheShape;
using kvrt::kv::KvCache;
using kvrt::kv::KvConfig;

struct Case {
  CacheShape shape;
  int n_heads = 0;
  int n_prompt = 0;  // tokens written and attended in one call, then decode one at a time
  int n_decode = 0;
};

struct Data {
  std::vector<float> q, k, v;  // q [n][n_heads][hd]; k, v [n][n_kv_heads][hd]
};

Data make_data(const Case& c, unsigned seed, float outlier) {
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
std::vector<double> reference(const Case& c, const Data& d) {
  const int n = c.n_prompt + c.n_decode, hd = c.shape.head_dim, nkv = c.shape.n_kv_heads;
  const int group = c.n_heads / nkv;
  std::vector<double> out(static_cast<size_t>(n) * c.n_heads * hd, 0.0);
  std::vector<double> s(n);
  for (int t = 0; t < n; ++t) {
    for (int h = 0; h < c.n_heads; ++h) {
      const float* q = &d.q[(static_cast<size_t>(t) * c.n_heads + h) * hd];
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j <= t; ++j) {
        const float* k = &d.k[(static_cast<size_t>(j) * nkv + h / group) * hd];
        double dot = 0;
        for (int i = 0; i < hd; ++i) dot += static_cast<double>(q[i]) * k[i];
        s[j] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
      double* o = &out[(static_cast<size_t>(t) * c.n_heads + h) * hd];
      for (int j = 0; j <= t; ++j) {
        const float* v = &d.v[(static_cast<size_t>(j) * nkv + h / group) * hd];
        for (int i = 0; i < hd; ++i) o[i] += s[j] / sum * v[i];
      }
    }
  }
  return out;
}

// Runs prefill then decode through the cache; returns max |out - reference| over all outputs.
double max_error(const KvConfig& cfg, const Case& c, const Data& d, int n_threads) {
  const int hd = c.shape.head_dim, nkv = c.shape.n_kv_heads;
  KvCache cache(cfg, c.shape);
  kvrt::ops::AttentionScratch scratch(c.shape, c.n_heads, std::max(c.n_prompt, 1), n_threads);
  const std::vector<double> ref = reference(c, d);
  const size_t q_tok = static_cast<size_t>(c.n_heads) * hd, kv_tok = static_cast<size_t>(nkv) * hd;
  std::vector<float> out(q_tok * std::max(c.n_prompt, 1));
  double err = 0;
  int pos = 0;
  auto step = [&](int n) {
    cache.write(0, pos, n, &d.k[pos * kv_tok], &d.v[pos * kv_tok]);
    kvrt::ops::AttentionArgs a;
    a.layer = 0;
    a.q = &d.q[pos * q_tok];
    a.n_tokens = n;
    a.pos0 = pos;
    a.n_heads = c.n_heads;
    a.out = out.data();
    kvrt::ops::attention(cache, a, scratch);
    for (size_t i = 0; i < n * q_tok; ++i) err = std::max(err, std::abs(out[i] - ref[pos * q_tok + i]));
    pos += n;
  };
  if (c.n_prompt > 0) step(c.n_prompt);
  for (int i = 0; i < c.n_decode; ++i) step(1);
  return err;
}

}  // namespace

TEST_CASE("f32 attention equals the naive reference (GQA, prefill then decode)") {
  for (int hd : {8, 64, 128}) {
    for (int n_threads : {1, 2}) {
      Case c;
      c.shape = CacheShape{1, 2, hd, 300};
      c.n_heads = 8;
      c.n_prompt = 257;
      c.n_decode = 19;
      const Data d = make_data(c, 7 + hd, 4.0f);
      const double err = max_error(KvConfig{}, c, d, n_threads);
      INFO("head_dim " << hd << " threads " << n_threads);
      CHECK(err < 2e-5);
    }
  }
}

TEST_CASE("f32 cache byte accounting equals the layout") {
  const CacheShape shape{3, 4, 64, 128};
  KvCache cache(KvConfig{}, shape);
  CHECK(cache.bytes_per_token() == doctest::Approx(3.0 * 4 * 64 * 4 * 2));
  CHECK(cache.bytes_allocated() == static_cast<size_t>(3 * 4 * 64 * 4 * 2 * 128));
  CHECK(cache.bytes_in_use(10) == static_cast<size_t>(3 * 4 * 64 * 4 * 2 * 10));
}

TEST_CASE("writing past n_ctx is a clear error") {
  const CacheShape shape{1, 1, 8, 4};
  KvCache cache(KvConfig{}, shape);
  std::vector<float> kv(5 * 8, 1.0f);
  CHECK_THROWS_AS(cache.write(0, 0, 5, kv.data(), kv.data()), kvrt::Error);
}
