// The KV cache of one session: every layer's keys and values for up to n_ctx positions,
// allocated once at construction. Rows per token for K and V alike (never a transposed V).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kv/kv_config.h"

namespace kvrt::kv {

struct CacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_ctx = 0;
};

class KvCache {
 public:
  // Allocates storage for n_ctx positions; an invalid config (group size, rotation with a
  // head_dim that is not a power of two, ...) is a kvrt::Error(kUsage).
  KvCache(const KvConfig& config, const CacheShape& shape);
  ~KvCache();

  const KvConfig& config() const;
  const CacheShape& shape() const;

  // Appends positions [pos, pos + n_tokens) of one layer; pos must equal length(layer).
  // k, v: [n_tokens][n_kv_heads][head_dim], keys already rotated by RoPE.
  void write(int layer, int pos, int n_tokens, const float* k, const float* v);

  int length(int layer) const;  // positions stored for this layer
  void clear();                 // forget every position (storage is kept)

  size_t bytes_allocated() const;  // all storage for n_ctx positions
  double bytes_per_token() const;  // over all layers, K and V, as the layout predicts
  size_t bytes_in_use(int n_tokens) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }  // for the attention ops

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvrt::kv
