// Matmul (blocked GEMM for decode-sized products, oneDNN for larger ones where the build has it)
// against a double-precision loop, for decode (m = 1), odd and prefill-sized shapes, f32, f16 and
// bf16 weights. The register tiles and the f16 widening of every rung: tests/checkasm.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kvrt_config.h"
#include "matmul_problem.h"
#include "quant_types.h"
#include "ops/matmul.h"
#include "simd/dispatch.h"

namespace {

using kvrt::ops::Matmul;
using kvrt::ops::WeightMatrix;
using kvrt::simd::WeightType;

using Problem = kvrt::test::MatmulProblem;
using kvrt::test::make_problem;

// y within the f32 summation bound of the double-precision product (matmul_problem.h): the
// weights the reference sees are exactly the ones the kernel sees (bf16 widens to f32 exactly).
void check_against_reference(const Problem& p, const std::vector<float>& y) {
  std::string first_bad;
  const int64_t n_bad = kvrt::test::count_outside_f32(p, y, first_bad);
  INFO("m " << p.m << ", n_out " << p.n_out << ", n_in " << p.n_in << "; first: " << first_bad);
  CHECK(n_bad == 0);
}

using Shape = kvrt::test::ProblemShape;
using kvrt::test::run_problem;
// Decode (m = 1), a short prompt with odd sizes everywhere, prefill-sized blocks, sizes below
// one vector so every tile edge and k tail is taken, and more W rows than one widened block (256).
constexpr Shape kShapes[] = {{1, 64, 64},    {1, 257, 1023}, {7, 33, 29},
                             {64, 100, 130}, {300, 67, 515}, {5, 3, 3},
                             {2, 1, 17},     {300, 256, 64}, {9, 600, 96}};

}  // namespace

TEST_CASE("matmul: f32 weights match a double-precision reference") {
  Matmul mm(2);
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    const Problem p = make_problem(s.m, s.n_out, s.n_in, WeightType::kF32, seed++);
    check_against_reference(p, run_problem(mm, p));
  }
  MESSAGE("implementation: " << std::string(mm.implementation()));
}

TEST_CASE("matmul: f16 and bf16 weights match a double-precision reference") {
  Matmul mm(2);
  uint32_t seed = 100;
  for (WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    for (const Shape& s : kShapes) {
      const Problem p = make_problem(s.m, s.n_out, s.n_in, type, seed++);
      check_against_reference(p, run_problem(mm, p));
    }
  }
}

TEST_CASE("matmul: one and two threads give identical outputs") {
  // Each output is one tile's dot product whichever thread computes it.
  Matmul one(1), two(2);
  for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    const Problem p = make_problem(3, 257, 515, type, 7);  // decode-sized: the blocked tiles
    CHECK(run_problem(one, p) == run_problem(two, p));
  }
}

TEST_CASE("matmul: prefill-sized products give identical outputs on one and two threads") {
  // The threads claim blocks of 128 W rows; each block is one product on one thread (oneDNN's, or
  // the blocked tiles without it), whichever thread runs it.
  Matmul one(1), two(2);
  for (WeightType type : {WeightType::kF32, WeightType::kF16}) {
    const Problem p = make_problem(40, 600, 512, type, 9);  // five blocks, the last one partial
    const std::vector<float> y = run_problem(two, p);
    check_against_reference(p, y);
    CHECK(run_problem(one, p) == y);
  }
}

TEST_CASE("matmul: a cached shape reused with new data gives new results") {
  Matmul mm(2);
  const Problem a = make_problem(7, 33, 29, WeightType::kF32, 11);
  const Problem b = make_problem(7, 33, 29, WeightType::kF32, 12);
  check_against_reference(a, run_problem(mm, a));
  check_against_reference(b, run_problem(mm, b));
  CHECK(std::string(mm.implementation()) != "none");
}

TEST_CASE("matmul: decode-sized products on quantized weights run on the packed blocks") {
  // x is quantized to int8 blocks of 32 (or 256) values with a step d <= max|x_block| / 127 and
  // each code within one step of x / d (the f16 rounding of d and of Q8_1's sums included), so
  // |y - x · w| <= Σ_k |w_k| max|x_block(k)| / 127 plus f32 rounding; threads split W's rows and
  // each row's product is one kernel call, so 1 and 2 threads agree bit for bit.
  Matmul one(1), two(2);
  for (WeightType type : kvrt::test::kQuantTypes) {
    const kvrt::simd::WeightTypeTraits& t = kvrt::simd::weight_type_traits(type);
    const int64_t act_block = kvrt::simd::weight_type_traits(t.act).block;
    for (int64_t m : {1, 4}) {
      INFO(t.name << ", m " << m);
      Problem p = make_problem(m, 67, 512, WeightType::kF32, 21);
      std::vector<uint8_t> packed(size_t(t.row_bytes(p.n_out * p.n_in)));
      t.from_float_ref(p.w.data(), p.n_out * p.n_in, packed.data());
      t.to_float_ref(packed.data(), p.n_out * p.n_in,
                     p.w.data());  // the reference sees the decoded weights
      const WeightMatrix w{packed.data(), type, p.n_out, p.n_in};
      std::vector<float> y1(size_t(m * p.n_out)), y2(y1.size());
      one.run(p.x.data(), m, w, y1.data());
      two.run(p.x.data(), m, w, y2.data());
      CHECK(y1 == y2);
      CHECK(std::string(two.implementation()).find("gemv kvrt-packed:") != std::string::npos);
      int64_t n_bad = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < p.n_out; ++j) {
          double exact = 0, abs_sum = 0, bound = 0;
          for (int64_t k0 = 0; k0 < p.n_in; k0 += act_block) {
            float amax = 0;
            for (int64_t k = k0; k < k0 + act_block; ++k)
              amax = std::max(amax, std::fabs(p.x[size_t(i * p.n_in + k)]));
            for (int64_t k = k0; k < k0 + act_block; ++k) {
              const double wk = p.w[size_t(j * p.n_in + k)], xk = p.x[size_t(i * p.n_in + k)];
              exact += wk * xk;
              abs_sum += std::fabs(wk * xk);
              bound += std::fabs(wk) * amax / 127.0;
            }
          }
          n_bad += std::fabs(y1[size_t(i * p.n_out + j)] - exact) > bound + 1e-5 * abs_sum;
        }
      }
      CHECK(n_bad == 0);
    }
  }
}

TEST_CASE(
    "matmul: prefill-sized products on quantized weights match the product of the decoded "
    "weights") {
  // W is widened a block of 256 rows at a time by the type's to_float kernel: 600 rows are two
  // full blocks and a partial one, whose columns of y are written apart and copied in.
  Matmul mm(2);
  for (WeightType type : kvrt::test::kQuantTypes) {
    const kvrt::simd::WeightTypeTraits& t = kvrt::simd::weight_type_traits(type);
    INFO(t.name);
    Problem p = make_problem(9, 600, 512, WeightType::kF32, 31);
    std::vector<uint8_t> packed(
        size_t(t.row_bytes(p.n_out * p.n_in)));  // W [n_out][n_in] in blocks
    t.from_float_ref(p.w.data(), p.n_out * p.n_in, packed.data());
    t.to_float_ref(packed.data(), p.n_out * p.n_in,
                   p.w.data());  // the reference sees the decoded weights
    std::vector<float> y(size_t(p.m * p.n_out), std::nanf(""));  // every output must be written
    mm.run(p.x.data(), p.m, WeightMatrix{packed.data(), type, p.n_out, p.n_in}, y.data());
    check_against_reference(p, y);
  }
}

TEST_CASE("matmul: a group of products and the gated pair give each product's own outputs") {
  // Group members share x's quantized rows when their types share an activation format and
  // layout (Q4_K beside Q6_K), else run one by one (Q4_0, Q8_1-fed Q4_1, F16); F32 runs on the
  // blocked tiles; 300 rows reach oneDNN. Every y must equal its product run alone, bit for bit,
  // and run_glu's the gate of the two run alone (201 columns: a partial block and vector tails).
  const std::vector<std::vector<WeightType>> sets = {
      {WeightType::kQ4_K, WeightType::kQ4_K, WeightType::kQ6_K},
      {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kF16},
      {WeightType::kF32, WeightType::kF32}};
  std::vector<kvrt::ops::MatmulPrecision> precisions = {kvrt::ops::MatmulPrecision::kF32};
  try {
    kvrt::ops::require_matmul_precision(kvrt::ops::MatmulPrecision::kBf16);
    precisions.push_back(kvrt::ops::MatmulPrecision::kBf16);
  } catch (const kvrt::Error&) {
    MESSAGE("bf16 products not runnable here: the group runs at f32 only");
  }
  const int64_t n_in = 256, n_outs[] = {201, 67, 130};
  for (kvrt::ops::MatmulPrecision precision : precisions) {
    Matmul mm(2, precision);
    for (const std::vector<WeightType>& set : sets) {
      for (int64_t m : {1, 4, 300}) {
        std::vector<Problem> problems;
        for (size_t i = 0; i < set.size(); ++i) {
          problems.push_back(make_problem(m, n_outs[i], n_in, set[i], uint32_t(40 + i)));
          problems[i].x = problems[0].x;  // one x for the group
        }
        std::vector<std::vector<float>> alone, grouped;
        std::vector<kvrt::ops::Product> group;
        std::vector<WeightMatrix> ws;
        for (const Problem& p : problems) ws.push_back(p.weights());
        for (size_t i = 0; i < problems.size(); ++i) {
          alone.push_back(run_problem(mm, problems[i]));
          grouped.emplace_back(alone.back().size(), std::nanf(""));
        }
        for (size_t i = 0; i < problems.size(); ++i) group.push_back({&ws[i], grouped[i].data()});
        mm.run(problems[0].x.data(), m, group);
        for (size_t i = 0; i < problems.size(); ++i) {
          INFO(std::string(kvrt::ops::matmul_precision_name(precision))
               << " " << std::string(kvrt::simd::weight_type_name(set[i])) << ", m " << m);
          CHECK(grouped[i] == alone[i]);
        }

        Problem up = make_problem(m, n_outs[0], n_in, set[0], 50);
        up.x = problems[0].x;
        const WeightMatrix w_up = up.weights();
        std::vector<float> gate = alone[0], up_y = run_problem(mm, up);
        kvrt::simd::kernels().swiglu(gate.data(), up_y.data(), int64_t(gate.size()));
        std::vector<float> fused(gate.size(), std::nanf("")), scratch(gate.size());
        mm.run_glu(problems[0].x.data(), m, ws[0], w_up, kvrt::simd::kernels().swiglu, fused.data(),
                   scratch.data());
        INFO("run_glu " << std::string(kvrt::simd::weight_type_name(set[0])) << ", m " << m);
        CHECK(fused == gate);
      }
    }
  }
}
