// Scalar twins of the matmul and weight-type kernels (simd/kernels.h): the oracle of the matmul
// tests and the bottom rung of the dispatch ladder.
#include <utility>

#include "simd/kernels_scalar.h"
#include "simd/weights/codecs.h"
#include "simd/weights/decode.h"

namespace kvrt::simd::scalar {
namespace {

inline float w_value(float w) { return w; }
inline float w_value(uint16_t w) { return f16_to_f32(w); }

template <int MR, int NR, class W>
void tile(const TileArgs<W>& a) {
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < a.n_in; ++k)
        sum += a.x[i * a.x_stride + k] * w_value(a.w[j * a.w_stride + k]);
      a.y[i * a.y_stride + j] = sum;
    }
  }
}

// The decode product of F16 W (DecodeArgs; activation rows F32): the twin of gemm_tiles-inl.h's
// f16_decode, each output summed in k order.
void f16_decode(const DecodeArgs& a) {
  for (int j = 0; j < a.n_rows; ++j) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(a.w + size_t(j) * a.w_stride);
    for (int i = 0; i < a.m; ++i) {
      const float* x = reinterpret_cast<const float*>(a.act + size_t(i) * a.act_stride);
      float sum = 0.0f;
      for (int64_t k = 0; k < a.n_in; ++k) sum += x[k] * f16_to_f32(w[k]);
      a.y[size_t(i) * a.y_stride + size_t(j)] = sum;
    }
  }
}

}  // namespace

void install_matmul(Kernels& k) {
  k.matmul = {"scalar", kMaxTileRows, kMaxTileCols, {}, {}};
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((k.matmul.fn[I / kMaxTileCols][I % kMaxTileCols] =
          &tile<I / kMaxTileCols + 1, I % kMaxTileCols + 1, float>),
     ...);
    ((k.matmul.f16[I / kMaxTileCols][I % kMaxTileCols] =
          &tile<I / kMaxTileCols + 1, I % kMaxTileCols + 1, uint16_t>),
     ...);
  }
  (std::make_integer_sequence<int, kMaxTileRows * kMaxTileCols>{});
  for (int t = 0; t < kNumWeightTypes; ++t) {  // the reference codec of every type that has one
    const WeightTypeTraits* row = find_weight_type(static_cast<uint32_t>(t));
    if (row == nullptr) continue;
    k.weight[t].to_float = row->to_float_ref;      // computable weight types
    k.weight[t].from_float = row->from_float_ref;  // and the activation formats
  }
  k.weight[weight_index(WeightType::kF16)].decode = {f16_decode};
  k.weight[weight_index(WeightType::kF16)].to_bf16 = ref::f16_to_bf16;
  install_weight_dots(k);
}

}  // namespace kvrt::simd::scalar
