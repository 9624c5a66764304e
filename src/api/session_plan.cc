#include "api/session_plan.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "kv/blocks.h"

namespace kvrt::api {
namespace {

// Packed bytes of one layer of one side (keys or values) for n_ctx positions.
size_t side_layer_bytes(kv::Format format, bool per_channel, int group, const kv::CacheShape& s) {
  const size_t heads = size_t(s.n_kv_heads);
  if (format == kv::Format::kF32) return sizeof(float) * size_t(s.head_dim) * heads * size_t(s.n_ctx);
  const size_t block = format == kv::Format::kQ8 ? kv::q8_block_bytes(group) : kv::q4_block_bytes(group);
  if (per_channel) {
    // Tiles of `group` tokens: per channel one block of `group` codes.
    const size_t n_tiles = (size_t(s.n_ctx) + size_t(group) - 1) / size_t(group);
    return n_tiles * heads * size_t(s.head_dim) * block;
  }
  const size_t n_groups = size_t(s.head_dim) / size_t(group);
  return n_groups * block * heads * size_t(s.n_ctx);
}

int resolve_group(const kv::KvConfig& kv, int head_dim) {
  const int g = kv.group_size > 0 ? kv.group_size : std::min(32, head_dim);
  const bool pow2 = (g & (g - 1)) == 0;
  if (!kv.is_f32() && (g < 8 || g > 128 || !pow2 || head_dim % g != 0))
    throw Error("group size " + std::to_string(g) + " must be a power of two in 8..128 dividing head_dim " +
                    std::to_string(head_dim),
                ErrorKind::kUsage);
  return g;
}

}  // namespace

int resolved_n_ctx(const model::ModelConfig& config, int n_ctx) {
  if (n_ctx < 0) throw Error("context length must be positive", ErrorKind::kUsage);
  return n_ctx == 0 ? config.n_ctx_train : n_ctx;
}

size_t planned_session_bytes(const model::ModelConfig& c, const model::SessionOptions& o) {
  const int n_ctx = resolved_n_ctx(c, o.n_ctx);
  const kv::CacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim, n_ctx};
  const int group = resolve_group(o.kv, c.head_dim);
  const bool channel = o.kv.k_axis == kv::KeyAxis::kChannel;
  size_t kv_bytes = side_layer_bytes(o.kv.k_format, channel, group, shape) +
                    side_layer_bytes(o.kv.v_format, false, group, shape);
  const size_t ring_floats = size_t(o.kv.residual) * size_t(c.n_kv_heads) * size_t(c.head_dim);
  const int n_sides_quantized = int(o.kv.k_format != kv::Format::kF32) + int(o.kv.v_format != kv::Format::kF32);
  kv_bytes += size_t(n_sides_quantized) * ring_floats * sizeof(float);
  kv_bytes *= size_t(c.n_layers);

  const size_t b = size_t(std::clamp(o.n_batch, 1, n_ctx));
  const size_t q = size_t(c.n_heads) * size_t(c.head_dim);
  const size_t kvw = size_t(c.n_kv_heads) * size_t(c.head_dim);
  const size_t scratch_floats = b * (2 * size_t(c.d_model) + 2 * q + 2 * kvw + 2 * size_t(c.d_ff)) + size_t(c.n_vocab);
  return kv_bytes + scratch_floats * sizeof(float);
}

}  // namespace kvrt::api
