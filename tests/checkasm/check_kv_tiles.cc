// The tile kernels of every quantized KV format (kv/tiles.h): tile_store_row then dequantize_tile
// gives back the reference blocks; dot over key tiles with quantized queries and acc over value
// tiles equal the scalar twin, and the twin equals FP32 within q's quantization error and acc's
// int16 weight bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "checkasm.h"
#include "kv/blocks.h"
#include "kv/tiles.h"
#include "simd/kernels_scalar.h"

namespace kvrt::checkasm {
namespace {

using kv::TileFormat;
using kv::TileRole;
using simd::AccArgs;
using simd::DotArgs;

// n_tiles tiles of one role and format F, filled through the reference codec and tile_store_row.
template <class F>
std::vector<uint8_t> make_tiles(const TileFormat& f, int n_tiles, unsigned seed) {
  std::vector<uint8_t> tiles(f.bytes() * n_tiles);
  const std::vector<float> x = randn(static_cast<size_t>(f.n) * n_tiles * kv::kTileTokens, seed);
  std::vector<uint8_t> row(F::block_bytes(f.group) * (f.n / f.group));
  for (int t = 0; t < n_tiles * kv::kTileTokens; ++t) {
    simd::scalar::quantize<F>(&x[t * f.n], f.n, f.group, row.data());
    kv::tile_store_row<F>(f, row.data(), t % kv::kTileTokens,
                          tiles.data() + t / kv::kTileTokens * f.bytes());
  }
  return tiles;
}

// The reference dequantization of one row of blocks of F.
template <class F>
std::vector<float> dequantized(const std::vector<uint8_t>& row, int n, int group) {
  std::vector<float> y(n);
  for (int b = 0; b < n / group; ++b)
    kv::dequantize_group<F>(row.data() + b * F::block_bytes(group), group, &y[b * group]);
  return y;
}

template <class F>
const simd::FormatKernels& slots(const simd::Kernels& k) {
  return k.format[static_cast<int>(F::kFormat)];
}

// tile_store_row then dequantize_tile gives back the reference dequantization.
template <class F>
void check_tile_roundtrip(const simd::Kernels& k, int n, int group, int n_tiles) {
  for (TileRole role : {TileRole::kKey, TileRole::kValue}) {
    const auto f = TileFormat::of<F>(role, n, group);
    const std::vector<uint8_t> tiles = make_tiles<F>(f, n_tiles, n + group);
    const std::vector<float> x = randn(static_cast<size_t>(n) * n_tiles * 16, n + group);
    std::vector<float> got(16 * n);
    std::vector<uint8_t> row(F::block_bytes(group) * (n / group));
    slots<F>(k).dequantize_tile[static_cast<int>(role)](tiles.data(), n, group, got.data());
    for (int t = 0; t < 16; ++t) {
      simd::scalar::quantize<F>(&x[t * n], n, group, row.data());
      const std::vector<float> ref = dequantized<F>(row, n, group);
      for (int j = 0; j < n; ++j) REQUIRE(got[t * n + j] == ref[j]);
    }
  }
}

// Queries quantized by the scalar rung's quantize_queries, and their codes.
struct Queries {
  std::vector<int8_t> c;
  std::vector<float> d, sum;
  std::vector<int32_t> csum;
  simd::QueryCodes codes;
  Queries(const simd::Kernels& scalar, const std::vector<float>& q, int n_q, int n, int group)
      : c(n_q * n), d(n_q * n / group), sum(d.size()), csum(d.size()) {
    const simd::QueryBuffers b{c.data(), d.data(), sum.data(), csum.data()};
    scalar.quantize_queries(q.data(), n_q, n, n, group, b);
    codes = b.view();
  }
};

// dot over key tiles with quantized queries: equal to the scalar twin, and q·k̂ up to q's
// quantization error |δq| <= d_q/2 per value.
template <class F>
void check_tile_dot(const Rung& r, int n, int group, int n_rows, int n_q) {
  const int n_tiles = (n_rows + 15) / 16;
  const auto fk = TileFormat::of<F>(TileRole::kKey, n, group);
  const std::vector<uint8_t> kt = make_tiles<F>(fk, n_tiles, n + group);
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  const Queries qs(r.scalar, q, n_q, n, group);
  std::vector<float> s_simd(n_q * n_rows, -1.0f), s_ref(n_q * n_rows, -1.0f);
  DotArgs d{q.data(), n_q,           static_cast<size_t>(n),      kt.data(), fk.bytes(), n_rows, n,
            group,    s_simd.data(), static_cast<size_t>(n_rows), &qs.codes};
  slots<F>(r.k).dot(d);
  d.scores = s_ref.data();
  simd::scalar::dot_tiles(fk, d);
  for (int i = 0; i < n_q * n_rows; ++i)
    REQUIRE(std::abs(s_simd[i] - s_ref[i]) <= 1e-5 * std::abs(s_ref[i]) + 1e-5);
  for (int t = 0; t < n_rows; ++t) {
    std::vector<float> kx(16 * n);
    const uint8_t* tile = kt.data() + t / 16 * fk.bytes();
    simd::scalar::dequantize_tile(fk, tile, kx.data());
    for (int i = 0; i < n_q; ++i) {
      double exact = 0, err = 0;
      for (int j = 0; j < n; ++j) {
        exact += double(q[i * n + j]) * kx[t % 16 * n + j];
        const float m = F::kSymmetric ? 0.0f : kv::tile_min(fk, tile, j / group, t % 16);
        err += qs.d[i * n / group + j / group] / 2 * std::abs(kx[t % 16 * n + j] - m);
      }
      REQUIRE(std::abs(s_ref[i * n_rows + t] - exact) <=
              err * (1 + 1e-4) + 1e-4 * std::abs(exact) + 1e-5);
    }
  }
}

// acc over value tiles, against the scalar twin and against FP32 with the int16 weight bound.
template <class F>
void check_tile_acc(const simd::Kernels& k, int n, int group, int n_rows) {
  const int n_q = 6, n_tiles = (n_rows + 15) / 16;
  const auto fv = TileFormat::of<F>(TileRole::kValue, n, group);
  const std::vector<uint8_t> vt = make_tiles<F>(fv, n_tiles, n + group + 1);
  const std::vector<float> p = randn(static_cast<size_t>(n_q) * n_rows, 5);
  std::vector<float> a_simd = randn(static_cast<size_t>(n_q) * n, 6), a_ref = a_simd,
                     a_f32 = a_simd;
  AccArgs a{p.data(), n_q,           static_cast<size_t>(n_rows), vt.data(), fv.bytes(), n_rows, n,
            group,    a_simd.data(), static_cast<size_t>(n)};
  slots<F>(k).acc(a);
  a.acc = a_ref.data();
  simd::scalar::acc_tiles(fv, a);
  std::vector<float> vx(n_tiles * 16 * n);
  for (int tile = 0; tile < n_tiles; ++tile)
    simd::scalar::dequantize_tile(fv, vt.data() + tile * fv.bytes(), &vx[tile * 16 * n]);
  for (int i = 0; i < n_q; ++i) {
    float pmax = 0, vmax = 0;
    for (int t = 0; t < n_rows; ++t) pmax = std::max(pmax, std::abs(p[i * n_rows + t]));
    for (int t = 0; t < n_rows * n; ++t) vmax = std::max(vmax, std::abs(vx[t]));
    for (int j = 0; j < n; ++j) {
      double exact = a_f32[i * n + j];
      for (int t = 0; t < n_rows; ++t) exact += double(p[i * n_rows + t]) * vx[t * n + j];
      const size_t e = i * n + j;
      REQUIRE(std::abs(a_simd[e] - a_ref[e]) <= kSumTol * (std::abs(a_ref[e]) + 40.0) + 1e-5);
      // each weight p d is off by <= pmax dmax / 65534, times |code| <= max code: at most
      // n_rows * pmax * vmax / 65534 * 2 (codes of asymmetric formats reach vmax only with the
      // minimum)
      REQUIRE(std::abs(a_ref[e] - exact) <=
              n_rows * pmax * vmax / 65534.0 * 2 + 1e-5 * (std::abs(exact) + 40.0));
    }
  }
}

template <class F>
void check_tiles(const Rung& r) {
  for (int n : {8, 64, 128, 96, 48}) {
    // 12: q8 key groups of an odd number of 4-dim lanes, which values (8 dims a column) refuse
    for (int group : {8, 12, 16, 24, 32, 64, 128}) {
      if (n % group || group % (kv::kKeyLaneDims * F::kRuns)) continue;
      const bool values = group % kv::kAccColumnDims == 0;
      INFO(std::string(F::kName) << " n " << n << " group " << group);
      if (values) check_tile_roundtrip<F>(r.k, n, group, 3);
      for (int n_rows : {37, 150}) {  // 150: several kAccChunk runs and a partial tile
        for (int n_q : {1, 7})
          check_tile_dot<F>(r, n, group, n_rows, n_q);  // query groups of 1, 4 and 3
        if (values) check_tile_acc<F>(r.k, n, group, n_rows);
      }
    }
  }
}

// One decode step's work on 4 query heads over 256 tokens of head_dim 128 (group 32).
template <class F>
std::vector<BenchCall> bench_tiles(const Rung& r) {
  struct State {
    int n = 128, group = 32, n_rows = 256, n_q = 4;
    std::vector<float> q, p, scores, acc, x;
    std::vector<uint8_t> kt, vt;
    std::vector<int8_t> c;
    std::vector<float> d, sum;
    std::vector<int32_t> csum;
    simd::QueryCodes codes;
  };
  auto s = std::make_shared<State>();
  const auto fk = TileFormat::of<F>(TileRole::kKey, s->n, s->group),
             fv = TileFormat::of<F>(TileRole::kValue, s->n, s->group);
  s->kt = make_tiles<F>(fk, s->n_rows / 16, 1);
  s->vt = make_tiles<F>(fv, s->n_rows / 16, 2);
  s->q = randn(s->n_q * s->n, 3);
  s->p = randn(s->n_q * s->n_rows, 4);
  s->scores.resize(s->n_q * s->n_rows);
  s->acc.resize(s->n_q * s->n);
  s->x.resize(16 * s->n);
  s->c.resize(s->n_q * s->n);
  s->d.resize(s->n_q * s->n / s->group);
  s->sum.resize(s->d.size());
  s->csum.resize(s->d.size());
  const simd::QueryBuffers b{s->c.data(), s->d.data(), s->sum.data(), s->csum.data()};
  r.scalar.quantize_queries(s->q.data(), s->n_q, s->n, s->n, s->group, b);
  s->codes = b.view();
  const simd::FormatKernels& k = slots<F>(r.k);
  const std::string name = F::kName;
  return {
      {"attention.dot." + name,
       [s, &k, fk] {
         k.dot({s->q.data(), s->n_q, size_t(s->n), s->kt.data(), fk.bytes(), s->n_rows, s->n,
                s->group, s->scores.data(), size_t(s->n_rows), &s->codes});
       }},
      {"attention.acc." + name,
       [s, &k, fv] {
         k.acc({s->p.data(), s->n_q, size_t(s->n_rows), s->vt.data(), fv.bytes(), s->n_rows, s->n,
                s->group, s->acc.data(), size_t(s->n)});
       }},
      {"prefill.dequantize_k." + name,
       [s, &k] { k.dequantize_tile[0](s->kt.data(), s->n, s->group, s->x.data()); }},
      {"prefill.dequantize_v." + name,
       [s, &k] { k.dequantize_tile[1](s->vt.data(), s->n, s->group, s->x.data()); }},
  };
}

const bool kRegistered = add_per_format([](auto format) -> Check {
  using F = decltype(format);
  const std::string name = F::kName;
  return {"tiles " + name,
          {"attention.dot." + name, "attention.acc." + name, "prefill.dequantize_k." + name,
           "prefill.dequantize_v." + name},
          true,
          check_tiles<F>,
          bench_tiles<F>};
});

}  // namespace
}  // namespace kvrt::checkasm

TEST_CASE("checkasm: every SIMD rung has its own tile kernels of every format") {
  using kvrt::simd::Isa;
  for (Isa isa : kvrt::simd::runnable_isas()) {
    if (isa == Isa::kScalar) continue;
    kvrt::kv::for_each_quant_format([&](auto format) {
      using F = decltype(format);
      const auto& fk = kvrt::simd::kernels_for(isa).format[static_cast<int>(F::kFormat)];
      const auto& sk = kvrt::simd::kernels_for(Isa::kScalar).format[static_cast<int>(F::kFormat)];
      INFO(std::string(kvrt::simd::isa_to_string(isa)) << " " << std::string(F::kName));
      CHECK((fk.dot != sk.dot));
      CHECK((fk.acc != sk.acc));
      CHECK((fk.dequantize_tile[1] != sk.dequantize_tile[1]));
      CHECK((fk.dot_channel != sk.dot_channel));
    });
  }
}
