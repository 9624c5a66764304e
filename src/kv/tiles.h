// Token-axis tiles: how q8 and q4 keys and values of one kv head are stored, kTileTokens positions
// at a time, so that the integer dot-product instructions (VNNI, which sum adjacent products within
// a 32-bit lane) read them without shuffles. Dependency-free: shared by the cache and the kernels.
//
// A tile holds the blocks of kv/blocks.h of 16 consecutive tokens, rearranged (same bytes per
// token: 16 x row bytes). head_dim n, group G, n_groups = n / G; scales first, then the codes:
//   float d[n_groups][16]                    scale of group b of token t
//   float m[n_groups][16]                    q4 only: minimum of group b of token t
//   codes, by role (q·k reduces along head_dim, p·V along tokens):
//   key   q8: int8  c[n/4][16][4]            c[j][t][e]  = code of dim 4j+e of token t
//   key   q4: uint8 c[n/8][16][4]            low nibble: dim 8j+e, high nibble: dim 8j+4+e
//   value q8: int8  c[8][n][2]               c[p][i][e]  = code of dim i of token 2p+e
//   value q4: uint8 c[8][n]                  low nibble: token 2p, high nibble: token 2p+1
// so a 64-byte vector of key codes is one 32-bit lane per token (4 dims each), and 32 bytes of
// value codes widened to int16 are one 32-bit lane per dim (2 tokens each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kv/blocks.h"

namespace kvrt::kv {

constexpr int kTileTokens = 16;

enum class TileRole : uint8_t { kKey, kValue };

struct TileFormat {
  TileRole role;
  bool q4;     // else q8
  int n;       // head_dim
  int group;

  int n_groups() const { return n / group; }
  size_t header_bytes() const { return (q4 ? 2u : 1u) * sizeof(float) * kTileTokens * n_groups(); }
  size_t bytes() const { return header_bytes() + static_cast<size_t>(kTileTokens) * n * (q4 ? 1 : 2) / 2; }
  // Byte of the codes holding (token t, dim i); *high: the code is that byte's high nibble (q4).
  size_t code_byte(int t, int i, bool* high) const {
    if (role == TileRole::kKey) {
      *high = q4 && (i % 8) >= 4;
      return static_cast<size_t>(q4 ? i / 8 : i / 4) * 64 + t * 4 + i % 4;
    }
    *high = q4 && (t % 2) == 1;
    return q4 ? static_cast<size_t>(t / 2) * n + i : static_cast<size_t>(t / 2) * 2 * n + i * 2 + t % 2;
  }
};

inline float tile_scale(const uint8_t* tile, int b, int t) {
  float d;
  std::memcpy(&d, tile + (static_cast<size_t>(b) * kTileTokens + t) * sizeof(float), sizeof d);
  return d;
}

inline float tile_min(const TileFormat& f, const uint8_t* tile, int b, int t) {
  return tile_scale(tile, f.n_groups() + b, t);
}

// Code of (token t, dim i): int8 for q8, 0..15 for q4.
inline int tile_code(const TileFormat& f, const uint8_t* tile, int t, int i) {
  bool high;
  const uint8_t byte = tile[f.header_bytes() + f.code_byte(t, i, &high)];
  if (!f.q4) return static_cast<int8_t>(byte);
  return high ? byte >> 4 : byte & 15;
}

// Stores token t of the tile from one row of blocks (kv/blocks.h layout, n values).
inline void tile_store_row(const TileFormat& f, const uint8_t* row, int t, uint8_t* tile) {
  const size_t block = f.q4 ? q4_block_bytes(f.group) : q8_block_bytes(f.group);
  uint8_t* codes = tile + f.header_bytes();
  for (int b = 0; b < f.n_groups(); ++b) {
    const uint8_t* blk = row + b * block;
    std::memcpy(tile + (static_cast<size_t>(b) * kTileTokens + t) * sizeof(float), blk, sizeof(float));
    if (f.q4) std::memcpy(tile + (static_cast<size_t>(f.n_groups() + b) * kTileTokens + t) * sizeof(float), blk + 4, sizeof(float));
    for (int k = 0; k < f.group; ++k) {
      const int i = b * f.group + k, half = f.group / 2;
      bool high;
      uint8_t& byte = codes[f.code_byte(t, i, &high)];
      if (!f.q4) {
        byte = blk[kQ8Header + k];
        continue;
      }
      const uint8_t q = k < half ? blk[kQ4Header + k] & 15 : blk[kQ4Header + k - half] >> 4;
      byte = high ? static_cast<uint8_t>((byte & 0x0f) | (q << 4)) : static_cast<uint8_t>((byte & 0xf0) | q);
    }
  }
}

// Dequantizes token t of the tile: x[i] = d * code (q8) or m + d * code (q4), as kv/blocks.h.
inline void tile_load_row(const TileFormat& f, const uint8_t* tile, int t, float* x) {
  for (int i = 0; i < f.n; ++i) {
    const int b = i / f.group;
    const float c = static_cast<float>(tile_code(f, tile, t, i));
    x[i] = f.q4 ? tile_min(f, tile, b, t) + tile_scale(tile, b, t) * c : tile_scale(tile, b, t) * c;
  }
}

}  // namespace kvrt::kv
