// The storage behind KvCache (kv_cache.cc writes it, kv_cache_state.cc saves, loads and truncates
// it). Private to src/kv/.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kv/kv_cache.h"

namespace kvrt::kv {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], FreeDeleter>;

// One side's storage, laid out by the SideLayouts of its layers (kv/cache_layout.h).
struct Side {
  TileRole role = TileRole::kKey;
  AlignedBytes packed;      // per layer [n_tiles][n_kv_heads][tile_bytes], at packed_offset[layer]
                            // (a sliding-window layer's ring: tile i in slot i % n_tiles)
  size_t packed_bytes = 0;  // the allocation of packed
  std::vector<size_t> packed_offset;  // [n_layers] bytes
  std::vector<float> ring;  // per layer [window][n_kv_heads][head_dim], at ring_offset[layer]
  std::vector<size_t> ring_offset;  // [n_layers] floats
  std::vector<float> sinks;         // [n_layers][sinks][n_kv_heads][head_dim]
  std::vector<int> n_packed;        // [n_layers] positions [0, n_packed) are sinks or packed
};

struct KvCache::Storage {
  CacheLayout layout;
  Side k, v;
  std::vector<int> length;  // [n_layers]
  // Write-path scratch, allocated once where the layout needs it (CacheLayout).
  std::vector<float> rotated;   // [n_kv_heads][head_dim] the token being written, rotated
  std::vector<float> leaving;   // [n_kv_heads][head_dim] the ring position being packed
  std::vector<float> gathered;  // [G][head_dim] one kv head's positions of a channel tile
  std::vector<uint8_t> blocks;  // one row of blocks of one kv head

  const CacheShape& shape() const { return layout.shape; }
  const SideLayout& side_layout(const Side& s, int layer) const {
    return layout.layers[layer].side(s.role);
  }
  size_t token_floats() const { return static_cast<size_t>(shape().n_kv_heads) * shape().head_dim; }
  // Tile (or row) tile_idx of the packed positions, counted from the first after the sinks (in
  // its ring slot in a sliding-window layer).
  uint8_t* tile(Side& s, int layer, int tile_idx, int kv_head) {
    const SideLayout& l = side_layout(s, layer);
    return s.packed.get() + s.packed_offset[layer] +
           (static_cast<size_t>(tile_idx % l.n_tiles) * shape().n_kv_heads + kv_head) *
               l.tile_bytes;
  }
  float* ring_row(Side& s, int layer, int pos, int kv_head) {
    const SideLayout& l = side_layout(s, layer);
    return s.ring.data() + s.ring_offset[layer] +
           (static_cast<size_t>(pos % l.window) * shape().n_kv_heads + kv_head) * shape().head_dim;
  }
  float* sink_row(Side& s, int layer, int pos) {
    return s.sinks.data() + (static_cast<size_t>(layer) * layout.sinks + pos) * token_floats();
  }
};
using Storage = KvCache::Storage;

}  // namespace kvrt::kv
