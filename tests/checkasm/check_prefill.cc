// The prefill tiles with the query rows in the lanes (simd/kernels.h GemmArgs, SoftmaxArgs) and
// their bf16 products (GemmBf16Args, bf16_pairs), each against the scalar twin.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "checkasm.h"
#include "simd/kernels_scalar.h"

namespace kvrt::checkasm {
namespace {

void check_gemm(const Rung& r) {
  for (int n_r : {16, 48, 80}) {  // rows in the lanes: 1, 3 and 5 vectors of 16
    for (int n_d : {8, 64, 128}) {
      for (int n_j : {1, 37, 64}) {
        // K and V rows at a stride longer than head_dim, as the f32 cache's rows of all kv heads
        const size_t stride = n_d + 3;
        const std::vector<float> qt = randn(n_d * n_r, 1), kv = randn(n_j * stride, 2),
                                 p = randn(n_j * n_r, 3);
        std::vector<float> s1(n_j * n_r), s2(n_j * n_r), o1 = randn(n_d * n_r, 5), o2 = o1;
        r.k.gemm({qt.data(), kv.data(), stride, 1, s1.data(), n_r, n_j, n_d, false});
        simd::scalar::gemm({qt.data(), kv.data(), stride, 1, s2.data(), n_r, n_j, n_d, false});
        for (int i = 0; i < n_j * n_r; ++i)
          REQUIRE(std::abs(s1[i] - s2[i]) <= kSumTol * 8 * n_d + 1e-5);
        r.k.gemm({p.data(), kv.data(), 1, stride, o1.data(), n_r, n_d, n_j, true});
        simd::scalar::gemm({p.data(), kv.data(), 1, stride, o2.data(), n_r, n_d, n_j, true});
        for (int i = 0; i < n_d * n_r; ++i)
          REQUIRE(std::abs(o1[i] - o2[i]) <= kSumTol * 8 * n_j + 1e-5);
      }
    }
  }
}

void check_softmax(const Rung& r) {
  for (int n_r : {16, 48}) {
    for (int n_j : {1, 37, 64}) {
      const int n_d = 24;
      // masked scores, rows with no visible key in this tile or none at all yet
      std::vector<float> s1 = randn(n_j * n_r, 6), m1 = randn(n_r, 7), l1(n_r),
                         o1 = randn(n_d * n_r, 8);
      for (int row = 0; row < n_r; ++row) {
        l1[row] = 1.0f + row;
        if (row % 5 == 1) m1[row] = -INFINITY;
        for (int j = 0; j < n_j; ++j) {
          if (row % 3 == 2 || (row + j) % 7 == 0) s1[j * n_r + row] = -INFINITY;
        }
      }
      std::vector<float> s2 = s1, m2 = m1, l2 = l1, o2 = o1;
      r.k.softmax({s1.data(), m1.data(), l1.data(), o1.data(), n_r, n_j, n_d});
      simd::scalar::softmax({s2.data(), m2.data(), l2.data(), o2.data(), n_r, n_j, n_d});
      for (int row = 0; row < n_r; ++row) {
        REQUIRE(m1[row] == m2[row]);
        REQUIRE(std::abs(l1[row] - l2[row]) <= 2e-6 * l2[row]);
      }
      for (int i = 0; i < n_j * n_r; ++i) REQUIRE(std::abs(s1[i] - s2[i]) <= 2e-6 * s2[i]);
      for (int i = 0; i < n_d * n_r; ++i)
        REQUIRE(std::abs(o1[i] - o2[i]) <= 2e-6 * std::abs(o2[i]));
    }
  }
}

void check_bf16_pairs(const Rung& r) {
  for (int n : {1, 16, 37, 64}) {  // the vector loops and their scalar tail, two rows and one
    const std::vector<float> x0 = randn(2 * n, 11), x1 = randn(n, 12);
    std::vector<uint32_t> p1(n), p2(n);
    const struct {
      const float* x1;
      int step;
    } cases[] = {{x1.data(), 1}, {nullptr, 1}, {x0.data() + 1, 2}, {nullptr, 2}};
    for (const auto& c : cases) {
      r.k.bf16_pairs(x0.data(), c.x1, c.step, n, p1.data());
      simd::scalar::bf16_pairs(x0.data(), c.x1, c.step, n, p2.data());
      CHECK(p1 == p2);  // both round to nearest, ties to even
    }
  }
}

void check_gemm_bf16(const Rung& r) {
  for (int n_r : {16, 48, 80}) {
    for (int n_kp : {1, 19, 32}) {
      for (int n_i : {1, 9, 64}) {
        const size_t b_i = n_kp + 2;  // rows of b at a stride longer than their pairs
        const std::vector<float> fa = randn(2 * n_kp * n_r, 13), fb = randn(2 * n_i * b_i, 14);
        std::vector<uint32_t> a(n_kp * n_r), b(n_i * b_i);
        for (int p = 0; p < n_kp; ++p)
          simd::scalar::bf16_pairs(&fa[2 * p * n_r], &fa[(2 * p + 1) * n_r], 1, n_r, &a[p * n_r]);
        simd::scalar::bf16_pairs(fb.data(), fb.data() + 1, 2, n_i * b_i, b.data());
        std::vector<float> c1 = randn(n_i * n_r, 15), c2 = c1;
        for (bool accumulate : {false, true}) {
          r.k.gemm_bf16({a.data(), b.data(), b_i, 1, c1.data(), n_r, n_i, n_kp, accumulate});
          simd::scalar::gemm_bf16(
              {a.data(), b.data(), b_i, 1, c2.data(), n_r, n_i, n_kp, accumulate});
          for (int i = 0; i < n_i * n_r; ++i)
            REQUIRE(std::abs(c1[i] - c2[i]) <= kSumTol * 8 * 2 * n_kp + 1e-5);
        }
      }
    }
  }
}

// One prefill tile: 64 query rows, 64 keys, head_dim 128.
struct TileInputs {
  static constexpr int kR = 64, kJ = 64, kD = 128;
  std::vector<float> q = randn(kD * kR, 1), kv = randn(kJ * kD, 2), s = randn(kJ * kR, 3);
  std::vector<float> s_work = s, m = std::vector<float>(kR), l = std::vector<float>(kR),
                     o = randn(kD * kR, 4);
  std::vector<uint32_t> a = std::vector<uint32_t>(kD / 2 * kR),
                        b = std::vector<uint32_t>(kJ * kD / 2);
};

std::vector<BenchCall> bench_prefill(const Rung& r) {
  auto t = std::make_shared<TileInputs>();
  const simd::Kernels& k = r.k;
  constexpr int n_r = TileInputs::kR, n_j = TileInputs::kJ, n_d = TileInputs::kD;
  return {{"prefill.gemm",
           [t, &k] {
             k.gemm({t->q.data(), t->kv.data(), n_d, 1, t->s_work.data(), n_r, n_j, n_d, false});
           }},
          {"prefill.softmax", [t, &k] {
             t->s_work = t->s;
             std::fill(t->m.begin(), t->m.end(), 0.0f);
             k.softmax({t->s_work.data(), t->m.data(), t->l.data(), t->o.data(), n_r, n_j, n_d});
           }}};
}

std::vector<BenchCall> bench_bf16(const Rung& r) {
  auto t = std::make_shared<TileInputs>();
  const simd::Kernels& k = r.k;
  constexpr int n_r = TileInputs::kR, n_j = TileInputs::kJ, n_d = TileInputs::kD;
  return {
      {"prefill.bf16_pairs",
       [t, &k] { k.bf16_pairs(t->kv.data(), t->kv.data() + 1, 2, n_j * n_d / 2, t->b.data()); }},
      {"prefill.gemm_bf16", [t, &k] {
         k.gemm_bf16(
             {t->a.data(), t->b.data(), n_d / 2, 1, t->s_work.data(), n_r, n_j, n_d / 2, false});
       }}};
}

const bool kRegistered = [] {
  add({"prefill gemm", {"prefill.gemm"}, false, check_gemm, nullptr});
  add({"prefill softmax", {"prefill.softmax"}, false, check_softmax, bench_prefill});
  add({"bf16 pairs", {"prefill.bf16_pairs"}, false, check_bf16_pairs, nullptr});
  add({"bf16 gemm", {"prefill.gemm_bf16"}, false, check_gemm_bf16, bench_bf16});
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
