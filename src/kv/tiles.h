// Token-axis tiles: how quantized keys and values of one kv head are stored, kTileTokens positions
// at a time, so that the integer dot-product instructions (VNNI, which sum adjacent products within
// a 32-bit lane) read them without shuffles. Dependency-free: shared by the cache and the kernels.
//
// A tile holds the blocks of kv/blocks.h of 16 consecutive tokens, rearranged (same bytes per
// token: 16 x row bytes). head_dim n, group G, n_groups = n / G, k = 8 / bits codes per byte.
// Scale planes first (kScaleStride bytes per group, FP16 as in the blocks), then the codes:
//   Scale d[n_groups][16]                      scale of group b of token t
//   Scale m[n_groups][16]                      asymmetric formats: minimum of group b of token t
//   codes, by role (q·k reduces along head_dim, p·V along tokens):
//   key:   byte [n / 4k][16][4]                byte (j, t, e), bits of slot s: dim 4k j + 4 s + e
//   value: byte [16 / P][n][P / k], P = max(2, k) tokens per unit; byte (u, i, e), slot s:
//          token P u + k e + s of dim i
// so a 64-byte vector of key codes is one 32-bit lane per token (4 dims per slot), and value codes
// widened to int16 are one 32-bit lane per dim (2 tokens each). For q8 (k = 1) that is
//   key c[n/4][16][4] (dim 4j+e of token t), value c[8][n][2] (dim i of token 2u+e);
// for q4 (k = 2) the high nibble of a key byte is dim 4 further, of a value byte the next token;
// for q2 (k = 4) slot s of a key byte is dim 4 s further, of a value byte token s further.
// 3-bit codes (q3) are two code planes, each laid out as above: the low 2 bits as q2's codes
// (16 n / 4 bytes), then the high bits as 1-bit codes (k = 8, 16 n / 8 bytes: key byte (j, t, e),
// bit s: dim 32 j + 4 s + e; value byte (u, i), bit s: token 8 u + s of dim i).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kv/blocks.h"

namespace kvrt::kv {

constexpr int kTileTokens = 16;
constexpr int kKeyLaneDims = 4;    // dims of one token per 32-bit lane
constexpr int kAccColumnDims = 8;  // dims of a value column the kernels take
constexpr size_t kKeyCodeStride =
    kTileTokens * kKeyLaneDims;  // bytes from one key code run to the next
// Bytes from the scales of group b to those of group b + 1 within a plane.
constexpr size_t kScaleStride = kTileTokens * sizeof(Scale);

enum class TileRole : uint8_t { kKey, kValue };

// The geometry of one tile of a format (see above); built from a descriptor of kv/blocks.h
// (of<F>) or from the format's traits row (FormatTraits::tile).
struct TileFormat {
  TileRole role;
  int bits;       // code width
  int planes;     // 1 (scale) or 2 (scale, minimum)
  int code_bias;  // stored code - q (kv/blocks.h kCodeBias: 8 for q4s, else 0)
  int n;          // head_dim
  int group;
  const int8_t* levels;  // q4n: q = levels[stored code] (kv/blocks.h kQ4NLevels); else null

  template <class F>
  static TileFormat of(TileRole role, int n, int group) {
    return {
        role, F::kBits, F::kPlanes, F::kCodeBias, n, group, F::kCodebook ? kQ4NLevels : nullptr};
  }
  bool high_plane() const { return bits == 3; }
  int low_bits() const { return high_plane() ? 2 : bits; }  // bits per code of the first plane
  int per_byte() const { return 8 / low_bits(); }
  int n_groups() const { return n / group; }
  size_t header_bytes() const { return planes * n_groups() * kScaleStride; }
  size_t bytes() const { return header_bytes() + static_cast<size_t>(kTileTokens) * n * bits / 8; }
  // Offset of the high-bit plane from the start of the codes (3-bit codes).
  size_t high_offset() const { return static_cast<size_t>(kTileTokens) * n * low_bits() / 8; }
  // Byte of the codes holding (token t, dim i), and the slot of the code in that byte, in a plane
  // of k codes per byte (the first plane's, or 8 for the high-bit plane).
  size_t code_byte(int t, int i, int* slot) const { return code_byte(t, i, slot, per_byte()); }
  size_t code_byte(int t, int i, int* slot, int k) const {
    if (role == TileRole::kKey) {
      *slot = i % (kKeyLaneDims * k) / kKeyLaneDims;
      return static_cast<size_t>(i / (kKeyLaneDims * k)) * kKeyCodeStride + t * kKeyLaneDims +
             i % kKeyLaneDims;
    }
    const int p = k > 2 ? k : 2, unit_bytes = p / k;
    *slot = t % p % k;
    return (static_cast<size_t>(t / p) * n + i) * unit_bytes + t % p / k;
  }
  // Offset of the scale (plane 0) or minimum (plane 1) of group b of token t.
  size_t scale_offset(int plane, int b, int t) const {
    return static_cast<size_t>(plane * n_groups() + b) * kScaleStride + t * sizeof(Scale);
  }
};

inline float tile_scale(const TileFormat& f, const uint8_t* tile, int b, int t) {
  return load_scale(tile + f.scale_offset(0, b, t));
}
inline float tile_min(const TileFormat& f, const uint8_t* tile, int b, int t) {
  return load_scale(tile + f.scale_offset(1, b, t));
}

// Code of (token t, dim i): q of kv/blocks.h, int8 for q8, -8..7 for q4s, a level for q4n,
// 0..2^bits-1 for the asymmetric formats.
inline int tile_code(const TileFormat& f, const uint8_t* tile, int t, int i) {
  int slot;
  const uint8_t* codes = tile + f.header_bytes();
  const uint8_t byte = codes[f.code_byte(t, i, &slot)];
  if (f.bits == 8) return static_cast<int8_t>(byte);
  int stored = (byte >> (slot * f.low_bits())) & ((1 << f.low_bits()) - 1);
  if (f.high_plane()) {
    const uint8_t high = codes[f.high_offset() + f.code_byte(t, i, &slot, 8)];
    stored |= (high >> slot & 1) << f.low_bits();
  }
  return f.levels ? f.levels[stored] : stored - f.code_bias;
}

// Sets the stored field of (token t, dim i) (kv/blocks.h get_stored).
inline void set_tile_stored(const TileFormat& f, uint8_t* tile, int t, int i, int stored) {
  int slot;
  uint8_t* codes = tile + f.header_bytes();
  uint8_t& byte = codes[f.code_byte(t, i, &slot)];
  const int shift = slot * f.low_bits(), mask = ((1 << f.low_bits()) - 1) << shift;
  byte = static_cast<uint8_t>((byte & ~mask) | ((stored << shift) & mask));
  if (f.high_plane()) {
    uint8_t& high = codes[f.high_offset() + f.code_byte(t, i, &slot, 8)];
    high = static_cast<uint8_t>((high & ~(1 << slot)) | (stored >> f.low_bits() & 1) << slot);
  }
}

// Stores token t of the tile from one row of blocks of format F (kv/blocks.h layout, n values).
template <class F>
inline void tile_store_row(const TileFormat& f, const uint8_t* row, int t, uint8_t* tile) {
  const size_t block = F::block_bytes(f.group);
  for (int b = 0; b < f.n_groups(); ++b) {
    const uint8_t* blk = row + b * block;
    for (int p = 0; p < F::kPlanes; ++p)
      std::memcpy(tile + f.scale_offset(p, b, t), blk + p * sizeof(Scale), sizeof(Scale));
    for (int k = 0; k < f.group; ++k)
      set_tile_stored(f, tile, t, b * f.group + k,
                      get_stored<F>(blk + F::kHeaderBytes, f.group, k));
  }
}

// Dequantizes token t of the tile: x[i] = d * code (symmetric) or m + d * code, as kv/blocks.h.
inline void tile_load_row(const TileFormat& f, const uint8_t* tile, int t, float* x) {
  for (int i = 0; i < f.n; ++i) {
    const int b = i / f.group;
    const float c = static_cast<float>(tile_code(f, tile, t, i));
    x[i] = f.planes == 2 ? tile_min(f, tile, b, t) + tile_scale(f, tile, b, t) * c
                         : tile_scale(f, tile, b, t) * c;
  }
}

}  // namespace kvrt::kv
