#include "kv/cache_layout.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>

#include "common/error.h"
#include "kv/channel_tile.h"
#include "kv/rotation.h"

namespace kvrt::kv {

namespace {

constexpr int kDefaultMaxGroup = 32;

std::string side_name(TileRole role) { return role == TileRole::kKey ? "keys" : "values"; }

// The formats stored as token tiles on some layer, per side: their units must divide the group,
// and the group head_dim.
struct TokenTiled {
  std::vector<const FormatTraits*> format[2];  // [TileRole]
  int unit() const {
    int u = 1;
    for (TileRole role : {TileRole::kKey, TileRole::kValue})
      for (const FormatTraits* f : format[static_cast<int>(role)]) u = std::lcm(u, f->unit(role));
    return u;
  }
};

// c's layer indices are resolved (resolve_layers).
TokenTiled token_tiled(const KvConfig& c, int n_layers) {
  TokenTiled t;
  for (int layer = 0; layer < n_layers; ++layer) {
    const FormatTraits& k = format_traits(c.format(TileRole::kKey, layer));
    const FormatTraits& v = format_traits(c.format(TileRole::kValue, layer));
    if (k.quantized() && c.k_axis == KeyAxis::kToken) t.format[0].push_back(&k);
    if (v.quantized()) t.format[1].push_back(&v);
  }
  return t;
}

// The largest group up to kDefaultMaxGroup that divides head_dim and fits every token-tiled side.
int default_group(const KvConfig& c, const CacheShape& s) {
  const int unit = token_tiled(c, s.n_layers).unit();
  for (int g = std::min(kDefaultMaxGroup, s.head_dim); g >= 1; --g)
    if (s.head_dim % g == 0 && g % unit == 0) return g;
  throw Error("no quantization group fits head_dim " + std::to_string(s.head_dim) +
                  " for the KV setting " + c.name() +
                  ": its token-axis sides need head_dim and the group to be multiples of " +
                  std::to_string(unit),
              ErrorKind::kUsage);
}

void check_group(const KvConfig& c, const CacheShape& s, int group) {
  const int head_dim = s.head_dim;
  if (group < 1 || group > kMaxGroup)
    throw Error(
        "KV group size " + std::to_string(group) + " is outside 1.." + std::to_string(kMaxGroup),
        ErrorKind::kUsage);
  // Channel-axis key tiles pack a token's channels, and a channel's G tokens, in whole bytes.
  for (int layer = 0; layer < s.n_layers; ++layer) {
    const FormatTraits& k = format_traits(c.format(TileRole::kKey, layer));
    const int unit = k.quantized() ? 8 / std::gcd(k.bits, 8) : 1;  // codes in whole bytes
    if (c.k_axis == KeyAxis::kChannel && (head_dim % unit != 0 || group % unit != 0))
      throw Error(std::string(k.name) + " channel-axis keys pack " + std::to_string(unit) +
                      " codes in whole bytes: head_dim " + std::to_string(head_dim) +
                      " and the group " + std::to_string(group) + " must be multiples of that",
                  ErrorKind::kUsage);
  }
  const TokenTiled t = token_tiled(c, s.n_layers);
  for (TileRole role : {TileRole::kKey, TileRole::kValue}) {
    for (const FormatTraits* f : t.format[static_cast<int>(role)]) {
      const int unit = f->unit(role);
      if (head_dim % group != 0 || group % unit != 0)
        throw Error(std::string(f->name) + " " + side_name(role) +
                        " need a group that divides head_dim " + std::to_string(head_dim) +
                        " and is a multiple of " + std::to_string(unit) + ", not " +
                        std::to_string(group),
                    ErrorKind::kUsage);
    }
  }
}

void check_shape(const KvConfig& c, const CacheShape& s) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_ctx <= 0)
    throw Error("KV cache shape must be positive (n_layers, n_kv_heads, head_dim, n_ctx)",
                ErrorKind::kUsage);
  if (s.head_dim > kMaxHeadDim)
    throw Error("head_dim above " + std::to_string(kMaxHeadDim) + " is not supported",
                ErrorKind::kUsage);
  if (c.rotate) key_rotation_block(s.head_dim);  // throws for an odd head_dim
  if (c.residual < 0) throw Error("KV residual window must be >= 0", ErrorKind::kUsage);
  if (c.sinks < 0) throw Error("KV sinks must be >= 0", ErrorKind::kUsage);
  if (!s.windows.empty() && s.windows.size() != static_cast<size_t>(s.n_layers))
    throw Error("KV cache shape gives " + std::to_string(s.windows.size()) +
                    " sliding windows for " + std::to_string(s.n_layers) + " layers",
                ErrorKind::kUsage);
  for (int w : s.windows)
    if (w < 0)
      throw Error("a sliding window must be >= 0 positions, not " + std::to_string(w),
                  ErrorKind::kUsage);
  if (s.n_chunk <= 0)
    throw Error("KV cache shape: positions per write must be positive", ErrorKind::kUsage);
}

// Packed positions a layer with this sliding window keeps in tiles of tile_tokens. Attention
// reads whole runs of kRingAlign positions, from the run holding the first query's first key to
// the chunk's last query: the ring keeps every tile of them, wherever they start, so each position
// read is the one a cache of every position holds (a value kernel scales a run by the largest
// scale stored in it, masked positions included), rounded up to whole kRingAlign positions and
// tiles; 0 (all of them) when that is not fewer.
int kept_positions(int sliding_window, int n_chunk, int tile_tokens, int n_tiles) {
  if (sliding_window == 0) return 0;
  const int64_t span =
      int64_t(sliding_window) + n_chunk - 1 + (kRingAlign - 1);  // positions read, at most
  // The run read first starts a tile when tiles divide runs; otherwise it may start in the last
  // position of one.
  const int64_t tiles = kRingAlign % tile_tokens == 0
                            ? (span + tile_tokens - 1) / tile_tokens
                            : (span - 1 + tile_tokens - 1) / tile_tokens + 1;
  const int64_t unit = std::lcm(int64_t(tile_tokens), int64_t(kRingAlign));
  const int64_t kept = (tiles * tile_tokens + unit - 1) / unit * unit;
  return kept / tile_tokens < n_tiles ? int(kept) : 0;
}

// One side of one layer; positions after the sinks are packed (the last `kept` of them in a
// sliding-window layer) or wait in the FP32 ring.
SideLayout side(const FormatTraits& f, TileRole role, const KvConfig& c, const CacheShape& s,
                int layer, int group) {
  SideLayout l;
  l.format = &f;
  l.role = role;
  if (c.rotate)
    l.rot_block =
        role == TileRole::kKey ? key_rotation_block(s.head_dim) : value_rotation_block(s.head_dim);
  l.sinks = std::min(c.sinks, s.n_ctx);
  const int n_after = s.n_ctx - l.sinks;
  if (!f.quantized()) {
    l.tile_bytes = f.row_bytes(s.head_dim, group);
  } else if (role == TileRole::kKey && c.k_axis == KeyAxis::kChannel) {
    l.packing = Packing::kChannelTiles;
    l.tile_tokens = group;
    l.tile_bytes = f.channel_tile_bytes(s.head_dim, group);
    l.window = std::min(c.residual + group,
                        n_after);  // the residual, plus up to G positions waiting for a tile
  } else {
    l.packing = Packing::kTokenTiles;
    l.tile_tokens = kTileTokens;
    l.tile_bytes = f.tile(role, s.head_dim, group).bytes();
    l.window = std::min(c.residual, n_after);
  }
  l.n_tiles = (n_after + l.tile_tokens - 1) / l.tile_tokens;
  l.kept = kept_positions(s.window_of(layer), s.n_chunk, l.tile_tokens, l.n_tiles);
  if (l.kept > 0) l.n_tiles = l.kept / l.tile_tokens;
  return l;
}

}  // namespace

KvConfig resolve_setting(const KvConfig& config, const CacheShape& s) {
  KvConfig c = resolve_layers(config, s.n_layers);
  if (c.group_size == 0) c.group_size = default_group(c, s);
  check_group(c, s, c.group_size);
  return c;
}

CacheLayout plan_cache(const KvConfig& config, const CacheShape& s) {
  check_shape(config, s);
  CacheLayout l;
  l.setting = resolve_setting(config, s);
  const KvConfig& c = l.setting;
  l.shape = s;
  l.group = c.group_size;
  l.sinks = std::min(c.sinks, s.n_ctx);
  for (int layer = 0; layer < s.n_layers; ++layer) {
    l.layers.push_back(
        {side(format_traits(c.format(TileRole::kKey, layer)), TileRole::kKey, c, s, layer, l.group),
         side(format_traits(c.format(TileRole::kValue, layer)), TileRole::kValue, c, s, layer,
              l.group),
         s.window_of(layer)});
  }
  return l;
}

size_t CacheLayout::packed_layer_bytes(const SideLayout& s) const {
  return static_cast<size_t>(s.n_tiles) * shape.n_kv_heads * s.tile_bytes;
}

size_t CacheLayout::ring_floats(const SideLayout& s) const {
  return static_cast<size_t>(s.window) * shape.n_kv_heads * shape.head_dim;
}

size_t CacheLayout::sink_floats() const {
  return static_cast<size_t>(sinks) * shape.n_kv_heads * shape.head_dim;
}

size_t CacheLayout::packed_bytes(TileRole role) const {
  size_t n = 0;
  for (const LayerLayout& l : layers) n += packed_layer_bytes(l.side(role));
  return n;
}

size_t CacheLayout::ring_floats(TileRole role) const {
  size_t n = 0;
  for (const LayerLayout& l : layers) n += ring_floats(l.side(role));
  return n;
}

size_t CacheLayout::rotated_floats() const {
  const bool rotated = !layers.empty() && (layers[0].k.rot_block ||
                                           layers[0].v.rot_block);  // one choice for every layer
  return rotated ? static_cast<size_t>(shape.n_kv_heads) * shape.head_dim : 0;
}

size_t CacheLayout::leaving_floats() const {
  bool ring_of_rows = false;
  for (const LayerLayout& l : layers)
    for (const SideLayout* s : {&l.k, &l.v})
      ring_of_rows |= s->packing == Packing::kTokenTiles && s->window > 0;
  return ring_of_rows ? static_cast<size_t>(shape.n_kv_heads) * shape.head_dim : 0;
}

size_t CacheLayout::gathered_floats() const {
  bool channel = false;
  for (const LayerLayout& l : layers) channel |= l.k.packing == Packing::kChannelTiles;
  return channel ? static_cast<size_t>(group) * shape.head_dim : 0;
}

size_t CacheLayout::blocks_bytes() const {
  size_t n = 0;
  for (const LayerLayout& l : layers)
    for (const SideLayout* s : {&l.k, &l.v})
      if (s->packing == Packing::kTokenTiles)
        n = std::max(n, s->format->row_bytes(shape.head_dim, group));
  return n;
}

size_t CacheLayout::bytes() const {
  size_t total = 0;
  for (TileRole role : {TileRole::kKey, TileRole::kValue}) {
    total += aligned_size(packed_bytes(role)) +
             (ring_floats(role) + sink_floats() * shape.n_layers) * sizeof(float);
  }
  return total + (rotated_floats() + leaving_floats() + gathered_floats()) * sizeof(float) +
         blocks_bytes();
}

double CacheLayout::bytes_per_token() const {
  double n = 0;
  for (const LayerLayout& l : layers) n += l.k.bytes_per_token() + l.v.bytes_per_token();
  return n * shape.n_kv_heads;
}

// Packed bytes of the positions after the sinks (up to the kept ones of a sliding-window layer),
// plus the sinks and the FP32 windows, of the layers `take` accepts.
template <typename Take>
size_t CacheLayout::in_use(int n_tokens, Take take) const {
  const int n_sinks = std::min(n_tokens, sinks), n_packed = n_tokens - n_sinks;
  double packed = 0;
  size_t floats = 0;
  for (const LayerLayout& l : layers) {
    if (!take(l)) continue;
    for (const SideLayout* s : {&l.k, &l.v}) {
      packed += s->bytes_per_token() * shape.n_kv_heads *
                (s->kept > 0 ? std::min(n_packed, s->kept) : n_packed);
      floats += static_cast<size_t>(n_sinks) * shape.n_kv_heads * shape.head_dim + ring_floats(*s);
    }
  }
  return static_cast<size_t>(packed + 0.5) + floats * sizeof(float);
}

size_t CacheLayout::bytes_in_use(int n_tokens) const {
  return in_use(n_tokens, [](const LayerLayout&) { return true; });
}

size_t CacheLayout::bytes_in_use(int n_tokens, int sliding_window) const {
  return in_use(n_tokens, [&](const LayerLayout& l) { return l.sliding_window == sliding_window; });
}

std::vector<LayerKind> CacheLayout::layer_kinds() const {
  std::vector<LayerKind> kinds;
  for (const LayerLayout& l : layers) {
    auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const LayerKind& k) {
      return k.sliding_window == l.sliding_window;
    });
    if (kind == kinds.end()) kind = kinds.insert(kinds.end(), LayerKind{l.sliding_window});
    ++kind->n_layers;
    kind->bytes_per_token += (l.k.bytes_per_token() + l.v.bytes_per_token()) * shape.n_kv_heads;
    for (const SideLayout* s : {&l.k, &l.v})
      kind->kept = std::max(kind->kept, s->n_tiles * s->tile_tokens);
    kind->packed_bytes += packed_layer_bytes(l.k) + packed_layer_bytes(l.v);
  }
  std::sort(kinds.begin(), kinds.end(), [](const LayerKind& a, const LayerKind& b) {
    return a.sliding_window < b.sliding_window;
  });
  return kinds;
}

}  // namespace kvrt::kv
