// Channel-axis (KIVI) key tiles: G tokens of one kv head quantized per channel.
// Layout of one tile (head_dim = n):
//   q8: float d[n]; int8 codes[G][n]                     k[t][c] = d[c] * codes[t][c]
//   q4: float d[n]; float m[n]; uint8 codes[G][n / 2]    k[t][c] = m[c] + d[c] * nibble(t, c)
// q4 code rows pack channel c < n/2 in the low nibble of byte c and channel c + n/2 in the high
// nibble (simd::Codec::kRaw4), so attention dots each token row like any other row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_config.h"

namespace kvrt::kv {

size_t channel_tile_bytes(Format f, int head_dim, int group);
size_t channel_codes_offset(Format f, int head_dim);  // bytes of scales (and minimums) before the codes
size_t channel_code_row_bytes(Format f, int head_dim);
void channel_tile_quantize(Format f, const float* x, int group, int head_dim, uint8_t* tile);  // x [G][head_dim]
void channel_tile_dequantize_row(Format f, const uint8_t* tile, int t, int head_dim, float* x);  // token t of the tile

}  // namespace kvrt::kv
