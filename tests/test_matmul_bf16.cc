// The bf16 precision of prefill-sized products (ops/matmul.h, MatmulPrecision::kBf16): the
// products against bounds derived from bf16 rounding, decode products left on the f32 kernels,
// and the refusal where bf16 cannot run. The rounding kernels of every rung: tests/checkasm.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kvrt_config.h"
#include "matmul_problem.h"
#include "ops/matmul.h"
#include "simd/dispatch.h"

namespace {

using kvrt::ops::Matmul;
using kvrt::ops::MatmulPrecision;
using kvrt::ops::WeightMatrix;
using kvrt::simd::WeightType;

constexpr double kU32 = 0x1p-24;   // unit roundoff of f32
constexpr double kUBf16 = 0x1p-8;  // of bf16: 8 significand bits, nearest with ties to even

bool bf16_here() {
  return kvrt::ops::bf16_unavailable(kvrt::simd::runnable_isas(), kvrt::simd::process_isa())
      .empty();
}

float round_bf16(float v) { return kvrt::bf16_to_f32(kvrt::f32_to_bf16(v)); }

using Problem = kvrt::test::MatmulProblem;
using kvrt::test::count_outside;
using kvrt::test::make_problem;

using Shape = kvrt::test::ProblemShape;
using kvrt::test::run_problem;
// Prefill-sized (m above the decode limit of 4): odd sizes, more W rows than one rounded block
// (256), k tails of every length.
constexpr Shape kPrefill[] = {{5, 3, 3},      {7, 33, 29},    {64, 100, 130},
                              {300, 67, 515}, {300, 600, 64}, {257, 300, 1024}};
// The same for quantized W: n_in whole super-blocks of 256 values.
constexpr Shape kPrefillBlocks[] = {{5, 3, 256}, {64, 100, 512}, {257, 300, 1024}};

}  // namespace

TEST_CASE("matmul bf16: prefill products are the f32 sums of the bf16-rounded x and W") {
  if (!bf16_here()) {
    MESSAGE("bf16 products do not run here: " << kvrt::ops::bf16_unavailable(
                kvrt::simd::runnable_isas(), kvrt::simd::process_isa()));
    return;
  }
  // x and W rounded to bf16 have 8 significand bits, so each product is exact in f32 and the only
  // error left is the f32 summation of n_in terms: |err| <= 2 n_in u32 Σ|x_k w_k| in any order.
  Matmul mm(2, MatmulPrecision::kBf16);
  uint32_t seed = 1;
  const auto check = [&](WeightType type, const Shape& s) {
    const Problem p = make_problem(s.m, s.n_out, s.n_in, type, seed++);
    std::string first;
    const auto bound = [&](double abs_sum) { return 2.0 * double(p.n_in) * kU32 * abs_sum; };
    const int64_t n_bad = count_outside(p, run_problem(mm, p), round_bf16, bound, first);
    INFO("type " << kvrt::simd::weight_type_name(type) << ", m " << p.m << ", n_out " << p.n_out
                 << ", n_in " << p.n_in << "; first: " << first);
    CHECK(n_bad == 0);
  };
  for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16})
    for (const Shape& s : kPrefill) check(type, s);
  // quantized W, rounded to bf16 by its type's to_bf16
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ5_1,
                          WeightType::kQ4_K, WeightType::kQ6_K})
    for (const Shape& s : kPrefillBlocks) check(type, s);
  MESSAGE("implementation: " << std::string(mm.implementation()));
  CHECK(std::string(mm.implementation()).find("bf16") != std::string::npos);
}

TEST_CASE(
    "matmul bf16: products stay within the bf16 rounding bound of the exact product, and leave "
    "f32's") {
  if (!bf16_here()) return;
  // rx = x(1 + a), rw = w(1 + b), |a|, |b| <= u: |rx rw - x w| <= (2u + u^2)|x w|, then the f32
  // summation of the rounded products (each at most (1 + u)^2 |x w|).
  const double u = kUBf16;
  Matmul bf16(2, MatmulPrecision::kBf16);
  const Problem p = make_problem(300, 67, 515, WeightType::kF32, 77);
  const std::vector<float> y = run_problem(bf16, p);
  const auto exact = [](float v) { return v; };
  std::string first;
  const auto bf16_bound = [&](double s) {
    return (2 * u + u * u + 2.0 * double(p.n_in) * kU32 * (1 + u) * (1 + u)) * s;
  };
  CHECK(count_outside(p, y, exact, bf16_bound, first) == 0);
  INFO(first);
  // ... and they are bf16's: many outputs are farther from the exact product than f32 summation
  // goes.
  const auto f32_bound = [&](double s) { return 2.0 * double(p.n_in) * kU32 * s; };
  CHECK(count_outside(p, y, exact, f32_bound, first) > p.m * p.n_out / 2);
}

TEST_CASE("matmul bf16: decode-sized products keep the f32 kernels") {
  if (!bf16_here()) return;
  Matmul f32(2), bf16(2, MatmulPrecision::kBf16);
  for (int64_t m = 1; m <= 4; ++m) {
    const Problem p = make_problem(m, 257, 515, WeightType::kF16, uint32_t(m));
    CHECK(run_problem(f32, p) == run_problem(bf16, p));
  }
  CHECK(std::string(bf16.implementation()).find("gemm none") == 0);
}

TEST_CASE("matmul bf16: refused, with the reason, where it cannot run") {
  using kvrt::simd::Isa;
  const std::vector<Isa> avx512 = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni};
  const std::vector<Isa> bf16 = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni,
                                 Isa::kAvx512Bf16};
  // Without oneDNN (the aarch64 build) that is the reason whatever the CPU; with it, the CPU's.
  const auto says = [](const std::string& why, const char* reason) {
    return why.find(KVRT_HAVE_DNNL ? reason : "built without oneDNN") != std::string::npos;
  };
  CHECK(says(kvrt::ops::bf16_unavailable(avx512, Isa::kAvx2), "does not run the avx512-bf16 rung"));
  CHECK(says(kvrt::ops::bf16_unavailable(avx512, Isa::kAvx512Vnni),
             "does not run the avx512-bf16 rung"));
  CHECK(says(kvrt::ops::bf16_unavailable(bf16, Isa::kAvx2), "KVRT_ISA"));
  CHECK(kvrt::ops::bf16_unavailable(bf16, Isa::kAvx512Vnni).empty() == bool(KVRT_HAVE_DNNL));
  CHECK(kvrt::ops::bf16_unavailable(bf16, Isa::kAvx512Bf16).empty() == bool(KVRT_HAVE_DNNL));
  std::vector<Isa> amx = bf16;
  amx.push_back(Isa::kAvx512Amx);
  CHECK(kvrt::ops::bf16_unavailable(amx, Isa::kAvx512Amx).empty() == bool(KVRT_HAVE_DNNL));
  // In this process: a Matmul at bf16 is made exactly when the check says it can run.
  if (bf16_here()) {
    CHECK_NOTHROW(Matmul(1, MatmulPrecision::kBf16));
  } else {
    try {
      Matmul mm(1, MatmulPrecision::kBf16);
      FAIL("a bf16 Matmul was made where bf16 cannot run");
    } catch (const kvrt::Error& e) {
      CHECK(e.kind() == kvrt::ErrorKind::kUsage);
      CHECK(std::string(e.what()).find("--matmul bf16 cannot run here") != std::string::npos);
    }
  }
  CHECK(kvrt::ops::parse_matmul_precision("bf16") == MatmulPrecision::kBf16);
  CHECK_THROWS_AS(kvrt::ops::parse_matmul_precision("fp16"), kvrt::Error);
}
