#include "ops/matmul_packed.h"

#include <algorithm>

#include "ops/row_items.h"
#include "simd/dispatch.h"

namespace kvrt::ops {
namespace {

// Bytes of one row of n_in values in the activation format of type t (0: x itself, F32, or a
// row not of whole blocks) and of its decode kernel's layout (0: none).
struct RowBytes {
  size_t act_row = 0;
  size_t lay_row = 0;
};

RowBytes row_bytes(const simd::Kernels& k, simd::WeightType t, int64_t n_in) {
  const simd::WeightTypeTraits& act = simd::weight_type_traits(simd::weight_type_traits(t).act);
  const simd::DecodeKernel& decode = k.weight[simd::weight_index(t)].decode;
  if (act.type == simd::WeightType::kF32 || n_in % act.block != 0) return {};
  return {size_t(act.row_bytes(n_in)), decode.lay ? size_t(decode.lay_bytes(n_in)) : 0};
}

// The largest of them over the types that have a decode kernel.
RowBytes max_row_bytes(const simd::Kernels& k, int64_t n_in) {
  RowBytes bytes;
  for (int t = 0; t < simd::kNumWeightTypes; ++t) {
    const simd::WeightTypeTraits* row = simd::find_weight_type(uint32_t(t));
    if (row == nullptr || !k.weight[t].decode) continue;
    const RowBytes r = row_bytes(k, row->type, n_in);
    bytes.act_row = std::max(bytes.act_row, r.act_row);
    bytes.lay_row = std::max(bytes.lay_row, r.lay_row);
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
  const RowBytes bytes = max_row_bytes(simd::kernels(), n_in);
  return size_t(m) * (bytes.act_row + bytes.lay_row);
}

void PackedDecode::reserve(int64_t m, int64_t n_in) {
  const RowBytes bytes = max_row_bytes(*kernels_, n_in);
  grow(size_t(m) * bytes.act_row, size_t(m) * bytes.lay_row);
}

void PackedDecode::grow(size_t act_bytes, size_t lay_bytes) {
  act_.resize(std::max(act_.size(), act_bytes));
  lay_.resize(std::max(lay_.size(), lay_bytes / sizeof(Line)));
}

void PackedDecode::run(const float* x, int64_t m, std::span<const Product> group) {
  if (m == 0) return;
  const WeightMatrix& w0 = *group[0].w;
  const simd::WeightTypeTraits& act =
      simd::weight_type_traits(simd::weight_type_traits(w0.type).act);
  const simd::DecodeKernel& decode0 = kernels_->weight[simd::weight_index(w0.type)].decode;
  for (const Product& p : group) {
    const simd::DecodeKernel& d = kernels_->weight[simd::weight_index(p.w->type)].decode;
    if (simd::weight_type_traits(p.w->type).act != act.type || d.lay != decode0.lay) {
      for (const Product& one : group) run(x, m, std::span(&one, 1));
      return;
    }
  }
  size_t act_stride = size_t(act.row_bytes(w0.n_in));
  // F32 activations (F16 W) are x's rows as they are; the others are quantized into act_, then
  // laid out into lay_ where the kernel has a layout.
  const uint8_t* act_rows = reinterpret_cast<const uint8_t*>(x);
  if (act.type != simd::WeightType::kF32) {
    const RowBytes bytes = row_bytes(*kernels_, w0.type, w0.n_in);
    grow(size_t(m) * bytes.act_row, size_t(m) * bytes.lay_row);
    const auto from_float = kernels_->weight[simd::weight_index(act.type)].from_float;
    for (int64_t i = 0; i < m; ++i)
      from_float(x + i * w0.n_in, w0.n_in, act_.data() + size_t(i) * act_stride);
    act_rows = act_.data();
    if (decode0.lay) {
      const size_t lay_stride = bytes.lay_row;
      uint8_t* lay = lay_.data()->bytes;
      for (int64_t i = 0; i < m; ++i)
        decode0.lay(act_rows + size_t(i) * act_stride, w0.n_in, lay + size_t(i) * lay_stride);
      act_rows = lay;
      act_stride = lay_stride;
    }
  }
  std::array<RowItems, Matmul::kMaxGroup> rows;  // [product]
  GroupItems items;
  for (size_t p = 0; p < group.size(); ++p) {
    rows[p] = RowItems(*group[p].w, m, group[p].w->n_out, pool_->n_threads());
    items.add(rows[p].n_items);
  }
  pool_->run(items.total(), [&](int64_t item, int) {
    const size_t p = items.product(item);
    const WeightMatrix& w = *group[p].w;
    const int64_t i = item - items.first[p], j0 = rows[p].first(i), j1 = rows[p].first(i + 1);
    kernels_->weight[simd::weight_index(w.type)].decode.run({.w = w.row(j0),
                                                             .w_stride = w.row_bytes(),
                                                             .n_rows = int(j1 - j0),
                                                             .act = act_rows,
                                                             .act_stride = act_stride,
                                                             .m = int(m),
                                                             .n_in = w.n_in,
                                                             .y = group[p].y + j0,
                                                             .y_stride = size_t(w.n_out)});
  });
}

}  // namespace kvrt::ops
