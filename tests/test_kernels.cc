// Every kernel on every ISA this machine runs equals its scalar twin within a stated tolerance,
// and the quantize -> dequantize round trip stays within each format's analytic bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kv/blocks.h"
#include "kv/channel_tile.h"
#include "kv/tiles.h"
#include "simd/dispatch.h"
#include "simd/kernels_scalar.h"

namespace {

using namespace kvrt::simd;

// Reordered float sums: |simd - scalar| <= kSumTol * sum of |terms| (+ a tiny absolute floor).
constexpr double kSumTol = 1e-5;

std::vector<float> randn(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = nd(rng) * ((i % 13 == 5) ? 8.0f : 1.0f);  // outlier channels
  return x;
}

// Rows of codec C (simd/kernels.h): FP32 values, or random bare codes of a format.
template <class C>
std::vector<uint8_t> make_rows(int n, int n_rows, unsigned seed) {
  const size_t rb = static_cast<size_t>(n) * C::kBits / 8;
  std::vector<uint8_t> rows(rb * n_rows);
  const std::vector<float> x = randn(static_cast<size_t>(n) * n_rows, seed);
  std::mt19937 rng(seed);
  if constexpr (C::kBits == 32) std::memcpy(rows.data(), x.data(), rows.size());
  else if constexpr (C::kBits == 8) for (uint8_t& r : rows) r = static_cast<uint8_t>(rng() % 255 + 1);  // never -128
  else for (uint8_t& r : rows) r = static_cast<uint8_t>(rng());
  return rows;
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> isas;
  for (Isa isa : runnable_isas()) if (isa != Isa::kScalar) isas.push_back(isa);
  return isas;
}

// Calls fn(isa, format) for every quantized KV format (a kv::Format* tag) on every ISA this CPU
// runs, scalar last.
template <class Fn>
void for_each_isa_and_format(Fn fn) {
  std::vector<Isa> isas = simd_isas();
  isas.push_back(Isa::kScalar);
  for (Isa isa : isas) kvrt::kv::for_each_quant_format([&](auto format) { fn(isa, format); });
}

}  // namespace

TEST_CASE("the kernel table is chosen and names its ISA") {
  CHECK(std::string(isa_name()).size() > 0);
  CHECK_THROWS_AS(parse_isa("sse9"), kvrt::Error);
#if defined(__x86_64__)
  CHECK_THROWS_AS(kernels_for(Isa::kNeon), kvrt::Error);
#else
  CHECK_THROWS_AS(kernels_for(Isa::kAvx512), kvrt::Error);
#endif
  MESSAGE("runnable SIMD ISAs besides scalar: " << simd_isas().size() << ", chosen " << std::string(isa_name()));
}

namespace {

// k_dot (an ISA's slot for rows of codec C) equals scalar::dot<C> up to reordered sums.
template <class C>
void check_row_dot(Isa isa, void (*k_dot)(const DotArgs&), int n) {
  const int n_rows = 37, n_q = 6;
  const std::vector<uint8_t> rows = make_rows<C>(n, n_rows, n);
  const size_t rb = static_cast<size_t>(n) * C::kBits / 8;
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  std::vector<float> s_simd(n_q * n_rows), s_ref(n_q * n_rows);
  DotArgs d{q.data(), n_q, static_cast<size_t>(n), rows.data(), rb, n_rows, n, 0, s_simd.data(), static_cast<size_t>(n_rows)};
  k_dot(d);
  d.scores = s_ref.data();
  scalar::dot<C>(d);
  std::vector<float> x(n);
  for (int t = 0; t < n_rows; ++t) {
    scalar::dequantize_row<C>(rows.data() + t * rb, n, x.data());
    for (int i = 0; i < n_q; ++i) {
      double mag = 0;
      for (int j = 0; j < n; ++j) mag += std::abs(q[i * n + j] * x[j]);
      INFO(std::string(isa_to_string(isa)) << " bits " << C::kBits << " n " << n);
      REQUIRE(std::abs(s_simd[i * n_rows + t] - s_ref[i * n_rows + t]) <= kSumTol * mag + 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("row dot and acc equal the scalar twin, for FP32 rows") {
  for (Isa isa : simd_isas()) {
    const Kernels& k = kernels_for(isa);
    for (int n : {8, 64, 128, 96}) {
      check_row_dot<F32Rows>(isa, k.dot, n);
      const int n_rows = 37, n_q = 6;
      const std::vector<uint8_t> rows = make_rows<F32Rows>(n, n_rows, n);
      const size_t rb = sizeof(float) * n;
      const std::vector<float> p = randn(static_cast<size_t>(n_q) * n_rows, 5);
      std::vector<float> a_simd = randn(static_cast<size_t>(n_q) * n, 6), a_ref = a_simd;
      AccArgs a{p.data(), n_q, static_cast<size_t>(n_rows), rows.data(), rb, n_rows, n, 0, a_simd.data(), static_cast<size_t>(n)};
      k.acc(a);
      a.acc = a_ref.data();
      scalar::acc(a);
      for (size_t i = 0; i < a_ref.size(); ++i) REQUIRE(std::abs(a_simd[i] - a_ref[i]) <= kSumTol * (std::abs(a_ref[i]) + 40.0) + 1e-5);
    }
  }
}

namespace {

using kvrt::kv::TileFormat;
using kvrt::kv::TileRole;

// n_tiles tiles of one role and format F, filled through the reference codec and tile_store_row.
template <class F>
std::vector<uint8_t> make_tiles(const TileFormat& f, int n_tiles, unsigned seed) {
  std::vector<uint8_t> tiles(f.bytes() * n_tiles);
  const std::vector<float> x = randn(static_cast<size_t>(f.n) * n_tiles * kvrt::kv::kTileTokens, seed);
  std::vector<uint8_t> row(F::block_bytes(f.group) * (f.n / f.group));
  for (int t = 0; t < n_tiles * kvrt::kv::kTileTokens; ++t) {
    scalar::quantize<F>(&x[t * f.n], f.n, f.group, row.data());
    kvrt::kv::tile_store_row<F>(f, row.data(), t % kvrt::kv::kTileTokens, tiles.data() + t / kvrt::kv::kTileTokens * f.bytes());
  }
  return tiles;
}

// The reference dequantization of one row of blocks of F.
template <class F>
std::vector<float> dequantized(const std::vector<uint8_t>& row, int n, int group) {
  std::vector<float> y(n);
  for (int b = 0; b < n / group; ++b) kvrt::kv::dequantize_group<F>(row.data() + b * F::block_bytes(group), group, &y[b * group]);
  return y;
}

// tile_store_row then dequantize_tile gives back the reference dequantization.
template <class F>
void check_tile_roundtrip(const Kernels& k, int n, int group, int n_tiles) {
  for (TileRole role : {TileRole::kKey, TileRole::kValue}) {
    const auto f = TileFormat::of<F>(role, n, group);
    const std::vector<uint8_t> tiles = make_tiles<F>(f, n_tiles, n + group);
    const std::vector<float> x = randn(static_cast<size_t>(n) * n_tiles * 16, n + group);
    std::vector<float> got(16 * n);
    std::vector<uint8_t> row(F::block_bytes(group) * (n / group));
    k.format[static_cast<int>(F::kFormat)].dequantize_tile[static_cast<int>(role)](tiles.data(), n, group, got.data());
    for (int t = 0; t < 16; ++t) {
      scalar::quantize<F>(&x[t * n], n, group, row.data());
      const std::vector<float> ref = dequantized<F>(row, n, group);
      for (int j = 0; j < n; ++j) REQUIRE(got[t * n + j] == ref[j]);
    }
  }
}

// dot over key tiles with quantized queries: equal to the scalar twin, and q·k̂ up to q's
// quantization error |δq| <= d_q/2 per value.
template <class F>
void check_tile_dot(const Kernels& k, int n, int group, int n_rows, int n_q) {
  const int n_tiles = (n_rows + 15) / 16;
  const auto fk = TileFormat::of<F>(TileRole::kKey, n, group);
  const std::vector<uint8_t> kt = make_tiles<F>(fk, n_tiles, n + group);
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  std::vector<int8_t> qc(n_q * n);
  std::vector<float> qd(n_q * n / group), qsum(qd.size());
  std::vector<int32_t> qcsum(qd.size());
  scalar::QueryBuffers qb{qc.data(), qd.data(), qsum.data(), qcsum.data()};
  scalar::quantize_queries(q.data(), n_q, n, n, group, qb);
  const QueryCodes codes = qb.view();
  std::vector<float> s_simd(n_q * n_rows, -1.0f), s_ref(n_q * n_rows, -1.0f);
  DotArgs d{q.data(), n_q, static_cast<size_t>(n), kt.data(), fk.bytes(), n_rows, n, group, s_simd.data(), static_cast<size_t>(n_rows), &codes};
  k.format[static_cast<int>(F::kFormat)].dot(d);
  d.scores = s_ref.data();
  scalar::dot_tiles(fk, d);
  for (int i = 0; i < n_q * n_rows; ++i) REQUIRE(std::abs(s_simd[i] - s_ref[i]) <= 1e-5 * std::abs(s_ref[i]) + 1e-5);
  for (int t = 0; t < n_rows; ++t) {
    std::vector<float> kx(16 * n);
    const uint8_t* tile = kt.data() + t / 16 * fk.bytes();
    scalar::dequantize_tile(fk, tile, kx.data());
    for (int i = 0; i < n_q; ++i) {
      double exact = 0, err = 0;
      for (int j = 0; j < n; ++j) {
        exact += double(q[i * n + j]) * kx[t % 16 * n + j];
        const float m = F::kSymmetric ? 0.0f : kvrt::kv::tile_min(fk, tile, j / group, t % 16);
        err += qd[i * n / group + j / group] / 2 * std::abs(kx[t % 16 * n + j] - m);
      }
      REQUIRE(std::abs(s_ref[i * n_rows + t] - exact) <= err * (1 + 1e-4) + 1e-4 * std::abs(exact) + 1e-5);
    }
  }
}

// acc over value tiles, against the scalar twin and against FP32 with the int16 weight bound.
template <class F>
void check_tile_acc(const Kernels& k, int n, int group, int n_rows) {
  const int n_q = 6, n_tiles = (n_rows + 15) / 16;
  const auto fv = TileFormat::of<F>(TileRole::kValue, n, group);
  const std::vector<uint8_t> vt = make_tiles<F>(fv, n_tiles, n + group + 1);
  const std::vector<float> p = randn(static_cast<size_t>(n_q) * n_rows, 5);
  std::vector<float> a_simd = randn(static_cast<size_t>(n_q) * n, 6), a_ref = a_simd, a_f32 = a_simd;
  AccArgs a{p.data(), n_q, static_cast<size_t>(n_rows), vt.data(), fv.bytes(), n_rows, n, group, a_simd.data(), static_cast<size_t>(n)};
  k.format[static_cast<int>(F::kFormat)].acc(a);
  a.acc = a_ref.data();
  scalar::acc_tiles(fv, a);
  std::vector<float> vx(n_tiles * 16 * n);
  for (int tile = 0; tile < n_tiles; ++tile) scalar::dequantize_tile(fv, vt.data() + tile * fv.bytes(), &vx[tile * 16 * n]);
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
      // n_rows * pmax * vmax / 65534 * 2 (codes of asymmetric formats reach vmax only with the minimum)
      REQUIRE(std::abs(a_ref[e] - exact) <= n_rows * pmax * vmax / 65534.0 * 2 + 1e-5 * (std::abs(exact) + 40.0));
    }
  }
}

}  // namespace

TEST_CASE("tiles hold the reference blocks, and the tile kernels equal the scalar twin") {
  for_each_isa_and_format([](Isa isa, auto format) {
    using F = decltype(format);
    const Kernels& k = kernels_for(isa);
    const FormatKernels& fk = k.format[static_cast<int>(F::kFormat)];
    const FormatKernels& sk = kernels_for(Isa::kScalar).format[static_cast<int>(F::kFormat)];
    for (int n : {8, 64, 128, 96, 48}) {
      // 12: q8 key groups of an odd number of 4-dim lanes, which values (8 dims a column) refuse
      for (int group : {8, 12, 16, 24, 32, 64, 128}) {
        if (n % group || group % (kvrt::kv::kKeyLaneDims * F::kPerByte)) continue;
        const bool values = group % kAccColumnDims == 0;
        INFO(std::string(isa_to_string(isa)) << " " << F::kName << " n " << n << " group " << group);
        if (isa != Isa::kScalar) {  // every SIMD table has its own tile kernels
          CHECK((fk.dot != sk.dot));
          CHECK((fk.acc != sk.acc));
          CHECK((fk.dequantize_tile[1] != sk.dequantize_tile[1]));
        }
        if (values) check_tile_roundtrip<F>(k, n, group, 3);
        for (int n_rows : {37, 150}) {  // 150: several kAccChunk runs and a partial tile
          for (int n_q : {1, 7}) check_tile_dot<F>(k, n, group, n_rows, n_q);  // query groups of 1, 4 and 3
          if (values) check_tile_acc<F>(k, n, group, n_rows);
        }
      }
    }
  });
}

namespace {

// dot_channel over channel-axis key tiles of F (kv::channel_quantize of random keys, tiles
// `pad` bytes apart beyond their size), from token `first` of tile 0 on: equal to the scalar
// twin up to reordered sums, and the twin equal to q · the dequantized keys likewise.
template <class F>
void check_channel_dot(Isa isa, const FormatKernels& fk, int n, int group, int first, int n_q) {
  const int n_tiles = 5, pad = 64, n_rows = n_tiles * group - first - 1;
  const size_t tile_bytes = kvrt::kv::channel_codes_offset<F>(n) + static_cast<size_t>(group) * n * F::kBits / 8, stride = tile_bytes + pad;
  const std::vector<float> x = randn(static_cast<size_t>(n_tiles) * group * n, n + group);  // [n_tiles * group][n]
  std::vector<uint8_t> tiles(stride * n_tiles, 0xa5);
  for (int i = 0; i < n_tiles; ++i) kvrt::kv::channel_quantize<F>(&x[static_cast<size_t>(i) * group * n], group, n, tiles.data() + i * stride);
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  std::vector<float> s_simd(n_q * n_rows, -1.0f), s_ref(n_q * n_rows, -1.0f), k(n);
  DotArgs d{q.data(), n_q, static_cast<size_t>(n), tiles.data(), stride, n_rows, n, group, s_simd.data(), static_cast<size_t>(n_rows), nullptr, first};
  fk.dot_channel(d);
  d.scores = s_ref.data();
  scalar::dot_channel<F>(d);
  INFO(std::string(isa_to_string(isa)) << " " << F::kName << " n " << n << " group " << group << " first " << first << " n_q " << n_q);
  for (int t = 0; t < n_rows; ++t) {
    const uint8_t* tile = tiles.data() + (first + t) / group * stride;
    kvrt::kv::channel_dequantize_row<F>(tile, (first + t) % group, n, k.data());
    for (int i = 0; i < n_q; ++i) {
      double exact = 0, mag = 0;
      for (int c = 0; c < n; ++c) {
        exact += double(q[i * n + c]) * k[c];
        const float m = F::kSymmetric ? 0.0f : kvrt::kv::channel_scale(tile, n, 1, c);
        mag += std::abs(q[i * n + c]) * (std::abs(k[c] - m) + 2 * std::abs(m));
      }
      REQUIRE(std::abs(s_simd[i * n_rows + t] - s_ref[i * n_rows + t]) <= kSumTol * mag + 1e-6);
      REQUIRE(std::abs(s_ref[i * n_rows + t] - exact) <= kSumTol * mag + 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("channel-axis key tiles: dot_channel equals the scalar twin, and both q · the dequantized keys") {
  for_each_isa_and_format([](Isa isa, auto format) {
    using F = decltype(format);
    const Kernels& k = kernels_for(isa);
    const FormatKernels& fk = k.format[static_cast<int>(F::kFormat)];
    if (isa != Isa::kScalar) CHECK((fk.dot_channel != kernels_for(Isa::kScalar).format[static_cast<int>(F::kFormat)].dot_channel));
    for (int n : {8, 64, 96, 128}) {
      for (int group : {8, 12, 32, 128}) {  // tokens per tile; 12: not a power of two
        if (group * F::kBits % 8) continue;
        for (int first : {0, group / 2 + 1}) {
          for (int n_q : {1, 7}) check_channel_dot<F>(isa, fk, n, group, first, n_q);  // query groups of 1, 4 and 3
        }
      }
    }
  });
}

TEST_CASE("quantize equals the scalar twin bit for bit and round trips within the bound") {
  for_each_isa_and_format([](Isa isa, auto format) {
    using F = decltype(format);
    const Kernels& k = kernels_for(isa);
    for (int n : {8, 24, 64, 128}) {
      for (int group : {8, 12, 16, 24, 32, 64, 128}) {
        if (n % group) continue;
        const std::vector<float> x = randn(n, 11 * n + group, 3.0f);
        const size_t rb = F::block_bytes(group) * (n / group);
        std::vector<uint8_t> r_simd(rb), r_ref(rb);
        k.format[static_cast<int>(F::kFormat)].quantize(x.data(), n, group, r_simd.data());
        scalar::quantize<F>(x.data(), n, group, r_ref.data());
        INFO(std::string(isa_to_string(isa)) << " " << F::kName << " n " << n << " group " << group);
        CHECK(r_simd == r_ref);
        const std::vector<float> y = dequantized<F>(r_simd, n, group);
        for (int g = 0; g < n / group; ++g) {
          float mn = x[g * group], mx = mn, amax = 0;
          for (int i = g * group; i < (g + 1) * group; ++i) {
            mn = std::min(mn, x[i]);
            mx = std::max(mx, x[i]);
            amax = std::max(amax, std::abs(x[i]));
          }
          // The stored FP16 minimum is the group's to FP16 precision, and the stored scale to
          // FP16 precision: amax / max code (q8), e / min code for e the value of largest
          // magnitude (q4s, negative for a positive e), or (max - m) / max code (asymmetric).
          const uint8_t* block = r_simd.data() + g * F::block_bytes(group);
          const float d = kvrt::kv::load_scale(block), m = F::kSymmetric ? 0.0f : kvrt::kv::load_scale(block + sizeof(kvrt::kv::Scale));
          const double d_exact = F::kAbsScale ? amax / double(F::kMaxCode)
                                 : F::kSymmetric ? (-mn > mx ? mn : mx) / double(F::kMinCode)
                                                 : (mx - m) / double(F::kMaxCode);
          if (!F::kSymmetric) REQUIRE(std::abs(m - mn) <= std::abs(mn) * 0x1p-11);
          REQUIRE(std::abs(d - d_exact) <= std::abs(d_exact) * (0x1p-11 + 1e-6));
          // |d|/2 for every value, and below the minimum where the rounded one lies above it;
          // symmetric formats clamp at max code |d| what lies beyond it: up to |d| for q4s's
          // values of the other sign than e (its range is one code short there), a sliver of
          // FP16 rounding for q8; plus float rounding of the code math.
          const double bound = F::kSymmetric ? std::max(std::abs(d) / 2.0, amax - F::kMaxCode * double(std::abs(d)))
                                             : d / 2.0 + std::max(0.0f, m - mn);
          for (int i = g * group; i < (g + 1) * group; ++i) {
            REQUIRE(std::abs(y[i] - x[i]) <= bound * (1 + 1e-5) + 1e-6 * amax);
            // q4s: e lands on the min code, exact but for the FP16 rounding of d
            if (F::kSymmetric && !F::kAbsScale && std::abs(x[i]) == amax) REQUIRE(std::abs(y[i] - x[i]) <= amax * 0x1p-11);
          }
        }
      }
    }
  });
}
TEST_CASE("the bf16 prefill tiles equal the scalar twin (vdpbf16ps where the CPU has AVX512-BF16)") {
  for (Isa isa : simd_isas()) {
    const Kernels& k = kernels_for(isa);
    INFO("isa " << isa_to_string(isa));
    for (int n : {1, 16, 37, 64}) {  // pairs: the vector loops and their scalar tail, two rows and one
      const std::vector<float> x0 = randn(2 * n, 11), x1 = randn(n, 12);
      std::vector<uint32_t> p1(n), p2(n);
      const struct { const float* x1; int step; } cases[] = {{x1.data(), 1}, {nullptr, 1}, {x0.data() + 1, 2}, {nullptr, 2}};
      for (const auto& c : cases) {
        k.bf16_pairs(x0.data(), c.x1, c.step, n, p1.data());
        scalar::bf16_pairs(x0.data(), c.x1, c.step, n, p2.data());
        CHECK(p1 == p2);  // both round to nearest, ties to even
      }
    }
    for (int n_r : {16, 48, 80}) {
      for (int n_kp : {1, 19, 32}) {
        for (int n_i : {1, 9, 64}) {
          const size_t b_i = n_kp + 2;  // rows of b at a stride longer than their pairs
          const std::vector<float> fa = randn(2 * n_kp * n_r, 13), fb = randn(2 * n_i * b_i, 14);
          std::vector<uint32_t> a(n_kp * n_r), b(n_i * b_i);
          for (int p = 0; p < n_kp; ++p) scalar::bf16_pairs(&fa[2 * p * n_r], &fa[(2 * p + 1) * n_r], 1, n_r, &a[p * n_r]);
          scalar::bf16_pairs(fb.data(), fb.data() + 1, 2, n_i * b_i, b.data());
          std::vector<float> c1 = randn(n_i * n_r, 15), c2 = c1;
          for (bool accumulate : {false, true}) {
            k.gemm_bf16({a.data(), b.data(), b_i, 1, c1.data(), n_r, n_i, n_kp, accumulate});
            scalar::gemm_bf16({a.data(), b.data(), b_i, 1, c2.data(), n_r, n_i, n_kp, accumulate});
            for (int i = 0; i < n_i * n_r; ++i) REQUIRE(std::abs(c1[i] - c2[i]) <= kSumTol * 8 * 2 * n_kp + 1e-5);
          }
        }
      }
    }
  }
}

TEST_CASE("exp_sum, swiglu, geglu, hadamard and the prefill tiles equal the scalar twin") {
  for (Isa isa : simd_isas()) {
    const Kernels& k = kernels_for(isa);
    for (int n : {1, 15, 16, 100, 1000}) {  // gates up to ±100: silu's exp overflows to a zero
      std::vector<float> x = randn(n, n + 1);
      const std::vector<float> up = randn(n, n + 2);
      for (int i = 0; i < n; ++i) x[i] *= i % 7 == 0 ? 30.0f : 3.0f;
      std::vector<float> a = x, b = x, c = x, d = x;
      k.swiglu(a.data(), up.data(), n);
      scalar::swiglu(b.data(), up.data(), n);
      for (int i = 0; i < n; ++i) REQUIRE(std::abs(a[i] - b[i]) <= 1e-6f * std::abs(b[i]));
      k.geglu(c.data(), up.data(), n);
      scalar::geglu(d.data(), up.data(), n);
      // 1 + tanh cancels for negative gates: the error is relative to x · up, not the result
      for (int i = 0; i < n; ++i) REQUIRE(std::abs(c[i] - d[i]) <= 1e-6f * std::abs(x[i] * up[i]));
    }
    for (int n : {1, 8, 31, 64, 128, 257}) {
      std::vector<float> a = randn(n, n), b = a;
      const float sa = k.exp_sum(a.data(), n, 2.0f), sb = scalar::exp_sum(b.data(), n, 2.0f);
      for (int i = 0; i < n; ++i) REQUIRE(std::abs(a[i] - b[i]) <= 2e-6 * b[i]);
      CHECK(std::abs(sa - sb) <= 1e-5 * sb);
    }
    for (int n : {8, 16, 64, 128, 256}) {
      std::vector<float> a = randn(n, n), b = a;
      double norm2 = 0, norm2_after = 0;
      for (float v : a) norm2 += double(v) * v;
      k.hadamard(a.data(), n);
      scalar::hadamard(b.data(), n);
      for (int i = 0; i < n; ++i) REQUIRE(a[i] == b[i]);  // same additions in the same order
      for (float v : a) norm2_after += double(v) * v;
      CHECK(norm2_after == doctest::Approx(norm2).epsilon(1e-5));  // orthonormal
    }
    for (int n_r : {16, 48, 80}) {  // rows in the lanes: 1, 3 and 5 vectors of 16
      for (int n_d : {8, 64, 128}) {
        for (int n_j : {1, 37, 64}) {
          // K and V rows at a stride longer than head_dim, as the f32 cache's rows of all kv heads
          const size_t stride = n_d + 3;
          const std::vector<float> qt = randn(n_d * n_r, 1), kv = randn(n_j * stride, 2), p = randn(n_j * n_r, 3);
          std::vector<float> s1(n_j * n_r), s2(n_j * n_r), o1 = randn(n_d * n_r, 5), o2 = o1;
          k.gemm({qt.data(), kv.data(), stride, 1, s1.data(), n_r, n_j, n_d, false});
          scalar::gemm({qt.data(), kv.data(), stride, 1, s2.data(), n_r, n_j, n_d, false});
          for (int i = 0; i < n_j * n_r; ++i) REQUIRE(std::abs(s1[i] - s2[i]) <= kSumTol * 8 * n_d + 1e-5);
          k.gemm({p.data(), kv.data(), 1, stride, o1.data(), n_r, n_d, n_j, true});
          scalar::gemm({p.data(), kv.data(), 1, stride, o2.data(), n_r, n_d, n_j, true});
          for (int i = 0; i < n_d * n_r; ++i) REQUIRE(std::abs(o1[i] - o2[i]) <= kSumTol * 8 * n_j + 1e-5);
        }
      }
    }
    for (int n_r : {16, 48}) {
      for (int n_j : {1, 37, 64}) {
        const int n_d = 24;
        // masked scores, rows with no visible key in this tile or none at all yet
        std::vector<float> s1 = randn(n_j * n_r, 6), m1 = randn(n_r, 7), l1(n_r), o1 = randn(n_d * n_r, 8);
        for (int r = 0; r < n_r; ++r) {
          l1[r] = 1.0f + r;
          if (r % 5 == 1) m1[r] = -INFINITY;
          for (int j = 0; j < n_j; ++j) {
            if (r % 3 == 2 || (r + j) % 7 == 0) s1[j * n_r + r] = -INFINITY;
          }
        }
        std::vector<float> s2 = s1, m2 = m1, l2 = l1, o2 = o1;
        k.softmax({s1.data(), m1.data(), l1.data(), o1.data(), n_r, n_j, n_d});
        scalar::softmax({s2.data(), m2.data(), l2.data(), o2.data(), n_r, n_j, n_d});
        for (int r = 0; r < n_r; ++r) {
          REQUIRE(m1[r] == m2[r]);
          REQUIRE(std::abs(l1[r] - l2[r]) <= 2e-6 * l2[r]);
        }
        for (int i = 0; i < n_j * n_r; ++i) REQUIRE(std::abs(s1[i] - s2[i]) <= 2e-6 * s2[i]);
        for (int i = 0; i < n_d * n_r; ++i) REQUIRE(std::abs(o1[i] - o2[i]) <= 2e-6 * std::abs(o2[i]));
      }
    }
  }
}
