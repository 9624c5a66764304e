#include "ops/matmul_packed.h"

#include <algorithm>

#include "ops/row_items.h"
#include "simd/dispatch.h"

namespace kvrt::ops {
namespace {

constexpr size_t kLine = 64;

size_t round_to_lines(int64_t bytes) { return (size_t(bytes) + kLine - 1) / kLine * kLine; }

// Bytes of one row of n_in values in the quantized activation format of every type that has a
// decode kernel, the largest of them (act_row), and of a laid-out row, in whole lines (lay_row).
struct RowBytes {
  size_t act_row = 0;
  size_t lay_row = 0;
};

RowBytes row_bytes(const simd::Kernels& k, int64_t n_in) {
  RowBytes bytes;
  for (int t = 0; t < simd::kNumWeightTypes; ++t) {
    const simd::WeightTypeTraits* row = simd::find_weight_type(uint32_t(t));
    const simd::DecodeKernel& decode = k.weight[t].decode;
    if (row == nullptr || !decode) continue;
    const simd::WeightTypeTraits& act = simd::weight_type_traits(row->act);
    if (act.type == simd::WeightType::kF32) continue;  // x itself (run())
    if (n_in % act.block != 0) continue;
    bytes.act_row = std::max(bytes.act_row, size_t(act.row_bytes(n_in)));
    if (decode.lay) bytes.lay_row = std::max(bytes.lay_row, round_to_lines(decode.lay_bytes(n_in)));
  }
  return bytes;
}

}  // namespace

PackedDecode::PackedDecode(ThreadPool& pool)
    : pool_(&pool),
      kernels_(&simd::kernels()),
      name_(std::string("kvrt-packed:") + kernels_->isa) {}

bool PackedDecode::handles(const WeightMatrix& w) const {
  return bool(kernels_->weight[simd::weight_index(w.type)].decode);
}

size_t PackedDecode::scratch_bytes(int64_t m, int64_t n_in) {
  const RowBytes bytes = row_bytes(simd::kernels(), n_in);
  return size_t(m) * (bytes.act_row + bytes.lay_row);
}

void PackedDecode::reserve(int64_t m, int64_t n_in) {
  const RowBytes bytes = row_bytes(*kernels_, n_in);
  act_.resize(std::max(act_.size(), size_t(m) * bytes.act_row));
  lay_.resize(std::max(lay_.size(), size_t(m) * bytes.lay_row / kLine));
}

void PackedDecode::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  if (m == 0 || w.n_out == 0) return;
  const simd::WeightTypeTraits& act =
      simd::weight_type_traits(simd::weight_type_traits(w.type).act);
  const simd::DecodeKernel& decode = kernels_->weight[simd::weight_index(w.type)].decode;
  size_t act_stride = size_t(act.row_bytes(w.n_in));
  // F32 activations (F16 W) are x's rows as they are; the others are quantized into act_, then
  // laid out into lay_ where the kernel has a layout.
  const uint8_t* act_rows = reinterpret_cast<const uint8_t*>(x);
  if (act.type != simd::WeightType::kF32) {
    reserve(m, w.n_in);
    const auto from_float = kernels_->weight[simd::weight_index(act.type)].from_float;
    for (int64_t i = 0; i < m; ++i)
      from_float(x + i * w.n_in, w.n_in, act_.data() + size_t(i) * act_stride);
    act_rows = act_.data();
    if (decode.lay) {
      const size_t lay_stride = round_to_lines(decode.lay_bytes(w.n_in));
      uint8_t* lay = lay_.data()->bytes;
      for (int64_t i = 0; i < m; ++i)
        decode.lay(act_rows + size_t(i) * act_stride, w.n_in, lay + size_t(i) * lay_stride);
      act_rows = lay;
      act_stride = lay_stride;
    }
  }
  const RowItems items(w, m, w.n_out, pool_->n_threads());
  pool_->run(items.n_items, [&](int64_t i, int) {
    const int64_t j0 = items.first(i), j1 = items.first(i + 1);
    decode.run({.w = w.row(j0),
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
