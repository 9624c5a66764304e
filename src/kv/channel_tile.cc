#include "kv/channel_tile.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvrt::kv {

size_t channel_codes_offset(Format f, int head_dim) {
  return (f == Format::kQ4 ? 2 : 1) * sizeof(float) * head_dim;
}

size_t channel_code_row_bytes(Format f, int head_dim) {
  return f == Format::kQ4 ? head_dim / 2 : head_dim;
}

size_t channel_tile_bytes(Format f, int head_dim, int group) {
  return channel_codes_offset(f, head_dim) + group * channel_code_row_bytes(f, head_dim);
}

// Same arithmetic as the token-axis codecs of kv/blocks.h, along tokens instead of head_dim.
void channel_tile_quantize(Format f, const float* x, int group, int head_dim, uint8_t* tile) {
  auto* d = reinterpret_cast<float*>(tile);
  uint8_t* codes = tile + channel_codes_offset(f, head_dim);
  const size_t row = channel_code_row_bytes(f, head_dim);
  const int half = head_dim / 2;
  for (int c = 0; c < head_dim; ++c) {
    float mn = x[c], mx = x[c], amax = 0;
    for (int t = 0; t < group; ++t) {
      const float v = x[t * head_dim + c];
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      amax = std::max(amax, std::fabs(v));
    }
    if (f == Format::kQ8) {
      d[c] = amax / 127.0f;
      const float id = d[c] > 0 ? 1.0f / d[c] : 0.0f;
      for (int t = 0; t < group; ++t) {
        codes[t * row + c] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(std::nearbyint(x[t * head_dim + c] * id), -127.0f, 127.0f)));
      }
      continue;
    }
    d[c] = (mx - mn) / 15.0f;
    d[head_dim + c] = mn;
    const float id = d[c] > 0 ? 1.0f / d[c] : 0.0f;
    for (int t = 0; t < group; ++t) {
      const auto q = static_cast<uint8_t>(std::clamp(std::nearbyint((x[t * head_dim + c] - mn) * id), 0.0f, 15.0f));
      uint8_t& byte = codes[t * row + (c % half)];
      byte = c < half ? static_cast<uint8_t>((byte & 0xf0) | q) : static_cast<uint8_t>((byte & 0x0f) | (q << 4));
    }
  }
}

void channel_tile_dequantize_row(Format f, const uint8_t* tile, int t, int head_dim, float* x) {
  const auto* d = reinterpret_cast<const float*>(tile);
  const uint8_t* codes = tile + channel_codes_offset(f, head_dim) + t * channel_code_row_bytes(f, head_dim);
  const int half = head_dim / 2;
  for (int c = 0; c < head_dim; ++c) {
    if (f == Format::kQ8) {
      x[c] = d[c] * static_cast<float>(static_cast<int8_t>(codes[c]));
    } else {
      const int q = c < half ? codes[c] & 15 : codes[c - half] >> 4;
      x[c] = d[head_dim + c] + d[c] * static_cast<float>(q);
    }
  }
}

}  // namespace kvrt::kv
