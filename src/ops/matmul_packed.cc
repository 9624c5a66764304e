#include "ops/matmul_packed.h"

#include <algorithm>

#include "ops/row_items.h"
#include "simd/dispatch.h"

namespace kvrt::ops {
namespace {

// Bytes of one row of n_in values in the quantized activation format of every type that has a
// decode kernel, the largest of them.
size_t act_row_bytes(const simd::Kernels& k, int64_t n_in) {
  size_t bytes = 0;
  for (int t = 0; t < simd::kNumWeightTypes; ++t) {
    const simd::WeightTypeTraits* row = simd::find_weight_type(uint32_t(t));
    if (row == nullptr || k.weight[t].decode == nullptr) continue;
    const simd::WeightTypeTraits& act = simd::weight_type_traits(row->act);
    if (act.type == simd::WeightType::kF32) continue;  // x itself (run())
    if (n_in % act.block == 0) bytes = std::max(bytes, size_t(act.row_bytes(n_in)));
  }
  return bytes;
}

}  // namespace

PackedDecode::PackedDecode(ThreadPool& pool)
    : pool_(&pool),
      kernels_(&simd::kernels()),
      name_(std::string("kvrt-packed:") + kernels_->isa) {}

bool PackedDecode::handles(const WeightMatrix& w) const {
  return kernels_->weight[simd::weight_index(w.type)].decode != nullptr;
}

size_t PackedDecode::scratch_bytes(int64_t m, int64_t n_in) {
  return size_t(m) * act_row_bytes(simd::kernels(), n_in);
}

void PackedDecode::reserve(int64_t m, int64_t n_in) {
  act_.resize(std::max(act_.size(), size_t(m) * act_row_bytes(*kernels_, n_in)));
}

void PackedDecode::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  if (m == 0 || w.n_out == 0) return;
  const simd::WeightTypeTraits& act =
      simd::weight_type_traits(simd::weight_type_traits(w.type).act);
  const size_t act_stride = size_t(act.row_bytes(w.n_in));
  // F32 activations (F16 W) are x's rows as they are; the others are quantized into act_.
  const uint8_t* act_rows = reinterpret_cast<const uint8_t*>(x);
  if (act.type != simd::WeightType::kF32) {
    reserve(m, w.n_in);
    const auto from_float = kernels_->weight[simd::weight_index(act.type)].from_float;
    for (int64_t i = 0; i < m; ++i)
      from_float(x + i * w.n_in, w.n_in, act_.data() + size_t(i) * act_stride);
    act_rows = act_.data();
  }
  const auto decode = kernels_->weight[simd::weight_index(w.type)].decode;
  const RowItems items(w, m, w.n_out, pool_->n_threads());
  pool_->run(items.n_items, [&](int64_t i, int) {
    const int64_t j0 = items.first(i), j1 = items.first(i + 1);
    decode({.w = w.row(j0),
            .w_stride = w.row_bytes(),
            .n_rows = int(j1 - j0),
            .act = act_rows,
            .act_stride = act_stride,
            .m = int(m),
            .n_in = w.n_in,
            .y = y + j0,
            .y_stride = size_t(w.n_out)});
  });
}

}  // namespace kvrt::ops
