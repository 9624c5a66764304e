// Channel-axis (KIVI) key tiles: G tokens of one kv head quantized per channel, with the group
// codec of the format (kv/blocks.h) applied along tokens instead of head_dim.
// Layout of one tile (head_dim = n), for a format with P scale planes and b-bit codes:
//   Scale d[n];  Scale m[n] (asymmetric formats; FP16 as in the blocks);  codes[G][n * b / 8]
//   k[t][c] = d[c] * code(t, c)   or   m[c] + d[c] * code(t, c)
// A code row packs the n channels of one token as kv/blocks.h packs a run of n codes (q4: channel
// c < n/2 in the low nibble of byte c, channel c + n/2 in the high nibble), so attention dots
// each token row like any other row (the format's simd::FormatKernels::dot_channel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kv/blocks.h"

namespace kvrt::kv {

template <class F>
constexpr size_t channel_codes_offset(int head_dim) {
  return F::kPlanes * sizeof(Scale) * head_dim;
}

// The scale (plane 0) or minimum (plane 1) of channel c of a tile.
inline float channel_scale(const uint8_t* tile, int head_dim, int plane, int c) {
  return load_scale(tile + (static_cast<size_t>(plane) * head_dim + c) * sizeof(Scale));
}

// x [G][head_dim] -> one tile; each channel is one group of the format's reference codec.
template <class F>
void channel_quantize(const float* x, int group, int head_dim, uint8_t* tile) {
  float column[kMaxGroup];
  uint8_t block[F::block_bytes(kMaxGroup)];
  uint8_t* codes = tile + channel_codes_offset<F>(head_dim);
  const size_t row = static_cast<size_t>(head_dim) * F::kBits / 8;
  for (int c = 0; c < head_dim; ++c) {
    for (int t = 0; t < group; ++t) column[t] = x[t * head_dim + c];
    quantize_group<F>(column, group, block);
    for (int p = 0; p < F::kPlanes; ++p) {
      std::memcpy(tile + (static_cast<size_t>(p) * head_dim + c) * sizeof(Scale),
                  block + p * sizeof(Scale), sizeof(Scale));
    }
    for (int t = 0; t < group; ++t)
      set_stored<F>(codes + t * row, head_dim, c, get_stored<F>(block + F::kHeaderBytes, group, t));
  }
}

// Token t of the tile as FP32 (the same arithmetic as dequantize_group).
template <class F>
void channel_dequantize_row(const uint8_t* tile, int t, int head_dim, float* x) {
  const uint8_t* codes =
      tile + channel_codes_offset<F>(head_dim) + static_cast<size_t>(t) * head_dim * F::kBits / 8;
  for (int c = 0; c < head_dim; ++c) {
    const float d = channel_scale(tile, head_dim, 0, c),
                m = F::kSymmetric ? 0.0f : channel_scale(tile, head_dim, 1, c);
    const auto q = static_cast<float>(get_code<F>(codes, head_dim, c));
    x[c] = F::kSymmetric ? d * q : m + d * q;
  }
}

}  // namespace kvrt::kv
