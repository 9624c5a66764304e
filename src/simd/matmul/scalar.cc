// Scalar twins of the matmul and weight-type kernels (simd/kernels.h): the oracle of the matmul
// tests and the bottom rung of the dispatch ladder.
#include <algorithm>
#include <utility>

#include "common/half.h"
#include "simd/kernels_scalar.h"
#include "simd/weights/blocks.h"
#include "simd/weights/codecs.h"
#include "simd/weights/decode.h"
#include "simd/weights/types.h"

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

// n values of type T (whole blocks) widened by its reference codec, a super-block at a time, then
// rounded to bf16: the to_bf16 of the quantized types.
template <WeightType T>
void widen_to_bf16(const uint8_t* src, int64_t n, uint16_t* dst) {
  const WeightTypeTraits& t = weight_type_traits(T);
  float x[kQK_K];  // a whole number of blocks of every quantized type
  for (int64_t i = 0; i < n; i += kQK_K) {
    const int64_t c = std::min<int64_t>(kQK_K, n - i);
    t.to_float_ref(src + t.row_bytes(i), c, x);
    for (int64_t j = 0; j < c; ++j) dst[i + j] = f32_to_bf16(x[j]);
  }
}

template <WeightType... T>
void install_to_bf16(Kernels& k) {
  ((k.weight[weight_index(T)].to_bf16 = widen_to_bf16<T>), ...);
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
  using W = WeightType;
  install_to_bf16<W::kQ8_0, W::kQ4_0, W::kQ5_0, W::kIQ4_NL, W::kQ4_1, W::kQ5_1, W::kQ2_K, W::kQ3_K,
                  W::kQ4_K, W::kQ5_K, W::kQ6_K>(k);
  install_weight_dots(k);
}

}  // namespace kvrt::simd::scalar
