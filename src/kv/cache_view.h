// What attention reads of the cache: per layer and kv head, each side's FP32 sink rows, packed
// tiles, FP32 ring of recent positions and its format's row. A narrow, read-only view
// (KvCache::view); the ops never see how the cache is allocated or written.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kv/cache_layout.h"

namespace kvrt::kv {

struct SideView {
  const SideLayout* layout;  // format, role, packing, tile size, window
  const uint8_t*
      packed;  // tile 0 of this layer and kv head; tile i at packed + i % n_tiles * tile_stride
  size_t tile_stride;  // bytes from one tile (or row) of this kv head to the next
  int n_tiles;         // tiles stored (a sliding-window layer's ring of tiles: layout->kept)
  int n_packed;  // positions [0, n_packed) are sinks or packed, the rest of the length is in the
                 // ring
  const float* ring;   // slot 0 of this layer and kv head: [head_dim] floats per slot
  size_t ring_stride;  // floats from one slot to the next
  const float* sinks;  // sink row 0 of this layer and kv head (positions [0, layout->sinks))
  size_t sink_stride;  // floats from one sink row to the next

  const FormatTraits& format() const { return *layout->format; }
  Packing packing() const { return layout->packing; }
  TileRole role() const { return layout->role; }
  int tile_tokens() const { return layout->tile_tokens; }   // positions per tile (1 for rows)
  size_t tile_bytes() const { return layout->tile_bytes; }  // one tile (or row)
  int rot_block() const { return layout->rot_block; }       // 0: not rotated
  int n_sinks() const { return layout->sinks; }
  // Index of position pos >= n_sinks() among the packed positions (tiles start at the sinks' end).
  int packed_index(int pos) const { return pos - layout->sinks; }
  // The tile holding position n_sinks() <= pos < n_packed (for kRows, its row), and whether the
  // packed positions [pos, end) are in consecutive tiles from it (a sliding-window layer's ring
  // does not wrap between them).
  const uint8_t* tile_of(int pos) const {
    return packed +
           static_cast<size_t>(packed_index(pos) / layout->tile_tokens % n_tiles) * tile_stride;
  }
  bool consecutive(int pos, int end) const {
    const int t = layout->tile_tokens;
    return packed_index(pos) / t % n_tiles + (end - pos + t - 1) / t <= n_tiles;
  }
  // How many packed positions from pos (at most end - pos) lie in consecutive tiles from
  // tile_of(pos).
  int consecutive_run(int pos, int end) const {
    const int t = layout->tile_tokens,
              left = (n_tiles - packed_index(pos) / t % n_tiles) * t - packed_index(pos) % t;
    return std::min(end - pos, left);
  }
  const float* sink_row(int pos) const { return sinks + static_cast<size_t>(pos) * sink_stride; }
  // The ring row of position pos >= n_packed, and how many positions from pos on are contiguous.
  const float* ring_row(int pos) const {
    return ring + static_cast<size_t>(pos % layout->window) * ring_stride;
  }
  int ring_run(int pos, int end) const {
    return std::min(end - pos, layout->window - pos % layout->window);
  }
};

struct HeadView {
  int head_dim;
  int group;
  SideView k, v;
};

}  // namespace kvrt::kv
