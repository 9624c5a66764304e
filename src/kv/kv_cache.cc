#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/channel_tile.h"
#include "kv/formats.h"
#include "kv/kv_cache_impl.h"
#include "simd/dispatch.h"
#include "simd/kernels_scalar.h"

namespace kvrt::kv {

AlignedBytes alloc_aligned(size_t n_bytes) {
  const size_t rounded = (std::max<size_t>(n_bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw Error("cannot allocate " + std::to_string(rounded) + " bytes for the KV cache", ErrorKind::kResource);
  std::memset(p, 0, rounded);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

namespace {

void check_config(const KvConfig& cfg, const CacheShape& s, int group) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_ctx <= 0) {
    throw Error("KV cache shape must be positive (n_layers, n_kv_heads, head_dim, n_ctx)", ErrorKind::kUsage);
  }
  const bool quantized = cfg.k_format != Format::kF32 || cfg.v_format != Format::kF32;
  if (group < 8 || group > 128 || (group & (group - 1)) != 0) {
    throw Error("KV group size " + std::to_string(group) + " must be a power of two from 8 to 128", ErrorKind::kUsage);
  }
  if (quantized && s.head_dim % group != 0) {
    throw Error("KV group size " + std::to_string(group) + " does not divide head_dim " + std::to_string(s.head_dim), ErrorKind::kUsage);
  }
  if (cfg.rotate && (s.head_dim & (s.head_dim - 1)) != 0) {
    throw Error("Hadamard rotation needs a power-of-two head_dim, not " + std::to_string(s.head_dim), ErrorKind::kUsage);
  }
  if (cfg.residual < 0) throw Error("KV residual window must be >= 0", ErrorKind::kUsage);
  if (s.head_dim > simd::scalar::kMaxRow) throw Error("head_dim above " + std::to_string(simd::scalar::kMaxRow) + " is not supported", ErrorKind::kUsage);
}

simd::Codec codec_of(Format f) {
  return f == Format::kQ8 ? simd::Codec::kQ8 : f == Format::kQ4 ? simd::Codec::kQ4 : simd::Codec::kF32;
}

void init_side(SideStore& s, Format format, bool per_channel, const KvConfig& cfg, const CacheShape& shape, int group) {
  const size_t hd = shape.head_dim;
  s.format = format;
  s.per_channel = per_channel && format != Format::kF32;
  s.rotated = cfg.rotate;
  s.row_bytes = format == Format::kF32 ? sizeof(float) * hd : format_traits(format).row_bytes(shape.head_dim, group);
  size_t n_slots = shape.n_ctx;
  if (s.per_channel) {
    s.tile_bytes = channel_tile_bytes(format, shape.head_dim, group);
    n_slots = (shape.n_ctx + group - 1) / group;
    s.layer_bytes = n_slots * shape.n_kv_heads * s.tile_bytes;
    s.window = cfg.residual + group;
  } else if (format != Format::kF32) {
    s.tile_bytes = kTileTokens * s.row_bytes;  // the same bytes per token, rearranged (kv/tiles.h)
    n_slots = (shape.n_ctx + kTileTokens - 1) / kTileTokens;
    s.layer_bytes = n_slots * shape.n_kv_heads * s.tile_bytes;
    s.window = cfg.residual;
  } else {
    s.layer_bytes = n_slots * shape.n_kv_heads * s.row_bytes;
  }
  s.packed = alloc_aligned(s.layer_bytes * shape.n_layers);
  s.ring.assign(static_cast<size_t>(shape.n_layers) * s.window * shape.n_kv_heads * hd, 0.0f);
  s.n_packed.assign(shape.n_layers, 0);
}

// Deterministic relative perturbation in [-noise, noise] of the scale at (key, index).
float scale_noise(float noise, uint64_t key) {
  key = (key + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  key ^= key >> 31;
  return 1.0f + noise * (static_cast<float>(key >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
}

void perturb_scales(const KvConfig& cfg, const SideStore& s, uint8_t* p, int n_scales, size_t stride, uint64_t key) {
  if (cfg.debug_scale_noise == 0) return;
  for (int i = 0; i < n_scales; ++i) {
    float d;
    std::memcpy(&d, p + i * stride, sizeof d);
    d *= scale_noise(cfg.debug_scale_noise, key * 4099 + i + (s.format == Format::kQ4 ? 77 : 0));
    std::memcpy(p + i * stride, &d, sizeof d);
  }
}

// Packs position pos (FP32 rows [n_kv_heads][head_dim], already rotated) on the token axis:
// an f32 row, or a row of blocks moved into its slot of the tile.
void pack_row(KvCache::Impl& c, SideStore& s, int layer, int pos, const float* x) {
  const int hd = c.shape.head_dim;
  const simd::Kernels& k = simd::kernels();
  uint8_t blocks[simd::scalar::kMaxRow * 2];  // one row of q8 / q4 blocks
  const TileFormat tf = c.tile_format(s, &s == &c.k ? TileRole::kKey : TileRole::kValue);
  for (int h = 0; h < c.shape.n_kv_heads; ++h) {
    if (s.format == Format::kF32) {
      std::memcpy(const_cast<uint8_t*>(c.row(s, layer, pos, h)), x + h * hd, s.row_bytes);
      continue;
    }
    k.quantize[static_cast<int>(codec_of(s.format))](x + h * hd, hd, c.group_size, blocks);
    const size_t block = s.row_bytes / (hd / c.group_size);
    perturb_scales(c.config, s, blocks, hd / c.group_size, block, (static_cast<uint64_t>(layer) << 40) ^ (uint64_t(pos) << 8) ^ h);
    tile_store_row(tf, blocks, pos % kTileTokens, const_cast<uint8_t*>(c.token_tile(s, layer, pos, h)));
  }
}

// Packs the G ring positions starting at pos into one channel-axis tile per kv head.
void pack_tile(KvCache::Impl& c, SideStore& s, int layer, int pos) {
  const int hd = c.shape.head_dim, g = c.group_size;
  std::vector<float> x(static_cast<size_t>(g) * hd);  // [G][head_dim]
  for (int h = 0; h < c.shape.n_kv_heads; ++h) {
    for (int t = 0; t < g; ++t) std::memcpy(&x[t * hd], c.ring_row(s, layer, pos + t, h), sizeof(float) * hd);
    uint8_t* dst = const_cast<uint8_t*>(c.tile(s, layer, pos / g, h));
    channel_tile_quantize(s.format, x.data(), g, hd, dst);
    perturb_scales(c.config, s, dst, hd, sizeof(float), (static_cast<uint64_t>(layer) << 40) ^ (uint64_t(pos) << 8) ^ h);
  }
}

// Stores one token: packs what leaves the residual window first, then fills the ring slot.
void write_token(KvCache::Impl& c, SideStore& s, int layer, int pos, const float* x) {
  int& n_packed = s.n_packed[layer];
  if (s.window == 0) {
    pack_row(c, s, layer, pos, x);
    n_packed = pos + 1;
    return;
  }
  // After the write at most `window` positions are unpacked, so the ring slot of pos is free
  // (it held pos - window) and every packed position was written before.
  while (pos + 1 - n_packed > s.window) {
    if (s.per_channel) {
      pack_tile(c, s, layer, n_packed);
      n_packed += c.group_size;
    } else {
      std::vector<float> row(static_cast<size_t>(c.shape.n_kv_heads) * c.shape.head_dim);
      for (int h = 0; h < c.shape.n_kv_heads; ++h) {
        std::memcpy(&row[h * c.shape.head_dim], c.ring_row(s, layer, n_packed, h), sizeof(float) * c.shape.head_dim);
      }
      pack_row(c, s, layer, n_packed, row.data());
      ++n_packed;
    }
  }
  for (int h = 0; h < c.shape.n_kv_heads; ++h) {
    std::memcpy(const_cast<float*>(c.ring_row(s, layer, pos, h)), x + h * c.shape.head_dim, sizeof(float) * c.shape.head_dim);
  }
}

void write_side(KvCache::Impl& c, SideStore& s, int layer, int pos, int n_tokens, const float* x) {
  const int hd = c.shape.head_dim;
  const size_t token_floats = static_cast<size_t>(c.shape.n_kv_heads) * hd;
  std::vector<float> rotated(s.rotated ? token_floats : 0);  // [n_kv_heads][head_dim]
  for (int t = 0; t < n_tokens; ++t) {
    const float* src = x + t * token_floats;
    if (s.rotated) {
      std::memcpy(rotated.data(), src, token_floats * sizeof(float));
      for (int h = 0; h < c.shape.n_kv_heads; ++h) simd::kernels().hadamard(rotated.data() + h * hd, hd);
      src = rotated.data();
    }
    write_token(c, s, layer, pos + t, src);
  }
}

}  // namespace

KvCache::KvCache(const KvConfig& config, const CacheShape& shape) : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.config = config;
  c.shape = shape;
  c.group_size = config.group_size > 0 ? config.group_size : std::clamp(shape.head_dim, 8, 32);
  check_config(config, shape, c.group_size);
  c.config.group_size = c.group_size;
  init_side(c.k, config.k_format, config.k_axis == KeyAxis::kChannel, config, shape, c.group_size);
  init_side(c.v, config.v_format, false, config, shape, c.group_size);
  c.length.assign(shape.n_layers, 0);
}

KvCache::~KvCache() = default;

const KvConfig& KvCache::config() const { return impl_->config; }
const CacheShape& KvCache::shape() const { return impl_->shape; }

void KvCache::write(int layer, int pos, int n_tokens, const float* k, const float* v) {
  Impl& c = *impl_;
  KVRT_ASSERT(layer >= 0 && layer < c.shape.n_layers);
  KVRT_ASSERT(pos == c.length[layer] && n_tokens >= 0);
  if (pos + n_tokens > c.shape.n_ctx) {
    throw Error("context full: " + std::to_string(pos + n_tokens) + " positions exceed n_ctx " +
                    std::to_string(c.shape.n_ctx), ErrorKind::kResource);
  }
  write_side(c, c.k, layer, pos, n_tokens, k);
  write_side(c, c.v, layer, pos, n_tokens, v);
  c.length[layer] = pos + n_tokens;
}

int KvCache::length(int layer) const { return impl_->length.at(layer); }

void KvCache::clear() {
  Impl& c = *impl_;
  std::fill(c.length.begin(), c.length.end(), 0);
  std::fill(c.k.n_packed.begin(), c.k.n_packed.end(), 0);
  std::fill(c.v.n_packed.begin(), c.v.n_packed.end(), 0);
}

size_t KvCache::bytes_allocated() const {
  const Impl& c = *impl_;
  return (c.k.layer_bytes + c.v.layer_bytes) * c.shape.n_layers + (c.k.ring.size() + c.v.ring.size()) * sizeof(float);
}

// Packed bytes of one token over all layers, K and V (the FP32 residual window is a fixed extra).
double KvCache::bytes_per_token() const {
  const Impl& c = *impl_;
  auto side = [&](const SideStore& s) {
    return s.per_channel ? static_cast<double>(s.tile_bytes) / c.group_size : static_cast<double>(s.row_bytes);
  };
  return (side(c.k) + side(c.v)) * c.shape.n_kv_heads * c.shape.n_layers;
}

size_t KvCache::bytes_in_use(int n_tokens) const {
  const Impl& c = *impl_;
  return static_cast<size_t>(bytes_per_token() * n_tokens + 0.5) + (c.k.ring.size() + c.v.ring.size()) * sizeof(float);
}

}  // namespace kvrt::kv
