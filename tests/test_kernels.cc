// Every kernel on every ISA this machine runs equals its scalar twin within a stated tolerance,
// and the quantize -> dequantize round trip stays within each format's analytic bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/blocks.h"
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

size_t row_bytes(Codec c, int n, int group) {
  switch (c) {
    case Codec::kF32: return sizeof(float) * n;
    case Codec::kQ8: return n / group * kvrt::kv::q8_block_bytes(group);
    case Codec::kQ4: return n / group * kvrt::kv::q4_block_bytes(group);
    case Codec::kRaw8: return n;
    case Codec::kRaw4: return n / 2;
  }
  return 0;
}

// Rows of random codes built by the scalar quantizer (raw codecs: random bytes).
std::vector<uint8_t> make_rows(Codec c, int n, int group, int n_rows, unsigned seed) {
  const size_t rb = row_bytes(c, n, group);
  std::vector<uint8_t> rows(rb * n_rows);
  const std::vector<float> x = randn(static_cast<size_t>(n) * n_rows, seed);
  std::mt19937 rng(seed);
  for (int t = 0; t < n_rows; ++t) {
    uint8_t* r = rows.data() + t * rb;
    if (c == Codec::kF32) std::memcpy(r, &x[t * n], rb);
    if (c == Codec::kQ8) scalar::q8_quantize(&x[t * n], n, group, r);
    if (c == Codec::kQ4) scalar::q4_quantize(&x[t * n], n, group, r);
    if (c == Codec::kRaw8) for (size_t i = 0; i < rb; ++i) r[i] = static_cast<uint8_t>(rng() % 255 + 1);  // never -128
    if (c == Codec::kRaw4) for (size_t i = 0; i < rb; ++i) r[i] = static_cast<uint8_t>(rng());
  }
  return rows;
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> isas;
  for (Isa isa : runnable_isas()) if (isa != Isa::kScalar) isas.push_back(isa);
  return isas;
}

const Codec kCodecs[] = {Codec::kF32, Codec::kQ8, Codec::kQ4, Codec::kRaw8, Codec::kRaw4};

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

TEST_CASE("dot, acc and dequantize equal the scalar twin") {
  for (Isa isa : simd_isas()) {
    const Kernels& k = kernels_for(isa);
    for (int n : {8, 64, 128, 96}) {
      for (int group = 8; group <= std::min(n, 128); group *= 2) {
        if (n % group) continue;
        for (Codec c : kCodecs) {
          const int n_rows = 37, n_q = 6;
          const std::vector<uint8_t> rows = make_rows(c, n, group, n_rows, n + group);
          const size_t rb = row_bytes(c, n, group);
          const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
          std::vector<float> s_simd(n_q * n_rows), s_ref(n_q * n_rows);
          DotArgs d{q.data(), n_q, static_cast<size_t>(n), rows.data(), rb, n_rows, n, group, s_simd.data(), static_cast<size_t>(n_rows)};
          k.dot[static_cast<int>(c)](d);
          d.scores = s_ref.data();
          scalar::dot(c, d);
          std::vector<float> x(n);
          for (int t = 0; t < n_rows; ++t) {
            scalar::dequantize(c, rows.data() + t * rb, n, group, x.data());
            std::vector<float> xs(n);
            k.dequantize[static_cast<int>(c)](rows.data() + t * rb, n, group, xs.data());
            for (int j = 0; j < n; ++j) REQUIRE(std::abs(xs[j] - x[j]) <= 1e-6 * std::abs(x[j]) + 1e-6);
            for (int i = 0; i < n_q; ++i) {
              double mag = 0;
              for (int j = 0; j < n; ++j) mag += std::abs(q[i * n + j] * x[j]);
              INFO(std::string(isa_to_string(isa)) << " codec " << int(c) << " n " << n << " group " << group);
              REQUIRE(std::abs(s_simd[i * n_rows + t] - s_ref[i * n_rows + t]) <= kSumTol * mag + 1e-6);
            }
          }
          if (c > Codec::kQ4) continue;
          const std::vector<float> p = randn(static_cast<size_t>(n_q) * n_rows, 5);
          std::vector<float> a_simd = randn(static_cast<size_t>(n_q) * n, 6), a_ref = a_simd;
          AccArgs a{p.data(), n_q, static_cast<size_t>(n_rows), rows.data(), rb, n_rows, n, group, a_simd.data(), static_cast<size_t>(n)};
          k.acc[static_cast<int>(c)](a);
          a.acc = a_ref.data();
          scalar::acc(c, a);
          for (size_t i = 0; i < a_ref.size(); ++i) {
            INFO(std::string(isa_to_string(isa)) << " acc codec " << int(c) << " n " << n << " group " << group);
            REQUIRE(std::abs(a_simd[i] - a_ref[i]) <= kSumTol * (std::abs(a_ref[i]) + 40.0) + 1e-5);
          }
        }
      }
    }
  }
}

TEST_CASE("quantize equals the scalar twin bit for bit and round trips within the bound") {
  std::vector<Isa> isas = simd_isas();
  isas.push_back(Isa::kScalar);
  for (Isa isa : isas) {
    const Kernels& k = kernels_for(isa);
    for (int n : {8, 24, 64, 128}) {
      for (int group = 8; group <= std::min(n, 128); group *= 2) {
        if (n % group) continue;
        const std::vector<float> x = randn(n, 11 * n + group, 3.0f);
        for (Codec c : {Codec::kQ8, Codec::kQ4}) {
          const size_t rb = row_bytes(c, n, group);
          std::vector<uint8_t> r_simd(rb), r_ref(rb);
          k.quantize[static_cast<int>(c)](x.data(), n, group, r_simd.data());
          (c == Codec::kQ8 ? scalar::q8_quantize : scalar::q4_quantize)(x.data(), n, group, r_ref.data());
          INFO(std::string(isa_to_string(isa)) << " codec " << int(c) << " n " << n << " group " << group);
          CHECK(r_simd == r_ref);
          std::vector<float> y(n);
          k.dequantize[static_cast<int>(c)](r_simd.data(), n, group, y.data());
          for (int g = 0; g < n / group; ++g) {
            float mn = x[g * group], mx = mn, amax = 0;
            for (int i = g * group; i < (g + 1) * group; ++i) {
              mn = std::min(mn, x[i]);
              mx = std::max(mx, x[i]);
              amax = std::max(amax, std::abs(x[i]));
            }
            // q8: d/2 = amax/254; q4: d/2 = (max-min)/30; plus float rounding of scale and code math.
            const double bound = c == Codec::kQ8 ? amax / 254.0 : (mx - mn) / 30.0;
            for (int i = g * group; i < (g + 1) * group; ++i) {
              REQUIRE(std::abs(y[i] - x[i]) <= bound * (1 + 1e-5) + 1e-6 * amax);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("exp_sum, hadamard and the prefill tiles equal the scalar twin") {
  for (Isa isa : simd_isas()) {
    const Kernels& k = kernels_for(isa);
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
    for (int n_d : {8, 64, 128}) {
      const int n_r = 8, n_j = 64;
      const std::vector<float> qm = randn(n_r * n_d, 1), kt = randn(n_d * n_j, 2), pm = randn(n_r * n_j, 3), v = randn(n_j * n_d, 4);
      std::vector<float> s1(n_r * n_j), s2(n_r * n_j), o1 = randn(n_r * n_d, 5), o2 = o1;
      k.gemm_qk({qm.data(), kt.data(), s1.data(), n_r, n_d, n_j});
      scalar::gemm_qk({qm.data(), kt.data(), s2.data(), n_r, n_d, n_j});
      for (int i = 0; i < n_r * n_j; ++i) REQUIRE(std::abs(s1[i] - s2[i]) <= kSumTol * 8 * n_d + 1e-5);
      k.gemm_pv({pm.data(), v.data(), o1.data(), n_r, n_d, n_j});
      scalar::gemm_pv({pm.data(), v.data(), o2.data(), n_r, n_d, n_j});
      for (int i = 0; i < n_r * n_d; ++i) REQUIRE(std::abs(o1[i] - o2[i]) <= kSumTol * 8 * n_j + 1e-5);
    }
  }
}
