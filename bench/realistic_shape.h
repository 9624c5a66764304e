// The weight matrices of the realistic model that bench_matmul and bench_decode time (d_model
// 1024, 16 heads, 4 KV heads of 64, d_ff 2816, 8 layers: synth_model's default shape), the
// weight types they take by name, and random W stored in one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "simd/weights/types.h"

namespace kvrt::bench {

struct Shape {
  const char* name;
  int64_t n_out, n_in;
  int per_layer;  // how many matrices of this shape one layer has
};
inline constexpr Shape kShapes[] = {{"q,o", 1024, 1024, 2},
                                    {"k,v", 256, 1024, 2},
                                    {"gate,up", 2816, 1024, 2},
                                    {"down", 1024, 2816, 1}};
inline constexpr int kLayers = 8;

// The computable weight type `name`; else says which are valid and exits with status 2.
inline const simd::WeightTypeTraits& parse_type(const char* tool, const std::string& name) {
  for (int t = 0; t < simd::kNumWeightTypes; ++t) {
    const simd::WeightTypeTraits* row = simd::find_weight_type(uint32_t(t));
    if (row != nullptr && row->computable() && name == row->name) return *row;
  }
  std::fprintf(stderr, "%s: unknown weight type '%s' (valid: %s)\n", tool, name.c_str(),
               simd::computable_weight_type_names());
  std::exit(2);
}

// W [n_out][n_in] of normal values, stored in `type` by its reference encoder.
inline std::vector<uint8_t> random_weights(const simd::WeightTypeTraits& type, const Shape& s,
                                           std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(size_t(s.n_out * s.n_in));
  for (float& v : w) v = normal(rng);
  std::vector<uint8_t> stored(size_t(type.row_bytes(s.n_in) * s.n_out));
  type.from_float_ref(w.data(), int64_t(w.size()), stored.data());
  return stored;
}

}  // namespace kvrt::bench
