// Where a KV cache keeps what: one function (plan_cache) turns a setting and a shape into the
// layout of both sides and every byte they take. The cache allocates exactly this layout, and the
// C API's memory plan counts it, so the two cannot disagree.
//
// Each side (keys, values) keeps, per layer:
//   packed  positions [0, n_packed): f32 rows, token tiles (kv/tiles.h, 16 tokens of one kv head)
//           or channel tiles (kv/channel_tile.h, G tokens of one kv head), per kv head
//   ring    positions [n_packed, length): the FP32 window of the most recent positions,
//           slot = pos % window
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/formats.h"
#include "kv/kv_config.h"
#include "kv/tiles.h"

namespace kvrt::kv {

struct CacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_ctx = 0;
};

enum class Packing : uint8_t {
  kRows,          // f32: one row of head_dim floats per position
  kTokenTiles,    // quantized, groups along head_dim: tiles of kTileTokens positions
  kChannelTiles,  // quantized keys, groups along tokens (KIVI): tiles of G positions
};

struct SideLayout {
  const FormatTraits* format = nullptr;
  TileRole role = TileRole::kKey;
  Packing packing = Packing::kRows;
  bool rotated = false;     // rows stored as H·x (orthonormal Hadamard along head_dim)
  int tile_tokens = 1;      // positions per tile (1 for rows)
  size_t tile_bytes = 0;    // one tile (or row) of one kv head
  int n_tiles = 0;          // tiles per layer and kv head, for n_ctx positions
  int window = 0;           // FP32 ring slots; 0 packs every position as it is written

  double bytes_per_token() const { return static_cast<double>(tile_bytes) / tile_tokens; }  // one kv head
};

struct CacheLayout {
  CacheShape shape;
  int group = 0;  // values per quantization group (along head_dim, or tokens of channel tiles)
  SideLayout k, v;

  size_t packed_layer_bytes(const SideLayout& s) const;  // [n_tiles][n_kv_heads][tile_bytes]
  size_t ring_floats(const SideLayout& s) const;         // all layers: [n_layers][window][n_kv_heads][head_dim]
  // The write path's scratch (kv_cache.cc), only where the setting needs it: a token of every kv
  // head rotated, a ring position leaving for a token tile, G positions of one kv head for a
  // channel tile, one row of blocks of one kv head for a token tile.
  size_t rotated_floats() const;
  size_t leaving_floats() const;
  size_t gathered_floats() const;
  size_t blocks_bytes() const;
  size_t bytes() const;                                  // everything the cache allocates
  double bytes_per_token() const;                        // packed bytes of one position, all layers, K and V
};

// The group a cache with this setting uses for head_dim: the setting's, or the default (the largest
// that fits, up to 32); kvrt::Error(kUsage) when it does not fit the formats' tiles.
int resolve_group(const KvConfig& config, int head_dim);

// Checks the setting against the shape (kvrt::Error(kUsage) naming what does not fit), resolves
// the default group and lays both sides out.
CacheLayout plan_cache(const KvConfig& config, const CacheShape& shape);

// Bytes an allocation of n bytes takes (64-byte aligned blocks), as the cache allocates them.
constexpr size_t aligned_size(size_t n) { return ((n > 0 ? n : 1) + 63) / 64 * 64; }

}  // namespace kvrt::kv
