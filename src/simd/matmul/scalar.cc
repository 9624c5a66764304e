// Scalar twins of the matmul and weight-type kernels (simd/kernels.h): the oracle of the matmul
// tests and the bottom rung of the dispatch ladder.
#include <utility>

#include "simd/kernels_scalar.h"
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
  install_weight_dots(k);
}

}  // namespace kvrt::simd::scalar
