#include "api/session_plan.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "kv/cache_layout.h"

namespace kvrt::api {
int resolved_n_ctx(const model::ModelConfig& config, int n_ctx) {
  if (n_ctx < 0) throw Error("context length must be positive", ErrorKind::kUsage);
  return n_ctx == 0 ? config.n_ctx_train : n_ctx;
}

size_t planned_session_bytes(const model::ModelConfig& c, const model::SessionOptions& o) {
  const int n_ctx = resolved_n_ctx(c, o.n_ctx);
  const size_t kv_bytes = kv::plan_cache(o.kv, {c.n_layers, c.n_kv_heads, c.head_dim, n_ctx}).bytes();

  const size_t b = size_t(std::clamp(o.n_batch, 1, n_ctx));
  const size_t q = size_t(c.n_heads) * size_t(c.head_dim);
  const size_t kvw = size_t(c.n_kv_heads) * size_t(c.head_dim);
  const size_t scratch_floats = b * (2 * size_t(c.d_model) + 2 * q + 2 * kvw + 2 * size_t(c.d_ff)) + size_t(c.n_vocab);
  return kv_bytes + scratch_floats * sizeof(float);
}

}  // namespace kvrt::api
