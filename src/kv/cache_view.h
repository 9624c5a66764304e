// What attention reads of the cache: per layer and kv head, each side's packed tiles, its FP32
// ring of recent positions and its format's row. A narrow, read-only view (KvCache::view); the
// ops never see how the cache is allocated or written.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kv/cache_layout.h"

namespace kvrt::kv {

struct SideView {
  const SideLayout* layout;  // format, role, packing, tile size, window
  const uint8_t* packed;     // tile 0 of this layer and kv head; tile i at packed + i * tile_stride
  size_t tile_stride;        // bytes from one tile (or row) of this kv head to the next
  int n_packed;              // positions [0, n_packed) are packed, the rest of the length is in the ring
  const float* ring;         // slot 0 of this layer and kv head: [head_dim] floats per slot
  size_t ring_stride;        // floats from one slot to the next

  const FormatTraits& format() const { return *layout->format; }
  Packing packing() const { return layout->packing; }
  bool rotated() const { return layout->rotated; }
  // The tile holding position pos < n_packed (for kRows, its row).
  const uint8_t* tile_of(int pos) const { return packed + static_cast<size_t>(pos / layout->tile_tokens) * tile_stride; }
  // The ring row of position pos >= n_packed, and how many positions from pos on are contiguous.
  const float* ring_row(int pos) const { return ring + static_cast<size_t>(pos % layout->window) * ring_stride; }
  int ring_run(int pos, int end) const { return std::min(end - pos, layout->window - pos % layout->window); }
};

struct HeadView {
  int head_dim;
  int group;
  SideView k, v;
};

}  // namespace kvrt::kv
