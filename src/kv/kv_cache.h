// The KV cache of one session: every layer's keys and values for up to n_ctx positions (a
// sliding-window layer's last positions only, CacheShape::windows), allocated once at construction
// (kv/cache_layout.h) and never during a write. Keys and values are stored in tiles of 16 positions
// (token or channel tiles, kv/tiles.h; inside a value tile the codes of 2 tokens of one dim share a
// lane) or FP32 rows; no tile spans more than 16 positions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kv/cache_layout.h"
#include "kv/cache_view.h"
#include "kv/kv_config.h"

namespace kvrt {
class ByteReader;
class ByteWriter;
}  // namespace kvrt

namespace kvrt::kv {

class KvCache {
 public:
  // Allocates the layout of plan_cache(config, shape); an invalid config (group size, rotation
  // with a head_dim that is not a power of two, ...) is a kvrt::Error(kUsage).
  KvCache(const KvConfig& config, const CacheShape& shape);
  ~KvCache();

  const KvConfig& config() const;  // as given, resolved for the shape (resolve_setting)
  const CacheShape& shape() const;
  const CacheLayout& layout() const;

  // Appends positions [pos, pos + n_tokens) of one layer; pos must equal length(layer).
  // k, v: [n_tokens][n_kv_heads][head_dim], keys already rotated by RoPE. A sliding-window layer
  // takes at most shape().n_chunk positions per write (kvrt::Error(kUsage) beyond).
  void write(int layer, int pos, int n_tokens, const float* k, const float* v);

  int length(int layer) const;  // positions stored for this layer
  void clear();                 // forget every position (storage is kept)
  // Becomes a copy of the positions of `src`, a cache of the same setting and shape: its stored
  // bytes are copied into this cache's storage, nothing is allocated (validate's prefix reuse).
  void copy_from(const KvCache& src);

  // Sessions that outlive the process (kv_cache_state.cc, docs/formats/state-file.md): the
  // stored positions as bytes, per side and layer the positions packed, the tiles in use as they
  // are in memory, the FP32 ring and the sink rows. Every layer must hold the same positions.
  void save_state(ByteWriter& out) const;
  // Reads what save_state wrote for n_past positions. The cache must have the saving cache's
  // setting and a layout that holds them (a sliding-window layer's ring of the same size), else
  // kvrt::Error(kInput) naming what differs, and the cache is left empty.
  void load_state(ByteReader& in, int n_past);
  // Forgets positions [n_keep, length). Returns n_keep when what stays is exactly what writing
  // n_keep positions stores; otherwise (a residual FP32 window or a sliding-window ring that
  // already dropped what n_keep positions need) clears the cache and returns 0.
  int truncate(int n_keep);

  // What attention reads of one layer and kv head; valid until the next write or clear.
  HeadView view(int layer, int kv_head) const;
  // Test harnesses only (validate's negative control damages stored scales on purpose): the
  // packed tile (or row) of one side, layer and kv head that holds packed position pos, writable.
  uint8_t* tile_for_test(int layer, int kv_head, TileRole side, int pos);

  size_t bytes_allocated() const;  // all storage for n_ctx positions, counted from the buffers
  double bytes_per_token() const;  // over all layers, K and V, as the layout predicts
  size_t bytes_in_use(
      int n_tokens) const;  // a sliding-window layer stops at the positions it keeps

  struct Storage;  // defined in kv_cache.cc only

 private:
  std::unique_ptr<Storage> s_;
};

}  // namespace kvrt::kv
