// Storage layout of the KV cache, shared with the attention ops (src/ops/attention*.cc).
//
// Each side (keys, values) keeps, per layer:
//   packed  positions [0, n_packed): f32 rows or quantized blocks (see kv/formats.h)
//   ring    positions [n_packed, length): the FP32 residual window, slot = pos % window
// Token axis: f32 rows hold one token of one kv head; q8 / q4 tiles (kv/tiles.h) hold 16 tokens
// of one kv head, the blocks of G values along head_dim rearranged for the integer kernels.
// Channel axis (keys only, KIVI) tiles hold G tokens of one kv head: per channel one scale
// (and minimum), then the G token rows of codes, so attention still walks rows per token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_config.h"
#include "kv/tiles.h"

namespace kvrt::kv {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], FreeDeleter>;
AlignedBytes alloc_aligned(size_t n_bytes);  // 64-byte aligned, zero-filled

struct SideStore {
  Format format = Format::kF32;
  bool per_channel = false;   // groups along tokens (keys only)
  bool rotated = false;       // rows stored as H·x (orthonormal Hadamard along head_dim)
  int window = 0;             // FP32 ring slots for recent tokens; 0 stores every token packed at once
  size_t row_bytes = 0;       // token axis: bytes of one token of one kv head
  size_t tile_bytes = 0;      // q8 / q4: bytes of one tile (16 tokens, or G tokens on the channel axis)
  size_t layer_bytes = 0;     // packed bytes of one layer
  AlignedBytes packed;        // token f32: [n_layers][n_ctx][n_kv_heads][row_bytes]
                              // token q8 / q4: [n_layers][n_ctx/16][n_kv_heads][tile_bytes]
                              // channel: [n_layers][n_ctx/G][n_kv_heads][tile_bytes]
  std::vector<float> ring;    // [n_layers][window][n_kv_heads][head_dim]
  std::vector<int> n_packed;  // [n_layers]
};

struct KvCache::Impl {
  KvConfig config;
  CacheShape shape;
  int group_size = 0;
  SideStore k, v;
  std::vector<int> length;  // [n_layers]

  // Token-axis f32 row of position pos < n_packed.
  const uint8_t* row(const SideStore& s, int layer, int pos, int kv_head) const {
    return s.packed.get() + layer * s.layer_bytes +
           (static_cast<size_t>(pos) * shape.n_kv_heads + kv_head) * s.row_bytes;
  }
  // Channel-axis tile holding positions [tile_idx * G, tile_idx * G + G).
  const uint8_t* tile(const SideStore& s, int layer, int tile_idx, int kv_head) const {
    return s.packed.get() + layer * s.layer_bytes +
           (static_cast<size_t>(tile_idx) * shape.n_kv_heads + kv_head) * s.tile_bytes;
  }
  // Token-axis q8 / q4 tile holding position pos, and the bytes from one tile to the next.
  const uint8_t* token_tile(const SideStore& s, int layer, int pos, int kv_head) const {
    return tile(s, layer, pos / kTileTokens, kv_head);
  }
  size_t tile_stride(const SideStore& s) const { return s.tile_bytes * shape.n_kv_heads; }
  TileFormat tile_format(const SideStore& s, TileRole role) const {
    return {role, s.format == Format::kQ4, shape.head_dim, group_size};
  }
  // FP32 residual row of position pos in [n_packed, length).
  const float* ring_row(const SideStore& s, int layer, int pos, int kv_head) const {
    const size_t slot = static_cast<size_t>(pos % s.window);
    return s.ring.data() +
           ((static_cast<size_t>(layer) * s.window + slot) * shape.n_kv_heads + kv_head) * shape.head_dim;
  }
};

}  // namespace kvrt::kv
