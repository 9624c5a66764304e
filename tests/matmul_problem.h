// A random matrix-product problem for the matmul tests: x [m][n_in] and W [n_out][n_in] drawn from
// N(0, 1), W stored as f32, f16, bf16 or a quantized type (w keeps the stored weights' exact f32
// values); and the count of outputs outside a bound of the double-precision product.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "ops/matmul.h"
#include "simd/weights/types.h"

namespace kvrt::test {

struct MatmulProblem {
  int64_t m, n_out, n_in;
  simd::WeightType type;
  std::vector<float> x;           // [m][n_in]
  std::vector<float> w;           // [n_out][n_in] as f32 (f16/bf16 weights: their exact f32 values)
  std::vector<uint16_t> w_16;     // [n_out][n_in] when type is f16 or bf16
  std::vector<uint8_t> w_blocks;  // [n_out][row_bytes(n_in)] when type is quantized

  ops::WeightMatrix weights() const {
    const void* data = type == simd::WeightType::kF32 ? static_cast<const void*>(w.data())
                       : w_blocks.empty()             ? static_cast<const void*>(w_16.data())
                                                      : w_blocks.data();
    return {data, type, n_out, n_in};
  }
};

inline MatmulProblem make_problem(int64_t m, int64_t n_out, int64_t n_in, simd::WeightType type,
                                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  MatmulProblem p{m,
                  n_out,
                  n_in,
                  type,
                  std::vector<float>(size_t(m * n_in)),
                  std::vector<float>(size_t(n_out * n_in)),
                  {},
                  {}};
  for (float& v : p.x) v = normal(rng);
  for (float& v : p.w) v = normal(rng);
  if (type != simd::WeightType::kF32 && type != simd::WeightType::kF16 &&
      type != simd::WeightType::kBF16) {  // quantized by the reference codec (whole blocks)
    const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
    p.w_blocks.resize(size_t(n_out * t.row_bytes(n_in)));
    t.from_float_ref(p.w.data(), n_out * n_in, p.w_blocks.data());
    t.to_float_ref(p.w_blocks.data(), n_out * n_in, p.w.data());
  } else if (type != simd::WeightType::kF32) {
    const bool f16 = type == simd::WeightType::kF16;
    p.w_16.resize(p.w.size());
    for (size_t i = 0; i < p.w.size(); ++i) {
      p.w_16[i] = f16 ? f32_to_f16(p.w[i]) : f32_to_bf16(p.w[i]);
      p.w[i] = f16 ? f16_to_f32(p.w_16[i]) : bf16_to_f32(p.w_16[i]);
    }
  }
  return p;
}

// Outputs of y [m][n_out] farther than bound(Σ |products|) from the double-precision sum of the
// products round(x_k) * round(w_k); `first` describes the first of them.
template <class Round, class Bound>
int64_t count_outside(const MatmulProblem& p, const std::vector<float>& y, Round round, Bound bound,
                      std::string& first) {
  int64_t n_bad = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n_out; ++j) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t k = 0; k < p.n_in; ++k) {
        const double prod =
            double(round(p.x[size_t(i * p.n_in + k)])) * double(round(p.w[size_t(j * p.n_in + k)]));
        sum += prod;
        abs_sum += std::fabs(prod);
      }
      const double got = y[size_t(i * p.n_out + j)];
      if (std::fabs(got - sum) <= bound(abs_sum)) continue;
      if (n_bad++ == 0)
        first = "y[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
                ", reference " + std::to_string(sum) + ", bound " + std::to_string(bound(abs_sum));
    }
  }
  return n_bad;
}

// The same for products summed in f32 of the weights as stored (exact in f32): any summation order
// of n_in products satisfies |err| <= n_in * u * Σ_k |x_k w_k| with u = 2^-24, plus one rounding
// per product, covered by the factor 2 on n_in.
inline int64_t count_outside_f32(const MatmulProblem& p, const std::vector<float>& y,
                                 std::string& first) {
  return count_outside(
      p, y, [](float v) { return v; },
      [&](double abs_sum) { return 2.0 * double(p.n_in) * 0x1p-24 * abs_sum; }, first);
}

// y = x Wᵀ by mm, y first filled with NaN: every output must be written.
inline std::vector<float> run_problem(ops::Matmul& mm, const MatmulProblem& p) {
  std::vector<float> y(size_t(p.m * p.n_out), std::nanf(""));
  mm.run(p.x.data(), p.m, p.weights(), y.data());
  return y;
}

// The sizes of a product: m rows of x, W [n_out][n_in].
struct ProblemShape {
  int64_t m, n_out, n_in;
};

}  // namespace kvrt::test
