// Scalar twins of the matmul and weight-type kernels (simd/kernels.h): the oracle of the matmul
// tests and the bottom rung of the dispatch ladder.
#include <cmath>
#include <cstring>
#include <utility>

#include "common/half.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::scalar {
namespace {

template <int MR, int NR>
void tile(const MatmulTileArgs& a) {
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < a.n_in; ++k) sum += a.x[i * a.x_stride + k] * a.w[j * a.w_stride + k];
      a.y[i * a.y_stride + j] = sum;
    }
  }
}

void f32_to_float(const uint8_t* src, int64_t n, float* dst) { std::memcpy(dst, src, sizeof(float) * size_t(n)); }

void f16_to_float(const uint8_t* src, int64_t n, float* dst) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
  for (int64_t k = 0; k < n; ++k) dst[k] = f16_to_f32(h[k]);
}

void bf16_to_float(const uint8_t* src, int64_t n, float* dst) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
  for (int64_t k = 0; k < n; ++k) dst[k] = bf16_to_f32(h[k]);
}

void q8_0_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 32; ++j) dst[i * 32 + j] = d * float(b[i].qs[j]);
  }
}

}  // namespace

void install_matmul(Kernels& k) {
  k.matmul = {"scalar", kMaxTileRows, kMaxTileCols, {}};
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((k.matmul.fn[I / kMaxTileCols][I % kMaxTileCols] = &tile<I / kMaxTileCols + 1, I % kMaxTileCols + 1>), ...);
  }(std::make_integer_sequence<int, kMaxTileRows * kMaxTileCols>{});
  k.weight[weight_index(WeightType::kF32)].to_float = f32_to_float;
  k.weight[weight_index(WeightType::kF16)].to_float = f16_to_float;
  k.weight[weight_index(WeightType::kBF16)].to_float = bf16_to_float;
  k.weight[weight_index(WeightType::kQ8_0)].to_float = q8_0_to_float;
}

}  // namespace kvrt::simd::scalar
