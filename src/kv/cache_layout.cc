#include "kv/cache_layout.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/error.h"
#include "kv/channel_tile.h"
#include "simd/kernels_scalar.h"

namespace kvrt::kv {

namespace {

constexpr int kDefaultMaxGroup = 32;

std::string side_name(TileRole role) { return role == TileRole::kKey ? "keys" : "values"; }

// The sides stored as token tiles: their format's unit must divide the group, and the group head_dim.
struct TokenTiled {
  const FormatTraits* format[2] = {};  // [TileRole], null when that side is not token tiles
  int unit() const {
    int u = 1;
    for (TileRole role : {TileRole::kKey, TileRole::kValue})
      if (const FormatTraits* f = format[static_cast<int>(role)]) u = std::lcm(u, f->unit(role));
    return u;
  }
};

TokenTiled token_tiled(const KvConfig& c) {
  TokenTiled t;
  if (format_traits(c.k_format).quantized() && c.k_axis == KeyAxis::kToken) t.format[0] = &format_traits(c.k_format);
  if (format_traits(c.v_format).quantized()) t.format[1] = &format_traits(c.v_format);
  return t;
}

// The largest group up to kDefaultMaxGroup that divides head_dim and fits every token-tiled side.
int default_group(const KvConfig& c, int head_dim) {
  const int unit = token_tiled(c).unit();
  for (int g = std::min(kDefaultMaxGroup, head_dim); g >= 1; --g)
    if (head_dim % g == 0 && g % unit == 0) return g;
  throw Error("no quantization group fits head_dim " + std::to_string(head_dim) + " for the KV setting " + c.name() +
                  ": its token-axis sides need head_dim and the group to be multiples of " + std::to_string(unit),
              ErrorKind::kUsage);
}

void check_group(const KvConfig& c, int head_dim, int group) {
  if (group < 1 || group > kMaxGroup)
    throw Error("KV group size " + std::to_string(group) + " is outside 1.." + std::to_string(kMaxGroup), ErrorKind::kUsage);
  // Channel-axis key tiles pack a token's channels, and a channel's G tokens, in whole bytes.
  const FormatTraits& k = format_traits(c.k_format);
  if (k.quantized() && c.k_axis == KeyAxis::kChannel && (head_dim * k.bits % 8 != 0 || group * k.bits % 8 != 0))
    throw Error(std::string(k.name) + " channel-axis keys pack " + std::to_string(8 / k.bits) + " codes per byte: head_dim " +
                    std::to_string(head_dim) + " and the group " + std::to_string(group) + " must be multiples of that",
                ErrorKind::kUsage);
  const TokenTiled t = token_tiled(c);
  for (TileRole role : {TileRole::kKey, TileRole::kValue}) {
    const FormatTraits* f = t.format[static_cast<int>(role)];
    if (!f) continue;
    const int unit = f->unit(role);
    if (head_dim % group != 0 || group % unit != 0)
      throw Error(std::string(f->name) + " " + side_name(role) + " need a group that divides head_dim " +
                      std::to_string(head_dim) + " and is a multiple of " + std::to_string(unit) + ", not " +
                      std::to_string(group),
                  ErrorKind::kUsage);
  }
}

void check_shape(const KvConfig& c, const CacheShape& s) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_ctx <= 0)
    throw Error("KV cache shape must be positive (n_layers, n_kv_heads, head_dim, n_ctx)", ErrorKind::kUsage);
  if (s.head_dim > simd::scalar::kMaxRow)
    throw Error("head_dim above " + std::to_string(simd::scalar::kMaxRow) + " is not supported", ErrorKind::kUsage);
  if (c.rotate && (s.head_dim & (s.head_dim - 1)) != 0)
    throw Error("Hadamard rotation needs a power-of-two head_dim, not " + std::to_string(s.head_dim), ErrorKind::kUsage);
  if (c.residual < 0) throw Error("KV residual window must be >= 0", ErrorKind::kUsage);
}

SideLayout side(const FormatTraits& f, TileRole role, bool per_channel, const KvConfig& c, const CacheShape& s, int group) {
  SideLayout l;
  l.format = &f;
  l.role = role;
  l.rotated = c.rotate;
  if (!f.quantized()) {
    l.tile_bytes = f.row_bytes(s.head_dim, group);
  } else if (per_channel) {
    l.packing = Packing::kChannelTiles;
    l.tile_tokens = group;
    l.tile_bytes = f.channel_tile_bytes(s.head_dim, group);
    l.window = std::min(c.residual + group, s.n_ctx);  // the residual, plus up to G positions waiting for a tile
  } else {
    l.packing = Packing::kTokenTiles;
    l.tile_tokens = kTileTokens;
    l.tile_bytes = f.tile(role, s.head_dim, group).bytes();
    l.window = std::min(c.residual, s.n_ctx);
  }
  l.n_tiles = (s.n_ctx + l.tile_tokens - 1) / l.tile_tokens;
  return l;
}

}  // namespace

int resolve_group(const KvConfig& c, int head_dim) {
  const int group = c.group_size > 0 ? c.group_size : default_group(c, head_dim);
  check_group(c, head_dim, group);
  return group;
}

CacheLayout plan_cache(const KvConfig& c, const CacheShape& s) {
  check_shape(c, s);
  CacheLayout l;
  l.shape = s;
  l.group = resolve_group(c, s.head_dim);
  l.k = side(format_traits(c.k_format), TileRole::kKey, c.k_axis == KeyAxis::kChannel, c, s, l.group);
  l.v = side(format_traits(c.v_format), TileRole::kValue, false, c, s, l.group);
  return l;
}

size_t CacheLayout::packed_layer_bytes(const SideLayout& s) const {
  return static_cast<size_t>(s.n_tiles) * shape.n_kv_heads * s.tile_bytes;
}

size_t CacheLayout::ring_floats(const SideLayout& s) const {
  return static_cast<size_t>(shape.n_layers) * s.window * shape.n_kv_heads * shape.head_dim;
}

size_t CacheLayout::rotated_floats() const { return k.rotated || v.rotated ? static_cast<size_t>(shape.n_kv_heads) * shape.head_dim : 0; }

size_t CacheLayout::leaving_floats() const {
  const bool ring_of_rows = (k.packing == Packing::kTokenTiles && k.window > 0) || (v.packing == Packing::kTokenTiles && v.window > 0);
  return ring_of_rows ? static_cast<size_t>(shape.n_kv_heads) * shape.head_dim : 0;
}

size_t CacheLayout::gathered_floats() const {
  return k.packing == Packing::kChannelTiles ? static_cast<size_t>(group) * shape.head_dim : 0;
}

size_t CacheLayout::blocks_bytes() const {
  size_t n = 0;
  for (const SideLayout* s : {&k, &v})
    if (s->packing == Packing::kTokenTiles) n = std::max(n, s->format->row_bytes(shape.head_dim, group));
  return n;
}

size_t CacheLayout::bytes() const {
  size_t total = 0;
  for (const SideLayout* side : {&k, &v}) {
    total += aligned_size(packed_layer_bytes(*side) * shape.n_layers) + ring_floats(*side) * sizeof(float);
  }
  return total + (rotated_floats() + leaving_floats() + gathered_floats()) * sizeof(float) + blocks_bytes();
}

double CacheLayout::bytes_per_token() const {
  return (k.bytes_per_token() + v.bytes_per_token()) * shape.n_kv_heads * shape.n_layers;
}

}  // namespace kvrt::kv
