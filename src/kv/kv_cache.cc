#include "kv/kv_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kv/kv_storage.h"
#include "kv/rotation.h"
#include "simd/dispatch.h"

namespace kvrt::kv {

namespace {

AlignedBytes alloc_aligned(size_t n_bytes) {
  const size_t rounded = aligned_size(n_bytes);
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr)
    throw Error("cannot allocate " + std::to_string(rounded) + " bytes for the KV cache",
                ErrorKind::kResource);
  std::memset(p, 0, rounded);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

void init_side(Side& s, TileRole role, const CacheLayout& layout) {
  s.role = role;
  size_t packed = 0, ring = 0;
  for (const LayerLayout& l : layout.layers) {
    s.packed_offset.push_back(packed);
    s.ring_offset.push_back(ring);
    packed += layout.packed_layer_bytes(l.side(role));
    ring += layout.ring_floats(l.side(role));
  }
  s.packed = alloc_aligned(packed);
  s.packed_bytes = aligned_size(packed);
  s.ring.assign(ring, 0.0f);
  s.sinks.assign(layout.sink_floats() * layout.shape.n_layers, 0.0f);
  s.n_packed.assign(layout.shape.n_layers, 0);
}

// Packs position pos (FP32 rows [n_kv_heads][head_dim], already rotated) as rows or token tiles:
// an f32 row, or a row of blocks moved into its slot of the tile.
void pack_position(Storage& c, Side& s, int layer, int pos, const float* x) {
  const SideLayout& l = c.side_layout(s, layer);
  const FormatTraits& f = *l.format;
  const int hd = c.shape().head_dim, g = c.layout.group, i = pos - l.sinks;
  for (int h = 0; h < c.shape().n_kv_heads; ++h) {
    if (l.packing == Packing::kRows) {
      std::memcpy(c.tile(s, layer, i, h), x + h * hd, l.tile_bytes);
      continue;
    }
    simd::kernels().format[static_cast<int>(f.format)].quantize(x + h * hd, hd, g, c.blocks.data());
    f.tile_store_row(f.tile(l.role, hd, g), c.blocks.data(), i % kTileTokens,
                     c.tile(s, layer, i / kTileTokens, h));
  }
}

// Packs the G ring positions starting at pos into one channel-axis tile per kv head.
void pack_channel_tile(Storage& c, Side& s, int layer, int pos) {
  const SideLayout& l = c.side_layout(s, layer);
  const int hd = c.shape().head_dim, g = c.layout.group;
  for (int h = 0; h < c.shape().n_kv_heads; ++h) {
    for (int t = 0; t < g; ++t)
      std::memcpy(&c.gathered[t * hd], c.ring_row(s, layer, pos + t, h), sizeof(float) * hd);
    l.format->channel_quantize(c.gathered.data(), g, hd, c.tile(s, layer, (pos - l.sinks) / g, h));
  }
}

// Stores one token: a sink row, or packs what leaves the residual window first, then fills the
// ring slot.
void write_token(Storage& c, Side& s, int layer, int pos, const float* x) {
  const SideLayout& l = c.side_layout(s, layer);
  const int hd = c.shape().head_dim;
  int& n_packed = s.n_packed[layer];
  if (pos < l.sinks || l.window == 0) {
    if (pos < l.sinks) std::memcpy(c.sink_row(s, layer, pos), x, c.token_floats() * sizeof(float));
    else pack_position(c, s, layer, pos, x);
    n_packed = pos + 1;
    return;
  }
  // After the write at most `window` positions are unpacked, so the ring slot of pos is free
  // (it held pos - window) and every packed position was written before.
  while (pos + 1 - n_packed > l.window) {
    if (l.packing == Packing::kChannelTiles) {
      pack_channel_tile(c, s, layer, n_packed);
      n_packed += l.tile_tokens;
    } else {
      for (int h = 0; h < c.shape().n_kv_heads; ++h)
        std::memcpy(&c.leaving[h * hd], c.ring_row(s, layer, n_packed, h), sizeof(float) * hd);
      pack_position(c, s, layer, n_packed, c.leaving.data());
      ++n_packed;
    }
  }
  for (int h = 0; h < c.shape().n_kv_heads; ++h)
    std::memcpy(c.ring_row(s, layer, pos, h), x + h * hd, sizeof(float) * hd);
}

void write_side(Storage& c, Side& s, int layer, int pos, int n_tokens, const float* x) {
  const int hd = c.shape().head_dim;
  const size_t token_floats = c.token_floats();
  for (int t = 0; t < n_tokens; ++t) {
    const float* src = x + t * token_floats;
    if (const int block = c.side_layout(s, layer).rot_block) {
      std::memcpy(c.rotated.data(), src, token_floats * sizeof(float));
      for (int h = 0; h < c.shape().n_kv_heads; ++h)
        rotate_row(c.rotated.data() + h * hd, hd, block);
      src = c.rotated.data();
    }
    write_token(c, s, layer, pos + t, src);
  }
}

SideView side_view(const Storage& c, const Side& s, int layer, int kv_head) {
  const SideLayout& l = c.side_layout(s, layer);
  const size_t nkv = c.shape().n_kv_heads, hd = c.shape().head_dim;
  const float* ring = l.window > 0 ? s.ring.data() + s.ring_offset[layer] + kv_head * hd : nullptr;
  const float* sinks =
      l.sinks > 0
          ? s.sinks.data() + static_cast<size_t>(layer) * c.layout.sink_floats() + kv_head * hd
          : nullptr;
  return {&l,
          s.packed.get() + s.packed_offset[layer] + kv_head * l.tile_bytes,
          l.tile_bytes * nkv,
          l.n_tiles,
          s.n_packed[layer],
          ring,
          nkv * hd,
          sinks,
          nkv * hd};
}

}  // namespace

KvCache::KvCache(const KvConfig& config, const CacheShape& shape)
    : s_(std::make_unique<Storage>()) {
  Storage& c = *s_;
  c.layout = plan_cache(config, shape);
  init_side(c.k, TileRole::kKey, c.layout);
  init_side(c.v, TileRole::kValue, c.layout);
  c.length.assign(shape.n_layers, 0);
  c.rotated.assign(c.layout.rotated_floats(), 0.0f);
  c.leaving.assign(c.layout.leaving_floats(), 0.0f);
  c.gathered.assign(c.layout.gathered_floats(), 0.0f);
  c.blocks.assign(c.layout.blocks_bytes(), 0);
}

KvCache::~KvCache() = default;

const KvConfig& KvCache::config() const { return s_->layout.setting; }
const CacheShape& KvCache::shape() const { return s_->layout.shape; }
const CacheLayout& KvCache::layout() const { return s_->layout; }

void KvCache::write(int layer, int pos, int n_tokens, const float* k, const float* v) {
  Storage& c = *s_;
  KVRT_ASSERT(layer >= 0 && layer < c.shape().n_layers);
  KVRT_ASSERT(pos == c.length[layer] && n_tokens >= 0);
  if (pos + n_tokens > c.shape().n_ctx) {
    throw Error("context full: " + std::to_string(pos + n_tokens) + " positions exceed n_ctx " +
                    std::to_string(c.shape().n_ctx),
                ErrorKind::kResource);
  }
  if (n_tokens > c.shape().n_chunk && c.shape().window_of(layer) > 0) {
    throw Error("a write of " + std::to_string(n_tokens) + " positions to sliding-window layer " +
                    std::to_string(layer) + " exceeds the " + std::to_string(c.shape().n_chunk) +
                    " its ring was sized for",
                ErrorKind::kUsage);
  }
  write_side(c, c.k, layer, pos, n_tokens, k);
  write_side(c, c.v, layer, pos, n_tokens, v);
  c.length[layer] = pos + n_tokens;
}

int KvCache::length(int layer) const { return s_->length.at(layer); }

void KvCache::clear() {
  Storage& c = *s_;
  std::fill(c.length.begin(), c.length.end(), 0);
  std::fill(c.k.n_packed.begin(), c.k.n_packed.end(), 0);
  std::fill(c.v.n_packed.begin(), c.v.n_packed.end(), 0);
}

void KvCache::copy_from(const KvCache& src) {
  Storage& c = *s_;
  const Storage& o = *src.s_;
  KVRT_ASSERT(c.layout.bytes() == o.layout.bytes() &&
              c.layout.setting.name() == o.layout.setting.name());
  KVRT_ASSERT(c.shape().n_layers == o.shape().n_layers && c.shape().n_ctx == o.shape().n_ctx);
  for (auto [to, from] : {std::pair<Side*, const Side*>{&c.k, &o.k}, {&c.v, &o.v}}) {
    // Per layer, the tiles in use come first: [n_tiles][n_kv_heads][tile_bytes], after the sinks
    // (a sliding-window layer's ring may be in use whole).
    for (int layer = 0; layer < c.shape().n_layers; ++layer) {
      const SideLayout& l = c.side_layout(*to, layer);
      const int n_packed = std::max(0, from->n_packed[layer] - l.sinks);
      const size_t n_tiles =
          std::min(size_t(n_packed + l.tile_tokens - 1) / size_t(l.tile_tokens), size_t(l.n_tiles));
      const size_t offset = to->packed_offset[layer];
      std::memcpy(to->packed.get() + offset, from->packed.get() + offset,
                  n_tiles * c.shape().n_kv_heads * l.tile_bytes);
    }
    std::copy(from->ring.begin(), from->ring.end(), to->ring.begin());
    std::copy(from->sinks.begin(), from->sinks.end(), to->sinks.begin());
    std::copy(from->n_packed.begin(), from->n_packed.end(), to->n_packed.begin());
  }
  std::copy(o.length.begin(), o.length.end(), c.length.begin());
}

uint8_t* KvCache::tile_for_test(int layer, int kv_head, TileRole side, int pos) {
  Storage& c = *s_;
  Side& s = side == TileRole::kKey ? c.k : c.v;
  const SideLayout& l = c.side_layout(s, layer);
  KVRT_ASSERT(pos >= l.sinks && pos < s.n_packed[layer]);
  return c.tile(s, layer, (pos - l.sinks) / l.tile_tokens, kv_head);
}

HeadView KvCache::view(int layer, int kv_head) const {
  const Storage& c = *s_;
  return {c.shape().head_dim, c.layout.group, side_view(c, c.k, layer, kv_head),
          side_view(c, c.v, layer, kv_head)};
}

// What the storage holds, counted from the buffers themselves (the layout predicts it:
// layout().bytes()).
size_t KvCache::bytes_allocated() const {
  const Storage& c = *s_;
  size_t n = c.blocks.size();
  for (const Side* s : {&c.k, &c.v})
    n += s->packed_bytes + (s->ring.size() + s->sinks.size()) * sizeof(float);
  return n + (c.rotated.size() + c.leaving.size() + c.gathered.size()) * sizeof(float);
}

double KvCache::bytes_per_token() const { return s_->layout.bytes_per_token(); }

size_t KvCache::bytes_in_use(int n_tokens) const { return s_->layout.bytes_in_use(n_tokens); }

}  // namespace kvrt::kv
