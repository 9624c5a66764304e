// The row kernels: q·k and p·V over FP32 rows, softmax's exp_sum, the FFN gates and the Hadamard
// rotation, each against the scalar twin.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "checkasm.h"
#include "simd/kernels_scalar.h"

namespace kvrt::checkasm {
namespace {

using simd::AccArgs;
using simd::DotArgs;

// k.dot equals scalar::dot<F32Rows> up to reordered sums.
void check_row_dot(const simd::Kernels& k, int n) {
  const int n_rows = 37, n_q = 6;
  const std::vector<float> rows = randn(static_cast<size_t>(n) * n_rows, n);
  const std::vector<float> q = randn(static_cast<size_t>(n_q) * n, 3);
  std::vector<float> s_simd(n_q * n_rows), s_ref(n_q * n_rows);
  DotArgs d{
      q.data(),          n_q,           size_t(n), reinterpret_cast<const uint8_t*>(rows.data()),
      sizeof(float) * n, n_rows,        n,         0,
      s_simd.data(),     size_t(n_rows)};
  k.dot(d);
  d.scores = s_ref.data();
  simd::scalar::dot<simd::F32Rows>(d);
  for (int t = 0; t < n_rows; ++t) {
    for (int i = 0; i < n_q; ++i) {
      double mag = 0;
      for (int j = 0; j < n; ++j) mag += std::abs(q[i * n + j] * rows[t * n + j]);
      INFO("n " << n);
      REQUIRE(std::abs(s_simd[i * n_rows + t] - s_ref[i * n_rows + t]) <= kSumTol * mag + 1e-6);
    }
  }
}

void check_row_acc(const simd::Kernels& k, int n) {
  const int n_rows = 37, n_q = 6;
  const std::vector<float> rows = randn(static_cast<size_t>(n) * n_rows, n);
  const std::vector<float> p = randn(static_cast<size_t>(n_q) * n_rows, 5);
  std::vector<float> a_simd = randn(static_cast<size_t>(n_q) * n, 6), a_ref = a_simd;
  AccArgs a{p.data(),
            n_q,
            size_t(n_rows),
            reinterpret_cast<const uint8_t*>(rows.data()),
            sizeof(float) * n,
            n_rows,
            n,
            0,
            a_simd.data(),
            size_t(n)};
  k.acc(a);
  a.acc = a_ref.data();
  simd::scalar::acc(a);
  INFO("n " << n);
  for (size_t i = 0; i < a_ref.size(); ++i)
    REQUIRE(std::abs(a_simd[i] - a_ref[i]) <= kSumTol * (std::abs(a_ref[i]) + 40.0) + 1e-5);
}

void check_rows_f32(const Rung& r) {
  for (int n : {8, 64, 128, 96}) {
    check_row_dot(r.k, n);
    check_row_acc(r.k, n);
  }
}

void check_gates(const Rung& r) {
  for (int n : {1, 15, 16, 100, 1000}) {  // gates up to ±100: silu's exp overflows to a zero
    std::vector<float> x = randn(n, n + 1);
    const std::vector<float> up = randn(n, n + 2);
    for (int i = 0; i < n; ++i) x[i] *= i % 7 == 0 ? 30.0f : 3.0f;
    std::vector<float> a = x, b = x, c = x, d = x;
    r.k.swiglu(a.data(), up.data(), n);
    simd::scalar::swiglu(b.data(), up.data(), n);
    for (int i = 0; i < n; ++i) REQUIRE(std::abs(a[i] - b[i]) <= 1e-6f * std::abs(b[i]));
    r.k.geglu(c.data(), up.data(), n);
    simd::scalar::geglu(d.data(), up.data(), n);
    // 1 + tanh cancels for negative gates: the error is relative to x · up, not the result
    for (int i = 0; i < n; ++i) REQUIRE(std::abs(c[i] - d[i]) <= 1e-6f * std::abs(x[i] * up[i]));
    // A value's result does not depend on where it sits: a fused product gates block by block.
    const int cut = n / 3;
    std::vector<float> e = x, f = x;
    r.k.swiglu(e.data(), up.data(), cut);
    r.k.swiglu(e.data() + cut, up.data() + cut, n - cut);
    r.k.geglu(f.data(), up.data(), cut);
    r.k.geglu(f.data() + cut, up.data() + cut, n - cut);
    REQUIRE(e == a);
    REQUIRE(f == c);
  }
}

void check_exp_sum(const Rung& r) {
  for (int n : {1, 8, 31, 64, 128, 257}) {
    std::vector<float> a = randn(n, n), b = a;
    const float sa = r.k.exp_sum(a.data(), n, 2.0f), sb = simd::scalar::exp_sum(b.data(), n, 2.0f);
    for (int i = 0; i < n; ++i) REQUIRE(std::abs(a[i] - b[i]) <= 2e-6 * b[i]);
    CHECK(std::abs(sa - sb) <= 1e-5 * sb);
  }
}

void check_hadamard(const Rung& r) {
  for (int n : {8, 16, 64, 128, 256}) {
    std::vector<float> a = randn(n, n), b = a;
    double norm2 = 0, norm2_after = 0;
    for (float v : a) norm2 += double(v) * v;
    r.k.hadamard(a.data(), n);
    simd::scalar::hadamard(b.data(), n);
    for (int i = 0; i < n; ++i) REQUIRE(a[i] == b[i]);  // same additions in the same order
    for (float v : a) norm2_after += double(v) * v;
    CHECK(norm2_after == doctest::Approx(norm2).epsilon(1e-5));  // orthonormal
  }
}

// Inputs shared by the row benches: 4 queries over 256 rows of 128 values.
struct RowInputs {
  static constexpr int kN = 128, kRows = 256, kQ = 4;
  std::vector<float> rows = randn(kN * kRows, 1), q = randn(kQ * kN, 2), p = randn(kQ * kRows, 3);
  std::vector<float> out = std::vector<float>(kQ * kRows), x = randn(4096, 4), up = randn(4096, 5);
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(rows.data()); }
};

std::vector<BenchCall> bench_rows(const Rung& r) {
  auto s = std::make_shared<RowInputs>();
  const simd::Kernels& k = r.k;
  constexpr int n = RowInputs::kN, n_rows = RowInputs::kRows, n_q = RowInputs::kQ;
  return {
      {"attention.dot.f32",
       [s, &k] {
         k.dot({s->q.data(), n_q, n, s->bytes(), sizeof(float) * n, n_rows, n, 0, s->out.data(),
                n_rows});
       }},
      {"attention.acc.f32",
       [s, &k] {
         k.acc({s->p.data(), n_q, n_rows, s->bytes(), sizeof(float) * n, n_rows, n, 0,
                s->out.data(), n});
       }},
  };
}

std::vector<BenchCall> bench_gates(const Rung& r) {
  auto s = std::make_shared<RowInputs>();
  const simd::Kernels& k = r.k;
  return {{"ffn.swiglu",
           [s, &k] {
             std::memcpy(s->out.data(), s->x.data(), sizeof(float) * 1024);
             k.swiglu(s->out.data(), s->up.data(), 1024);
           }},
          {"ffn.geglu", [s, &k] {
             std::memcpy(s->out.data(), s->x.data(), sizeof(float) * 1024);
             k.geglu(s->out.data(), s->up.data(), 1024);
           }}};
}

std::vector<BenchCall> bench_exp_sum(const Rung& r) {
  auto s = std::make_shared<RowInputs>();
  const simd::Kernels& k = r.k;
  return {{"softmax.exp_sum", [s, &k] {
             std::memcpy(s->out.data(), s->x.data(), sizeof(float) * 1024);
             k.exp_sum(s->out.data(), 1024, 30.0f);
           }}};
}

std::vector<BenchCall> bench_hadamard(const Rung& r) {
  auto s = std::make_shared<RowInputs>();
  const simd::Kernels& k = r.k;
  return {{"rotate.hadamard", [s, &k] { k.hadamard(s->out.data(), 128); }}};
}

const bool kRegistered = [] {
  add({"rows f32", {"attention.dot.f32", "attention.acc.f32"}, false, check_rows_f32, bench_rows});
  add({"ffn gates", {"ffn.swiglu", "ffn.geglu"}, false, check_gates, bench_gates});
  add({"exp_sum", {"softmax.exp_sum"}, false, check_exp_sum, bench_exp_sum});
  add({"hadamard", {"rotate.hadamard"}, false, check_hadamard, bench_hadamard});
  return true;
}();

}  // namespace
}  // namespace kvrt::checkasm
