#include "ops/matmul_packed.h"

#include <omp.h>

#include <algorithm>

#include "simd/dispatch.h"

namespace kvrt::ops {
namespace {

constexpr int64_t kMinParallelFlops = 1 << 16;  // below this a parallel region costs more than it saves

// Bytes of one row of n_in values in the activation format of every type that has a decode
// kernel, the largest of them.
size_t act_row_bytes(const simd::Kernels& k, int64_t n_in) {
  size_t bytes = 0;
  for (int t = 0; t < simd::kNumWeightTypes; ++t) {
    const simd::WeightTypeTraits* row = simd::find_weight_type(uint32_t(t));
    if (row == nullptr || k.weight[t].decode == nullptr) continue;
    const simd::WeightTypeTraits& act = simd::weight_type_traits(row->act);
    if (n_in % act.block == 0) bytes = std::max(bytes, size_t(act.row_bytes(n_in)));
  }
  return bytes;
}

}  // namespace

PackedDecode::PackedDecode(int n_threads)
    : n_threads_(std::max(1, n_threads)),
      kernels_(&simd::kernels()),
      name_(std::string("kvrt-packed:") + kernels_->isa) {}

bool PackedDecode::handles(const WeightMatrix& w) const {
  return kernels_->weight[simd::weight_index(w.type)].decode != nullptr;
}

size_t PackedDecode::scratch_bytes(int64_t m, int64_t n_in) { return size_t(m) * act_row_bytes(simd::kernels(), n_in); }

void PackedDecode::reserve(int64_t m, int64_t n_in) {
  act_.resize(std::max(act_.size(), size_t(m) * act_row_bytes(*kernels_, n_in)));
}

void PackedDecode::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  if (m == 0 || w.n_out == 0) return;
  const simd::WeightTypeTraits& act = simd::weight_type_traits(simd::weight_type_traits(w.type).act);
  const size_t act_stride = size_t(act.row_bytes(w.n_in));
  reserve(m, w.n_in);
  const auto from_float = kernels_->weight[simd::weight_index(act.type)].from_float;
  for (int64_t i = 0; i < m; ++i) from_float(x + i * w.n_in, w.n_in, act_.data() + size_t(i) * act_stride);
  const auto decode = kernels_->weight[simd::weight_index(w.type)].decode;
  const bool parallel = 2 * m * w.n_out * w.n_in >= kMinParallelFlops;
  const int n_threads = int(std::min<int64_t>(parallel ? n_threads_ : 1, w.n_out));
#pragma omp parallel num_threads(n_threads) if (n_threads > 1)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t j0 = w.n_out * t / nt, j1 = w.n_out * (t + 1) / nt;
    decode({.w = w.row(j0),
            .w_stride = w.row_bytes(),
            .n_rows = int(j1 - j0),
            .act = act_.data(),
            .act_stride = act_stride,
            .m = int(m),
            .n_in = w.n_in,
            .y = y + j0,
            .y_stride = size_t(w.n_out)});
  }
}

}  // namespace kvrt::ops
