// Saving, loading and truncating the stored positions of a KvCache (kv/kv_cache.h). The bytes are
// those of memory, so a restored cache is read by attention exactly as the saved one was.
#include <algorithm>
#include <cstring>
#include <string>

#include "common/byte_io.h"
#include "common/error.h"
#include "kv/kv_cache.h"
#include "kv/kv_storage.h"

namespace kvrt::kv {
namespace {

// memcpy for parts that may be empty: an empty part's storage may be a null pointer, which
// memcpy must not be given even for no bytes.
void copy_in(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

const char* side_name(TileRole role) { return role == TileRole::kKey ? "keys" : "values"; }

// Tiles (or rows) in use after n_packed positions: the first of them hold packed positions from
// the first after the sinks; a sliding-window layer's ring may be in use whole.
int tiles_in_use(const SideLayout& l, int n_packed) {
  const int n = std::max(0, n_packed - l.sinks);
  return std::min((n + l.tile_tokens - 1) / l.tile_tokens, l.n_tiles);
}

// Positions [0, n) of which writing n positions leaves packed (or sinks): the rest wait in the
// FP32 window. Channel tiles pack whole tiles of tile_tokens positions (kv_cache.cc, write_token).
int packed_after(const SideLayout& l, int n) {
  if (n <= l.sinks || l.window == 0) return n;
  const int over = std::max(0, n - l.sinks - l.window);
  if (l.packing == Packing::kChannelTiles)
    return l.sinks + (over + l.tile_tokens - 1) / l.tile_tokens * l.tile_tokens;
  return l.sinks + over;
}

std::string where(const Side& s, int layer) {
  return std::string("layer ") + std::to_string(layer) + " " + side_name(s.role);
}

void save_side(const Storage& c, const Side& s, ByteWriter& out) {
  const size_t nkv = c.shape().n_kv_heads, hd = c.shape().head_dim;
  for (int layer = 0; layer < c.shape().n_layers; ++layer) {
    const SideLayout& l = c.side_layout(s, layer);
    const int n_used = tiles_in_use(l, s.n_packed[layer]);
    out.put(uint32_t(s.n_packed[layer]));
    out.put(uint32_t(l.n_tiles));
    out.put(uint64_t(l.tile_bytes));
    out.put(uint32_t(n_used));
    out.put_bytes(s.packed.get() + s.packed_offset[layer], size_t(n_used) * nkv * l.tile_bytes);
    const size_t ring = size_t(l.window) * nkv * hd, sinks = c.layout.sink_floats();
    out.put(uint64_t(ring));
    out.put_bytes(s.ring.data() + s.ring_offset[layer], ring * sizeof(float));
    out.put(uint64_t(sinks));
    out.put_bytes(s.sinks.data() + size_t(layer) * sinks, sinks * sizeof(float));
  }
}

// The packed-position count of a stored layer is one write_token can leave after n_past positions.
void check_packed(const SideLayout& l, int n_packed, int n_past, const std::string& at,
                  const std::string& what) {
  const bool ok = n_packed >= 0 && n_packed <= n_past && n_packed >= std::min(n_past, l.sinks) &&
                  n_past - n_packed <= l.window &&
                  (l.packing != Packing::kChannelTiles || n_packed <= l.sinks ||
                   (n_packed - l.sinks) % l.tile_tokens == 0);
  if (!ok)
    throw Error(what + " holds " + std::to_string(n_packed) + " packed positions of " +
                std::to_string(n_past) + " in " + at + ", which this KV setting cannot store");
}

void load_side(Storage& c, Side& s, ByteReader& in, int n_past) {
  const size_t nkv = c.shape().n_kv_heads, hd = c.shape().head_dim;
  const std::string& what = in.what();
  for (int layer = 0; layer < c.shape().n_layers; ++layer) {
    const SideLayout& l = c.side_layout(s, layer);
    const std::string at = where(s, layer);
    const int n_packed =
        int(std::min<uint32_t>(in.get<uint32_t>("packed position count"), uint32_t(1) << 30));
    const uint32_t n_tiles = in.get<uint32_t>("tile count");
    const uint64_t tile_bytes = in.get<uint64_t>("tile size");
    if (tile_bytes != l.tile_bytes)
      throw Error(what + " stores tiles of " + std::to_string(tile_bytes) + " bytes in " + at +
                  ", this session's are " + std::to_string(l.tile_bytes));
    if (l.kept > 0 && n_tiles != uint32_t(l.n_tiles))
      throw Error(what + " has a sliding-window ring of " + std::to_string(n_tiles) + " tiles in " +
                  at + ", this session's has " + std::to_string(l.n_tiles) +
                  " (open it with the n_batch it was saved with)");
    check_packed(l, n_packed, n_past, at, what);
    const uint32_t n_used = in.get<uint32_t>("tile count in use");
    if (n_used != uint32_t(tiles_in_use(l, n_packed)))
      throw Error(what + " has " + std::to_string(n_used) + " tiles in use in " + at +
                  ", its positions need " + std::to_string(tiles_in_use(l, n_packed)));
    const size_t n_bytes = size_t(n_used) * nkv * l.tile_bytes;
    copy_in(s.packed.get() + s.packed_offset[layer], in.take(n_bytes, "tiles"), n_bytes);
    const size_t ring = size_t(l.window) * nkv * hd, sinks = c.layout.sink_floats();
    if (in.get<uint64_t>("window size") != ring)
      throw Error(what + " has an FP32 window of another size in " + at);
    copy_in(s.ring.data() + s.ring_offset[layer], in.take(ring * sizeof(float), "FP32 window"),
            ring * sizeof(float));
    if (in.get<uint64_t>("sink size") != sinks)
      throw Error(what + " has another number of sink rows in " + at);
    copy_in(s.sinks.data() + size_t(layer) * sinks, in.take(sinks * sizeof(float), "sink rows"),
            sinks * sizeof(float));
    s.n_packed[layer] = n_packed;
  }
}

// Whether forgetting positions [n_keep, length) of one side and layer leaves what writing n_keep
// positions stores: every position of the FP32 window it keeps still in its slot, and no ring
// tile overwritten that n_keep positions would still hold.
bool truncates_exactly(const SideLayout& l, int n_packed, int length, int n_keep) {
  const int kept_packed = packed_after(l, n_keep);
  if (l.window > 0 && kept_packed < n_keep && kept_packed + l.window < length) return false;
  const int n = std::max(0, n_packed - l.sinks);
  const int tiles_written = (n + l.tile_tokens - 1) / l.tile_tokens;
  const int tiles_kept = (std::max(0, kept_packed - l.sinks) + l.tile_tokens - 1) / l.tile_tokens;
  return l.kept == 0 || tiles_written <= l.n_tiles || tiles_kept == tiles_written;
}

}  // namespace

void KvCache::save_state(ByteWriter& out) const {
  const Storage& c = *s_;
  for (int length : c.length) KVRT_ASSERT(length == c.length.front());
  save_side(c, c.k, out);
  save_side(c, c.v, out);
}

void KvCache::load_state(ByteReader& in, int n_past) {
  Storage& c = *s_;
  clear();
  if (n_past < 0 || n_past > c.shape().n_ctx)
    throw Error(in.what() + " holds " + std::to_string(n_past) +
                " positions, more than this session's context of " +
                std::to_string(c.shape().n_ctx));
  try {
    load_side(c, c.k, in, n_past);
    load_side(c, c.v, in, n_past);
  } catch (...) {
    clear();
    throw;
  }
  std::fill(c.length.begin(), c.length.end(), n_past);
}

int KvCache::truncate(int n_keep) {
  Storage& c = *s_;
  KVRT_ASSERT(n_keep >= 0);
  const int length = c.length.empty() ? 0 : c.length.front();
  if (n_keep >= length) return length;
  bool exact = n_keep > 0;
  for (const Side* s : {&c.k, &c.v})
    for (int layer = 0; exact && layer < c.shape().n_layers; ++layer)
      exact =
          truncates_exactly(c.side_layout(*s, layer), s->n_packed[layer], c.length[layer], n_keep);
  if (!exact) {
    clear();
    return 0;
  }
  for (Side* s : {&c.k, &c.v})
    for (int layer = 0; layer < c.shape().n_layers; ++layer)
      s->n_packed[layer] = packed_after(c.side_layout(*s, layer), n_keep);
  std::fill(c.length.begin(), c.length.end(), n_keep);
  return n_keep;
}

}  // namespace kvrt::kv
