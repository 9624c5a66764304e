// Attention over the KV cache against a naive double-precision reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "kv/formats.h"
#include "kv/kv_cache.h"
#include "kv/rotation.h"
#include "ops/attention.h"
#include "attention_case.h"
#include "simd/kernels_scalar.h"

namespace {

using kvrt::kv::CacheShape;
using kvrt::kv::KvCache;
using kvrt::kv::KvConfig;
using kvrt::test::Case;
using kvrt::test::Data;
using kvrt::test::make_data;
using kvrt::test::max_error;
using kvrt::test::reference;
using kvrt::test::run_cache;

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

TEST_CASE("sliding window, soft-cap and query scale equal the reference (prefill then decode)") {
  for (int hd : {96, 128}) {
    for (int window : {1, 64, 100}) {
      Case c;
      c.shape = CacheShape{1, 1, hd, 300};
      c.n_heads = 2;
      c.n_prompt = 150;  // prefill blocks start inside, before and beyond the window
      c.n_decode = 30;
      c.q_scale = 0.2f;
      c.softcap = 2.0f;  // small enough to bite on scores of N(0, 1) data
      c.window = window;
      const Data d = make_data(c, unsigned(hd + window), 1.0f);
      INFO("head_dim " << hd << " window " << window);
      CHECK(max_error(KvConfig{}, c, d, 2) < 2e-5);
      c.window = 0;  // the window and the cap change the result: the test sees them
      c.softcap = 0.0f;
      CHECK(max_error(KvConfig{}, c, d, 2) < 2e-5);
      const std::vector<float> unwindowed = run_cache(KvConfig{}, c, d, 2);
      c.window = window;
      c.softcap = 2.0f;
      const std::vector<float> windowed = run_cache(KvConfig{}, c, d, 2);
      double diff = 0;
      for (size_t i = 0; i < windowed.size(); ++i)
        diff = std::max(diff, double(std::abs(windowed[i] - unwindowed[i])));
      CHECK(diff > 0.1);
    }
  }
}

TEST_CASE(
    "bf16 prefill products stay within bf16 rounding of the reference (window, soft-cap, "
    "quantized, sinks)") {
  for (const char* kv : {"f32", "q8"}) {
    for (int variant = 0; variant < 4; ++variant) {
      Case c;
      c.shape = CacheShape{1, 2, 64, 300};
      c.n_heads = 8;
      c.n_prompt = 257;  // blocks of 16 tokens, an odd last tile (257 positions)
      c.n_decode = 3;
      c.window = variant == 1 || variant == 3 ? 100 : 0;
      c.softcap = variant == 2 ? 20.0f : 0.0f;
      c.n_chunk = variant == 3 ? 90 : 0;  // later calls stage keys from the window's start on
      c.bf16 = true;
      const Data d = make_data(c, 31 + variant, 4.0f);
      KvConfig cfg = kvrt::kv::parse_setting(kv);
      cfg.sinks = variant == 3 ? 7 : 0;  // an odd chunk [0, 7) before the tiles
      const std::vector<double> ref = reference(c, d);
      const std::vector<float> out = run_cache(cfg, c, d, 2);
      c.bf16 = false;
      const std::vector<float> out_f32 = run_cache(cfg, c, d, 2);
      const double err = max_error(out, ref), err_f32 = max_error(out_f32, ref);
      double diff = 0;  // from the same cache's f32 products
      for (size_t i = 0; i < out.size(); ++i)
        diff = std::max(diff, double(std::abs(out[i] - out_f32[i])));
      INFO(std::string(kv) << " variant " << variant << ": bf16 " << err << ", f32 " << err_f32
                           << ", apart " << diff);
      CHECK(err < err_f32 + 0.03);  // q, k, p and v each rounded to 8 significant bits
      CHECK(diff < 0.03);
      CHECK(diff > 1e-4);  // the bf16 products ran
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

namespace {

using kvrt::kv::Format;
using kvrt::kv::KeyAxis;

// Per-element bound of the stored error of one side, in the stored (maybe rotated) domain: d/2,
// amax/(2 max code) for q8 (amax/254) and (max-min)/(2 max code) for asymmetric formats (q4:
// (max-min)/30) over each group (along head_dim, or along G tokens per channel for channel-axis
// keys), with a little slack for float rounding. q4s (d = e / -8, kv/blocks.h) clamps values of
// the other sign than e at code 7: |x| - 7|d| <= amax/8 (1 + 7·2^-11) with d rounded to FP16, and
// q3 (d = e / -4) at code 3: |x| - 3|d| <= amax/4 (1 + 3·2^-11); q4n within kQ4NMaxError amax
// (kv/blocks.h).
// Positions before `sinks` are stored exactly; channel groups start after them.
std::vector<double> stored_error_bound(const std::vector<float>& x, int n, int nkv, int hd,
                                       Format f, bool per_channel, bool rotate, int group,
                                       int sinks = 0) {
  std::vector<float> y = x;  // [n][nkv][hd]
  if (rotate)
    for (int r = 0; r < n * nkv; ++r) kvrt::simd::scalar::hadamard(&y[r * hd], hd);
  std::vector<double> e(y.size(), 0.0);
  if (f == Format::kF32) return e;
  auto group_bound = [&](auto index, int len) {  // index(i) -> element of the group
    double mn = y[index(0)], mx = mn, amax = 0;
    for (int i = 0; i < len; ++i) {
      const double v = y[index(i)];
      mn = std::min(mn, v), mx = std::max(mx, v), amax = std::max(amax, std::abs(v));
    }
    const kvrt::kv::FormatTraits& t = kvrt::kv::format_traits(f);
    const bool symmetric = t.planes == 1;
    const double max_code = symmetric ? (1 << (t.bits - 1)) - 1 : (1 << t.bits) - 1;
    const double half_step = (symmetric ? amax : mx - mn) / (2 * max_code);
    const double b = (t.levels      ? kvrt::kv::kQ4NMaxError * amax
                      : t.code_bias ? amax / t.code_bias * (1 + 7 * 0x1p-11)
                                    : half_step) *
                         (1 + 1e-5) +
                     1e-6 * amax;
    for (int i = 0; i < len; ++i) e[index(i)] = b;
  };
  for (int h = 0; h < nkv; ++h) {
    if (per_channel) {
      for (int t0 = sinks; t0 < n; t0 += group) {
        for (int ch = 0; ch < hd; ++ch) {
          group_bound([&](int i) { return ((t0 + i) * nkv + h) * hd + ch; },
                      std::min(group, n - t0));
        }
      }
    } else {
      for (int t = sinks; t < n; ++t) {
        for (int g0 = 0; g0 < hd; g0 += group)
          group_bound([&](int i) { return (t * nkv + h) * hd + g0 + i; }, group);
      }
    }
  }
  return e;
}

// Bound on |out - exact| for query (t, h): a key error ε = |q/√d|₂·|δk|₂ moves each score by at
// most ε, so the softmax weights change by a factor within e^{±2ε} and Σ|p̂ - p| <= e^{2ε} - 1;
// the output moves by at most (e^{2ε} - 1)·max|v| + max|δv|.
// Decode over q8 / q4 key tiles also quantizes q/√d to int8 per group (|δq| <= max|q|/254 <=
// |q|₂/254), and the q·k̂ it misses is Σ δq (k̂ - m) with |k̂ - m| <= 2(|k|₂ + max δk) (m = 0 for q8):
// that adds d·|q/√d|₂/254·2(|k|₂ + max δk) to ε. Value weights are rounded to int16 on a scale of
// max p·max d per 64 tokens: at most 2·max|v|/65534 per token of output (after the softmax sum l >=
// 1).
double attention_bound(const Case& c, const Data& d, const std::vector<double>& ek,
                       const std::vector<double>& ev, bool rotate, bool q_quantized,
                       bool v_quantized, int t, int h) {
  const int hd = c.shape.head_dim, nkv = c.shape.n_kv_heads, kvh = h / (c.n_heads / nkv);
  double qn = 0, eps = 0, vmax = 0, dv = 0;
  for (int i = 0; i < hd; ++i) qn += std::pow(d.q[(t * c.n_heads + h) * hd + i], 2) / hd;
  for (int j = 0; j <= t; ++j) {
    double k2 = 0, v2 = 0, vinf = 0, kn = 0, kinf = 0;
    for (int i = 0; i < hd; ++i) {
      const size_t idx = (static_cast<size_t>(j) * nkv + kvh) * hd + i;
      k2 += ek[idx] * ek[idx];
      v2 += ev[idx] * ev[idx];
      kn += std::pow(d.k[idx], 2);
      kinf = std::max(kinf, ek[idx]);
      vinf = std::max(vinf, ev[idx]);
      vmax = std::max(vmax, static_cast<double>(std::abs(d.v[idx])));
    }
    const double eq = q_quantized ? hd * std::sqrt(qn) / 254 * 2 * (std::sqrt(kn) + kinf) : 0.0;
    eps = std::max(eps, std::sqrt(qn * k2) + eq);
    dv = std::max(dv, rotate ? std::sqrt(v2) : vinf);
  }
  const double dw = v_quantized ? (t + 1) * 2 * (vmax + dv) / 65534 : 0.0;
  return std::expm1(2 * eps) * vmax + dv + dw + 1e-4;
}

}  // namespace

TEST_CASE("quantized attention stays within the bound derived from the quantization error") {
  for (int hd : {8, 64}) {
    Case c;
    c.shape = CacheShape{1, 2, hd, 200};
    c.n_heads = 4;
    c.n_prompt = 70;
    c.n_decode = 41;
    const int n = c.n_prompt + c.n_decode;
    const Data d = make_data(c, 99 + hd, 6.0f);
    const std::vector<double> ref = reference(c, d);
    for (int ki = 0; ki < kvrt::kv::kNumFormats; ++ki) {  // every row of kv/formats.h
      for (int vi = 0; vi < kvrt::kv::kNumFormats; ++vi) {
        const auto kf = static_cast<Format>(ki), vf = static_cast<Format>(vi);
        for (KeyAxis axis : {KeyAxis::kToken, KeyAxis::kChannel}) {
          // plain, residual window, rotation, sinks (not a tile apart), sinks beyond a tile with a
          // window
          for (int variant = 0; variant < 5; ++variant) {
            KvConfig cfg;
            cfg.k_format = kf;
            cfg.v_format = vf;
            cfg.k_axis = axis;
            cfg.residual = variant == 1 || variant == 4 ? 5 : 0;
            cfg.rotate = variant == 2;
            cfg.sinks = variant == 3 ? 5 : variant == 4 ? 21 : 0;
            const int key_unit = kvrt::kv::format_traits(kf).unit(kvrt::kv::TileRole::kKey);
            // 16, or q3's 32-dim key unit on the token axis
            cfg.group_size = hd == 8 ? 8 : axis == KeyAxis::kToken ? std::max(16, key_unit) : 16;
            if (axis == KeyAxis::kToken && cfg.group_size % key_unit) continue;
            const bool per_channel = axis == KeyAxis::kChannel && kf != Format::kF32;
            const auto ek = stored_error_bound(d.k, n, 2, hd, kf, per_channel, cfg.rotate,
                                               cfg.group_size, cfg.sinks);
            const auto ev =
                stored_error_bound(d.v, n, 2, hd, vf, false, cfg.rotate, cfg.group_size, cfg.sinks);
            const std::vector<float> out = run_cache(cfg, c, d, 2);
            double worst = 0;  // largest err / bound
            for (int t = 0; t < n; ++t) {
              for (int h = 0; h < c.n_heads; ++h) {
                const bool q_quantized =
                    kf != Format::kF32 && axis == KeyAxis::kToken;  // decode steps only
                const double bound = attention_bound(c, d, ek, ev, cfg.rotate, q_quantized,
                                                     vf != Format::kF32, t, h);
                for (int i = 0; i < hd; ++i) {
                  const size_t idx = (static_cast<size_t>(t) * c.n_heads + h) * hd + i;
                  worst = std::max(worst, std::abs(out[idx] - ref[idx]) / bound);
                }
              }
            }
            INFO(cfg.name() << " head_dim " << hd << " worst err/bound " << worst);
            CHECK(worst <= 1.0);
          }
        }
      }
    }
  }
}

TEST_CASE("decode and prefill paths agree on a quantized cache") {
  Case c;
  c.shape = CacheShape{1, 4, 64, 300};
  c.n_heads = 16;
  c.n_prompt = 200;
  c.n_decode = 0;
  const Data d = make_data(c, 5, 4.0f);
  for (int sinks : {0, 7, 70}) {  // sinks shift the tiles off the 64-position chunks of both paths
    KvConfig cfg;
    cfg.k_format = Format::kQ4;
    cfg.v_format = Format::kQ8;
    cfg.sinks = sinks;
    const std::vector<float> tiled = run_cache(cfg, c, d, 2);
    Case one = c;  // same tokens, fed one at a time through the decode path
    one.n_prompt = 0;
    one.n_decode = 200;
    const std::vector<float> fused = run_cache(cfg, one, d, 1);
    // The paths differ by what decode rounds (q to int8, value weights to int16): within the
    // bound of attention_bound with those terms alone (no stored error: both read the same cache).
    const std::vector<double> none(d.k.size(), 0.0);
    double worst = 0;
    for (int t = 0; t < c.n_prompt; ++t) {
      for (int h = 0; h < c.n_heads; ++h) {
        const double bound = attention_bound(c, d, none, none, false, true, true, t, h);
        for (int i = 0; i < c.shape.head_dim; ++i) {
          const size_t idx = (static_cast<size_t>(t) * c.n_heads + h) * c.shape.head_dim + i;
          worst = std::max(worst, std::abs(tiled[idx] - fused[idx]) / bound);
        }
      }
    }
    INFO("sinks " << sinks << ": worst difference / bound " << worst);
    CHECK(worst <= 1.0);
  }
}

namespace {

// Outputs of attention over layer `layer` of a cache with this setting, the same K, V and queries
// written to every layer (prefill of c.n_prompt tokens, then decode).
std::vector<float> run_layer(const KvConfig& cfg, const Case& c, const Data& d, int layer) {
  const int hd = c.shape.head_dim, nkv = c.shape.n_kv_heads, n = c.n_prompt + c.n_decode;
  KvCache cache(cfg, c.shape);
  kvrt::ops::AttentionScratch scratch(c.shape, c.n_heads, std::max(c.n_prompt, 1), 1);
  const size_t q_tok = static_cast<size_t>(c.n_heads) * hd, kv_tok = static_cast<size_t>(nkv) * hd;
  std::vector<float> out(q_tok * n);
  for (int pos = 0; pos < n;) {
    const int len = pos == 0 && c.n_prompt > 0 ? c.n_prompt : 1;
    for (int l = 0; l < c.shape.n_layers; ++l)
      cache.write(l, pos, len, &d.k[pos * kv_tok], &d.v[pos * kv_tok]);
    kvrt::ops::AttentionArgs a;
    a.layer = layer;
    a.q = &d.q[pos * q_tok];
    a.n_tokens = len;
    a.pos0 = pos;
    a.n_heads = c.n_heads;
    a.out = &out[pos * q_tok];
    kvrt::ops::attention(cache, a, scratch);
    pos += len;
  }
  return out;
}

}  // namespace

TEST_CASE("each layer of a mixed setting attends exactly as a uniform cache of its formats") {
  Case c;
  c.shape = CacheShape{4, 2, 64, 160};
  c.n_heads = 4;
  c.n_prompt = 70;
  c.n_decode = 30;
  const Data d = make_data(c, 11, 4.0f);
  const KvConfig mixed =
      kvrt::kv::parse_setting("q4,g=16,axis=channel,r=8,layers[0,-1]=q8,k[1]=f32,v[2]=q2");
  const char* uniform[] = {"q8,g=16,axis=channel,r=8", "k=f32,v=q4,g=16,axis=channel,r=8",
                           "k=q4,v=q2,g=16,axis=channel,r=8", "q8,g=16,axis=channel,r=8"};
  for (int layer = 0; layer < 4; ++layer) {
    CAPTURE(layer);
    CHECK(run_layer(mixed, c, d, layer) ==
          run_layer(kvrt::kv::parse_setting(uniform[layer]), c, d, layer));
  }
}

TEST_CASE(
    "with sinks covering the context, a quantized setting attends exactly as the FP32 cache") {
  Case c;
  c.shape = CacheShape{2, 2, 64, 100};
  c.n_heads = 4;
  c.n_prompt = 70;
  c.n_decode = 30;
  const Data d = make_data(c, 12, 4.0f);
  for (const char* setting :
       {"q4,sinks=100", "q2,axis=channel,r=16,sinks=100,layers[0]=q8", "q8,rot=1,sinks=1000"}) {
    CAPTURE(setting);
    const KvConfig cfg = kvrt::kv::parse_setting(setting);
    KvConfig f32;
    f32.rotate = cfg.rotate;
    CHECK(run_layer(cfg, c, d, 0) == run_layer(f32, c, d, 0));
  }
}

TEST_CASE(
    "Hadamard rotation of any even head_dim: keys in the largest power-of-two block, values in at "
    "most 64") {
  for (const auto& [hd, k_block, v_block] :
       {std::tuple{48, 16, 16}, {80, 16, 16}, {96, 32, 32}, {128, 128, 64}, {256, 256, 64}}) {
    CAPTURE(hd);
    CHECK(kvrt::kv::key_rotation_block(hd) == k_block);
    CHECK(kvrt::kv::value_rotation_block(hd) == v_block);
    Case c;
    c.shape = CacheShape{1, 2, hd, 64};
    c.n_heads = 4;
    c.n_prompt = 40;
    c.n_decode = 12;
    const Data d = make_data(c, 13, 4.0f);
    const std::vector<double> ref = reference(c, d);
    KvConfig f32, rotated;
    rotated.rotate = true;
    const KvCache cache(rotated, c.shape);
    CHECK(cache.layout().layers[0].k.rot_block == k_block);
    CHECK(cache.layout().layers[0].v.rot_block == v_block);
    // FP32 rows stored rotated: the rotation is orthonormal, so only rounding separates the two.
    CHECK(max_error(run_cache(rotated, c, d, 1), ref) <=
          max_error(run_cache(f32, c, d, 1), ref) + 1e-4);
    KvConfig q4 = kvrt::kv::parse_setting("q4,rot=1");
    CHECK(max_error(run_cache(q4, c, d, 1), ref) <
          0.5);  // it runs and stays near; the bound test covers q4
  }
}

TEST_CASE("byte accounting equals the layout prediction") {
  const CacheShape shape{8, 4, 64, 256};
  auto per_token = [&](Format kf, Format vf, KeyAxis axis, int g) {
    KvConfig cfg;
    cfg.k_format = kf, cfg.v_format = vf, cfg.k_axis = axis, cfg.group_size = g;
    return KvCache(cfg, shape).bytes_per_token();
  };
  const double heads_layers = 8 * 4;
  // FP16 scales and minimums. q8: 64/32 blocks of (2 + 32) bytes; q4: 64/32 blocks of (4 + 16)
  // bytes; q4s and q4n: 64/32 blocks of (2 + 16) bytes, 0.5625 bytes/value as llama.cpp's q4_0
  // and iq4_nl; f32: 256 bytes.
  CHECK(per_token(Format::kQ8, Format::kQ8, KeyAxis::kToken, 32) == heads_layers * (68 + 68));
  CHECK(per_token(Format::kQ4, Format::kQ4, KeyAxis::kToken, 32) == heads_layers * (40 + 40));
  CHECK(per_token(Format::kQ4S, Format::kQ4S, KeyAxis::kToken, 32) == heads_layers * (36 + 36));
  CHECK(per_token(Format::kQ4S, Format::kQ4, KeyAxis::kToken, 8) == heads_layers * (8 * 6 + 8 * 8));
  CHECK(per_token(Format::kQ4N, Format::kQ4N, KeyAxis::kToken, 32) == heads_layers * (36 + 36));
  // q3: 64/32 blocks of (2 + 8 + 4) bytes, 0.4375 bytes/value (3.5 bits).
  CHECK(per_token(Format::kQ3, Format::kQ3, KeyAxis::kToken, 32) == heads_layers * (28 + 28));
  CHECK(per_token(Format::kQ4, Format::kQ8, KeyAxis::kToken, 8) == heads_layers * (8 * 8 + 8 * 10));
  CHECK(per_token(Format::kF32, Format::kQ4, KeyAxis::kToken, 128 / 2) ==
        heads_layers * (256 + 36));
  // channel-axis keys, G = 32: per channel scale (+ min) once per 32 tokens, then the codes.
  CHECK(per_token(Format::kQ8, Format::kF32, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 2 + 32 * 64) / 32.0 + 256));
  CHECK(per_token(Format::kQ4, Format::kF32, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 4 + 32 * 32) / 32.0 + 256));
  CHECK(per_token(Format::kQ4S, Format::kF32, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 2 + 32 * 32) / 32.0 + 256));
  CHECK(per_token(Format::kQ4N, Format::kF32, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 2 + 32 * 32) / 32.0 + 256));
  CHECK(per_token(Format::kQ3, Format::kF32, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 2 + 32 * 24) / 32.0 + 256));
  // q2 as KIVI: channel-axis keys, 2-bit codes (a scale and a minimum per channel per 32 tokens);
  // values 64/32 blocks of (4 + 8) bytes.
  CHECK(per_token(Format::kQ2, Format::kQ2, KeyAxis::kChannel, 32) ==
        heads_layers * ((64 * 4 + 32 * 16) / 32.0 + 24));
  KvConfig q4;
  q4.k_format = q4.v_format = Format::kQ4;
  q4.residual = 16;
  const KvCache cache(q4, shape);
  CHECK(cache.bytes_in_use(100) == static_cast<size_t>(100 * 8 * 4 * 80 + 2 * 8 * 16 * 4 * 64 * 4));
  // Per-layer formats: the bytes of each layer's own formats. q8 / q8 on layers 0 and 7, f32 keys
  // on layer 1, q4 elsewhere (all token axis, G = 32).
  const KvCache mixed(kvrt::kv::parse_setting("q4,layers[0,-1]=q8,k[1]=f32"), shape);
  CHECK(mixed.bytes_per_token() == 4 * (2 * (68 + 68) + (256 + 40) + 5 * (40 + 40)));
  // Sinks: FP32 rows of both sides, a fixed extra before the packed positions.
  KvConfig sunk = q4;
  sunk.sinks = 4;
  const KvCache with_sinks(sunk, shape);
  CHECK(with_sinks.bytes_per_token() == cache.bytes_per_token());
  CHECK(with_sinks.bytes_in_use(100) ==
        static_cast<size_t>(96 * 8 * 4 * 80 + 2 * 8 * 4 * 4 * 64 * 4 + 2 * 8 * 16 * 4 * 64 * 4));
  CHECK(with_sinks.bytes_in_use(3) ==
        static_cast<size_t>(2 * 8 * 3 * 4 * 64 * 4 + 2 * 8 * 16 * 4 * 64 * 4));
  // The buffers the caches hold are those the layout plans, whatever the protections.
  for (const char* setting : {"q4,layers[0,-1]=q8,k[1]=f32", "q4,r=16,sinks=4",
                              "q2,axis=channel,r=32,sinks=5,k[2]=q8,v[3]=f32",
                              "f32,sinks=300,layers[1]=q4", "q8,rot=1,sinks=17,v[-1]=q2"}) {
    CAPTURE(setting);
    const KvCache k(kvrt::kv::parse_setting(setting), shape);
    CHECK(k.bytes_allocated() == k.layout().bytes());
    CHECK(k.bytes_allocated() ==
          kvrt::kv::plan_cache(kvrt::kv::parse_setting(setting), shape).bytes());
  }
}

TEST_CASE("the FP32 window is bounded by the context, whatever the residual asked for") {
  const CacheShape shape{5, 4, 8, 16};
  for (KeyAxis axis : {KeyAxis::kToken, KeyAxis::kChannel}) {
    KvConfig huge, all;
    huge.k_format = huge.v_format = all.k_format = all.v_format = Format::kQ8;
    huge.k_axis = all.k_axis = axis;
    huge.residual = 1 << 20;  // issue 9: this allocated 1.3 GB at n_ctx 16
    all.residual = 16;        // a window of the whole context
    const KvCache a(huge, shape), b(all, shape);
    CHECK(a.layout().layers[0].k.window == 16);
    CHECK(a.layout().layers[0].v.window == 16);
    CHECK(a.bytes_allocated() == b.bytes_allocated());
    CHECK(a.bytes_allocated() < 64 * 1024);
  }
}

TEST_CASE("the f32 cache takes any head_dim; q8 and q4 pick the largest group that fits") {
  for (int hd : {12, 20, 48, 80, 96}) {
    KvConfig f32;
    CHECK_NOTHROW(KvCache(f32, CacheShape{1, 2, hd, 32}));
  }
  const std::pair<int, int> groups[] = {{48, 24}, {80, 16}, {96, 32}, {64, 32}, {8, 8}};
  for (auto [hd, group] : groups) {
    for (Format f : {Format::kQ8, Format::kQ4}) {
      KvConfig c;
      c.k_format = c.v_format = f;
      INFO("head_dim " << hd << " " << kvrt::kv::format_name(f));
      CHECK(KvCache(c, CacheShape{1, 2, hd, 32}).layout().group == group);
    }
  }
  KvConfig q8;
  q8.k_format = q8.v_format = Format::kQ8;
  CHECK_THROWS_AS(KvCache(q8, CacheShape{1, 2, 12, 32}),
                  kvrt::Error);  // values take 8 dims at a time
}

TEST_CASE("invalid KV settings are clear errors") {
  const CacheShape shape{1, 2, 48, 64};
  KvConfig cfg;
  cfg.k_format = Format::kQ8;
  cfg.group_size = 32;  // does not divide 48
  CHECK_THROWS_AS(KvCache(cfg, shape), kvrt::Error);
  cfg.group_size = 12;  // divides 48 and is a multiple of q8's 4-dim key runs
  CHECK(KvCache(cfg, shape).layout().group == 12);
  cfg.k_format = Format::kQ4;  // q4 key runs are 8 dims
  CHECK_THROWS_AS(KvCache(cfg, shape), kvrt::Error);
  cfg.group_size = 0;  // the default: the largest group up to 32 that fits
  CHECK(KvCache(cfg, shape).layout().group == 24);
  cfg.group_size = 16;
  cfg.rotate = true;  // 48 rotates in blocks of 16
  CHECK(KvCache(cfg, shape).layout().layers[0].k.rot_block == 16);
  CHECK_THROWS_WITH_AS(KvCache(cfg, CacheShape{1, 2, 7, 32}),
                       doctest::Contains("needs an even head_dim"), kvrt::Error);
  CHECK_THROWS_AS(kvrt::kv::parse_format("q5"), kvrt::Error);
  KvConfig odd;  // channel-axis q4 keys: a code row is two channels per byte
  odd.k_format = Format::kQ4;
  odd.k_axis = KeyAxis::kChannel;
  odd.group_size = 4;
  CHECK_THROWS_AS(KvCache(odd, CacheShape{1, 2, 7, 32}), kvrt::Error);
  odd.group_size = 3;  // and a channel's G codes
  CHECK_THROWS_AS(KvCache(odd, CacheShape{1, 2, 8, 32}), kvrt::Error);
  odd.k_format = Format::kQ8;
  CHECK_NOTHROW(KvCache(odd, CacheShape{1, 2, 7, 32}));
}

TEST_CASE("a copy of a cache with sinks and per-layer formats attends exactly as the original") {
  const CacheShape shape{3, 2, 64, 160};
  Case c;
  c.shape = shape;
  c.n_heads = 4;
  c.n_prompt = 100;
  const Data d = make_data(c, 13, 4.0f);
  const KvConfig cfg =
      kvrt::kv::parse_setting("q4,axis=channel,r=8,sinks=5,layers[0]=q8,k[-1]=f32");
  KvCache a(cfg, shape), b(cfg, shape);
  for (int l = 0; l < shape.n_layers; ++l) a.write(l, 0, c.n_prompt, d.k.data(), d.v.data());
  b.copy_from(a);
  kvrt::ops::AttentionScratch scratch(shape, c.n_heads, 1, 1);
  const size_t q_tok = size_t(c.n_heads) * shape.head_dim;
  for (int l = 0; l < shape.n_layers; ++l) {
    std::vector<float> out_a(q_tok), out_b(q_tok);
    for (auto [cache, out] : {std::pair<KvCache*, float*>{&a, out_a.data()}, {&b, out_b.data()}}) {
      kvrt::ops::AttentionArgs args;
      args.layer = l;
      args.q = &d.q[(c.n_prompt - 1) * q_tok];
      args.n_tokens = 1;
      args.pos0 = c.n_prompt - 1;
      args.n_heads = c.n_heads;
      args.out = out;
      kvrt::ops::attention(*cache, args, scratch);
    }
    CAPTURE(l);
    CHECK(out_a == out_b);
  }
}
