// A random matrix-product problem for the matmul tests: x [m][n_in] and W [n_out][n_in] drawn from
// N(0, 1), W stored as f32, f16 or bf16 (w keeps the stored weights' exact f32 values).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "ops/matmul.h"

namespace kvrt::test {

struct MatmulProblem {
  int64_t m, n_out, n_in;
  simd::WeightType type;
  std::vector<float> x;         // [m][n_in]
  std::vector<float> w;         // [n_out][n_in] as f32 (f16/bf16 weights: their exact f32 values)
  std::vector<uint16_t> w_16;   // [n_out][n_in] when type is f16 or bf16

  ops::WeightMatrix weights() const {
    const void* data = type == simd::WeightType::kF32 ? static_cast<const void*>(w.data()) : w_16.data();
    return {data, type, n_out, n_in};
  }
};

inline MatmulProblem make_problem(int64_t m, int64_t n_out, int64_t n_in, simd::WeightType type, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  MatmulProblem p{m, n_out, n_in, type, std::vector<float>(size_t(m * n_in)), std::vector<float>(size_t(n_out * n_in)), {}};
  for (float& v : p.x) v = normal(rng);
  for (float& v : p.w) v = normal(rng);
  if (type != simd::WeightType::kF32) {
    const bool f16 = type == simd::WeightType::kF16;
    p.w_16.resize(p.w.size());
    for (size_t i = 0; i < p.w.size(); ++i) {
      p.w_16[i] = f16 ? f32_to_f16(p.w[i]) : f32_to_bf16(p.w[i]);
      p.w[i] = f16 ? f16_to_f32(p.w_16[i]) : bf16_to_f32(p.w_16[i]);
    }
  }
  return p;
}

}  // namespace kvrt::test
