// Packed block layouts of the quantized KV formats and their reference (scalar) codecs.
// Dependency-free: shared by the KV layer (traits table, cache) and the kernels (src/simd).
//
// A token-axis row of n values is n / G consecutive blocks of G values (G = group size,
// 8..128, a power of two). Bytes per block:
//   q8: 4 (f32 scale) + G          x = d * q,      q in [-127, 127]   (|x - x̂| <= d/2 = max|x|/254)
//   q4: 8 (f32 scale, min) + G/2   x = m + d * q,  q in [0, 15]       (|x - x̂| <= d/2 = (max-min)/30)
// q4 nibbles: byte i holds value i (low nibble) and value i + G/2 (high nibble), so one load of
// bytes yields two contiguous runs of values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace kvrt::kv {

template <int G>
struct Q8Block {
  float d;        // scale
  int8_t qs[G];   // codes
};

template <int G>
struct Q4Block {
  float d;             // scale
  float m;             // minimum
  uint8_t qs[G / 2];   // two codes per byte, see above
};

static_assert(sizeof(Q8Block<8>) == 12 && sizeof(Q8Block<32>) == 36 && sizeof(Q8Block<128>) == 132);
static_assert(sizeof(Q4Block<8>) == 12 && sizeof(Q4Block<32>) == 24 && sizeof(Q4Block<128>) == 72);

constexpr size_t kQ8Header = 4;  // bytes before the codes of a q8 block
constexpr size_t kQ4Header = 8;  // bytes before the codes of a q4 block

constexpr size_t q8_block_bytes(int group) { return kQ8Header + static_cast<size_t>(group); }
constexpr size_t q4_block_bytes(int group) { return kQ4Header + static_cast<size_t>(group) / 2; }

// Reference codecs of one group of `group` values. The scale is computed as d = range / levels
// and codes as round-to-nearest-even of x * (1 / d); the SIMD kernels use the same operations.
inline void q8_quantize_group(const float* x, int group, uint8_t* block) {
  float amax = 0;
  for (int i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d > 0 ? 1.0f / d : 0.0f;
  std::copy_n(reinterpret_cast<const uint8_t*>(&d), sizeof d, block);
  auto* qs = reinterpret_cast<int8_t*>(block + kQ8Header);
  for (int i = 0; i < group; ++i) {
    qs[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.0f, 127.0f));
  }
}

inline void q8_dequantize_group(const uint8_t* block, int group, float* x) {
  float d;
  std::copy_n(block, sizeof d, reinterpret_cast<uint8_t*>(&d));
  const auto* qs = reinterpret_cast<const int8_t*>(block + kQ8Header);
  for (int i = 0; i < group; ++i) x[i] = d * static_cast<float>(qs[i]);
}

inline void q4_quantize_group(const float* x, int group, uint8_t* block) {
  float mn = x[0], mx = x[0];
  for (int i = 1; i < group; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const float d = (mx - mn) / 15.0f;
  const float id = d > 0 ? 1.0f / d : 0.0f;
  std::copy_n(reinterpret_cast<const uint8_t*>(&d), sizeof d, block);
  std::copy_n(reinterpret_cast<const uint8_t*>(&mn), sizeof mn, block + 4);
  uint8_t* qs = block + kQ4Header;
  const int half = group / 2;
  for (int i = 0; i < half; ++i) {
    const float lo = std::clamp(std::nearbyint((x[i] - mn) * id), 0.0f, 15.0f);
    const float hi = std::clamp(std::nearbyint((x[i + half] - mn) * id), 0.0f, 15.0f);
    qs[i] = static_cast<uint8_t>(static_cast<int>(lo) | (static_cast<int>(hi) << 4));
  }
}

inline void q4_dequantize_group(const uint8_t* block, int group, float* x) {
  float d, m;
  std::copy_n(block, sizeof d, reinterpret_cast<uint8_t*>(&d));
  std::copy_n(block + 4, sizeof m, reinterpret_cast<uint8_t*>(&m));
  const uint8_t* qs = block + kQ4Header;
  const int half = group / 2;
  for (int i = 0; i < half; ++i) {
    x[i] = m + d * static_cast<float>(qs[i] & 15);
    x[i + half] = m + d * static_cast<float>(qs[i] >> 4);
  }
}

}  // namespace kvrt::kv
