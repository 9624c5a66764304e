#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "kv/kv_cache_impl.h"

namespace kvrt::kv {

AlignedBytes alloc_aligned(size_t n_bytes) {
  const size_t rounded = (std::max<size_t>(n_bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw Error("cannot allocate " + std::to_string(rounded) + " bytes for the KV cache", ErrorKind::kResource);
  std::memset(p, 0, rounded);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

namespace {

void check_shape(const CacheShape& s) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_ctx <= 0) {
    throw Error("KV cache shape must be positive (n_layers, n_kv_heads, head_dim, n_ctx)", ErrorKind::kUsage);
  }
}

void init_side(SideStore& s, Format format, const CacheShape& shape) {
  s.format = format;
  if (format != Format::kF32) throw Error(std::string("KV format ") + format_name(format) + " is not available yet", ErrorKind::kUsage);
  s.row_bytes = sizeof(float) * shape.head_dim;
  s.layer_bytes = s.row_bytes * shape.n_ctx * shape.n_kv_heads;
  s.packed = alloc_aligned(s.layer_bytes * shape.n_layers);
  s.n_packed.assign(shape.n_layers, 0);
}

void write_side(KvCache::Impl& c, SideStore& s, int layer, int pos, int n_tokens, const float* x) {
  const size_t token_floats = static_cast<size_t>(c.shape.n_kv_heads) * c.shape.head_dim;
  for (int t = 0; t < n_tokens; ++t) {
    uint8_t* dst = const_cast<uint8_t*>(c.row(s, layer, pos + t, 0));
    std::memcpy(dst, x + t * token_floats, token_floats * sizeof(float));
  }
  s.n_packed[layer] = pos + n_tokens;
}

}  // namespace

KvCache::KvCache(const KvConfig& config, const CacheShape& shape) : impl_(std::make_unique<Impl>()) {
  check_shape(shape);
  Impl& c = *impl_;
  c.config = config;
  c.shape = shape;
  c.group_size = config.group_size > 0 ? config.group_size : std::min(32, shape.head_dim);
  c.config.group_size = c.group_size;
  init_side(c.k, config.k_format, shape);
  init_side(c.v, config.v_format, shape);
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
  const size_t per_layer = c.k.layer_bytes + c.v.layer_bytes +
                           (c.k.ring.size() + c.v.ring.size()) * sizeof(float) / c.shape.n_layers;
  return per_layer * c.shape.n_layers;
}

double KvCache::bytes_per_token() const {
  const Impl& c = *impl_;
  return static_cast<double>(c.k.layer_bytes + c.v.layer_bytes) * c.shape.n_layers / c.shape.n_ctx;
}

size_t KvCache::bytes_in_use(int n_tokens) const {
  return static_cast<size_t>(bytes_per_token() * n_tokens + 0.5);
}

}  // namespace kvrt::kv
