// Where a KV cache keeps what: one function (plan_cache) turns a setting and a shape into the
// layout of both sides and every byte they take. The cache allocates exactly this layout, and the
// C API's memory plan counts it, so the two cannot disagree.
//
// Each side (keys, values) keeps, per layer, in that layer's format (a setting may give some
// layers their own, KvConfig::layers):
//   sinks   positions [0, sinks): FP32 rows (attention sinks), never quantized
//   packed  positions [sinks, n_packed): f32 rows, token tiles (kv/tiles.h, 16 tokens of one kv
//           head) or channel tiles (kv/channel_tile.h, G tokens of one kv head), per kv head,
//           counted from the first position after the sinks; a sliding-window layer keeps only
//           the last `kept` of them, in a ring of tiles (packed position i in slot i % kept)
//   ring    positions [n_packed, length): the FP32 window of the most recent positions,
//           slot = pos % window
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/formats.h"
#include "kv/kv_config.h"
#include "kv/tiles.h"

namespace kvrt::kv {

struct CacheShape {
  CacheShape() = default;
  CacheShape(int layers, int kv_heads, int dim, int ctx)
      : n_layers(layers), n_kv_heads(kv_heads), head_dim(dim), n_ctx(ctx) {}

  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_ctx = 0;
  // Sliding-window layers: the query at pos sees keys (pos - window, pos] only, so such a layer
  // keeps the packed positions a chunk of n_chunk queries can see and no more (SideLayout::kept).
  // Its sinks stay outside the ring, FP32 as on every layer; the window decides whether a query
  // sees them. Empty: every layer keeps every position.
  std::vector<int> windows;  // [n_layers] positions a layer's queries see; 0: every position
  int n_chunk = 1;           // most positions one write adds before attention reads them

  int window_of(int layer) const {
    return windows.empty() ? 0 : windows[static_cast<size_t>(layer)];
  }
};

// A ring of packed positions is a whole number of this many positions, the positions attention
// reads together (ops::kTile, which asserts it): such a read never wraps around the ring, and with
// whole runs kept a sliding-window layer is read with the same kernel calls on the same bytes as
// a full one.
constexpr int kRingAlign = 64;

enum class Packing : uint8_t {
  kRows,          // f32: one row of head_dim floats per position
  kTokenTiles,    // quantized, groups along head_dim: tiles of kTileTokens positions
  kChannelTiles,  // quantized keys, groups along tokens (KIVI): tiles of G positions
};

struct SideLayout {
  const FormatTraits* format = nullptr;
  TileRole role = TileRole::kKey;
  Packing packing = Packing::kRows;
  int rot_block = 0;      // rows stored as H·x, H of Hadamard blocks of rot_block values
                          // (kv/rotation.h); 0: not rotated
  int tile_tokens = 1;    // positions per tile (1 for rows)
  size_t tile_bytes = 0;  // one tile (or row) of one kv head
  int n_tiles = 0;        // tiles per layer and kv head: for n_ctx positions, or the ring's
  int kept = 0;    // packed positions a sliding-window layer keeps, a ring of n_tiles tiles; 0: all
  int window = 0;  // FP32 ring slots; 0 packs every position as it is written
  int sinks = 0;   // FP32 rows before the packed positions (the same on every side)

  double bytes_per_token() const {
    return static_cast<double>(tile_bytes) / tile_tokens;
  }  // one kv head
};

// Both sides of one layer.
struct LayerLayout {
  SideLayout k, v;
  int sliding_window = 0;  // CacheShape::windows of this layer
  const SideLayout& side(TileRole role) const { return role == TileRole::kKey ? k : v; }
};

// The layers of one kind (every position, or one sliding window) and what they keep.
struct LayerKind {
  int sliding_window = 0;  // 0: the layers that keep every position
  int n_layers = 0;
  double bytes_per_token = 0;  // packed bytes of one position, these layers, K and V
  int kept = 0;                // most packed positions one of them keeps (whole tiles)
  size_t packed_bytes = 0;     // their packed storage, K and V
};

struct CacheLayout {
  KvConfig setting;  // as plan_cache resolved it for the shape (resolve_setting)
  CacheShape shape;
  int group = 0;  // values per quantization group (along head_dim, or tokens of channel tiles)
  int sinks = 0;  // positions kept as FP32 rows on both sides of every layer (at most n_ctx)
  std::vector<LayerLayout> layers;  // [n_layers]

  size_t packed_layer_bytes(
      const SideLayout& s) const;                 // one layer: [n_tiles][n_kv_heads][tile_bytes]
  size_t ring_floats(const SideLayout& s) const;  // one layer: [window][n_kv_heads][head_dim]
  size_t sink_floats() const;                // one layer and side: [sinks][n_kv_heads][head_dim]
  size_t packed_bytes(TileRole role) const;  // all layers of one side
  size_t ring_floats(TileRole role) const;   // all layers of one side
  // The write path's scratch (kv_cache.cc), only where the setting needs it: a token of every kv
  // head rotated, a ring position leaving for a token tile, G positions of one kv head for a
  // channel tile, one row of blocks of one kv head for a token tile.
  size_t rotated_floats() const;
  size_t leaving_floats() const;
  size_t gathered_floats() const;
  size_t blocks_bytes() const;
  size_t bytes() const;  // everything the cache allocates
  // Packed bytes of one position after the sinks, all layers, K and V, while no sliding-window
  // layer has filled its ring. The sinks and the FP32 windows are a fixed extra (bytes_in_use).
  double bytes_per_token() const;
  // n_tokens positions stored, the windows included; a sliding-window layer stops at the positions
  // it keeps.
  size_t bytes_in_use(int n_tokens) const;
  // The same for the layers of one kind only: those whose sliding window is `sliding_window` (0:
  // the full layers).
  size_t bytes_in_use(int n_tokens, int sliding_window) const;
  std::vector<LayerKind> layer_kinds() const;  // the full layers first, then by window

 private:
  template <typename Take>
  size_t in_use(int n_tokens, Take take) const;  // bytes_in_use of the layers take(layer) accepts
};

// The setting as a cache of this shape resolves it: layer indices made absolute (resolve_layers)
// and the group chosen (the setting's, or the largest that fits every layer's formats, up to 32).
// kvrt::Error(kUsage) names a layer outside the model or a group that does not fit the tiles.
KvConfig resolve_setting(const KvConfig& config, const CacheShape& shape);

// Checks the setting against the shape (kvrt::Error(kUsage) naming what does not fit), resolves
// it (resolve_setting, kept in CacheLayout::setting) and lays both sides of every layer out: a
// sliding-window layer keeps every tile attention reads for a chunk (window + n_chunk - 1 positions
// and the rest of the kRingAlign run the first starts in), rounded up to whole kRingAlign
// positions, unless that is not less than all of them.
CacheLayout plan_cache(const KvConfig& config, const CacheShape& shape);

// Bytes an allocation of n bytes takes (64-byte aligned blocks), as the cache allocates them.
constexpr size_t aligned_size(size_t n) { return ((n > 0 ? n : 1) + 63) / 64 * 64; }

}  // namespace kvrt::kv
