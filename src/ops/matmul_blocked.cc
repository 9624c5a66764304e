// kvrt's own GEMM, used instead of oneDNN when the build has none (-Ddnnl=disabled, and the
// aarch64 build). y = x · W^T with W [n_out][n_in] as stored: every output is a dot product of
// two contiguous rows, computed by register tiles of mr x nr outputs (matmul_blocked.h).
//
// Blocking: the pool's threads claim items of contiguous columns of y (rows of W, ops/row_items.h),
// so at m = 1 W is streamed exactly once. Rows of x are taken kRowBlockBytes at a time so
// the block stays in L2 while every W tile of the thread passes over it; a W tile (nr rows) is
// reused by all row tiles of the block. F16 weights (decode-sized products have their own kernel,
// matmul_packed.cc) run through f16 tiles, which widen W in registers (the same sums as the f32
// tiles on the widened rows, bit for bit), and the next tile's rows are read ahead: widened into
// scratch without read-ahead, F16 products streamed W far below the rate of a plain read.
// Other weights are widened one W tile at a time into a per-thread scratch (L1-resident) by the
// weight type's to_float kernel, then run through the f32 tiles. Either way W is read from memory
// once, in its stored size.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "ops/matmul_blocked.h"
#include "ops/row_items.h"
#include "simd/dispatch.h"

namespace kvrt::ops {

namespace {

constexpr int64_t kRowBlockBytes = 512 * 1024;  // x rows per block: about a quarter of L2

}  // namespace

BlockedMatmul::BlockedMatmul(ThreadPool& pool)
    : pool_(&pool),
      kernels_(&simd::kernels()),
      name_(std::string("kvrt-blocked:") + kernels_->matmul.isa),
      scratch_(size_t(pool.n_threads())) {}

void BlockedMatmul::columns(const float* x, int64_t m, const WeightMatrix& w, float* y, int64_t b0,
                            int64_t b1, float* widened) const {
  const simd::MatmulTiles& tiles = kernels_->matmul;
  const int mr = tiles.rows, nr = tiles.cols;
  const int64_t n_in = w.n_in, n_out = w.n_out;
  const size_t row_bytes = w.row_bytes();
  const int64_t row_block = std::max<int64_t>(mr, kRowBlockBytes / (4 * n_in) / mr * mr);
  const auto to_float = w.type == simd::WeightType::kF32
                            ? nullptr
                            : kernels_->weight[simd::weight_index(w.type)].to_float;
  for (int64_t i0 = 0; i0 < m; i0 += row_block) {
    const int64_t i1 = std::min(m, i0 + row_block);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t j = b * nr;
      const int nr_here = int(std::min<int64_t>(nr, n_out - j));
      // x rows [i0, i1) · W rows j.. (w_rows); read_ahead: the next tile's rows (this thread's,
      // whole) are prefetched as the first row tile runs.
      const auto row_tiles = [&](const auto* w_rows, const auto& fn, bool read_ahead) {
        const auto* next =
            read_ahead && b + 1 < b1 && (b + 2) * nr <= n_out ? w_rows + nr * n_in : nullptr;
        for (int64_t i = i0; i < i1; i += mr) {
          const int mr_here = int(std::min<int64_t>(mr, i1 - i));
          fn[mr_here - 1][nr_here - 1]({.x = x + i * n_in,
                                        .x_stride = size_t(n_in),
                                        .w = w_rows,
                                        .w_stride = size_t(n_in),
                                        .y = y + i * n_out + j,
                                        .y_stride = size_t(n_out),
                                        .n_in = n_in,
                                        .next = i == i0 ? next : nullptr});
        }
      };
      if (w.type == simd::WeightType::kF16) {  // read ahead; F32 gains nothing from it
        row_tiles(static_cast<const uint16_t*>(w.data) + j * n_in, tiles.f16, true);
      } else if (to_float) {
        to_float(static_cast<const uint8_t*>(w.data) + size_t(j) * row_bytes, nr_here * n_in,
                 widened);
        row_tiles(static_cast<const float*>(widened), tiles.fn, false);
      } else {
        row_tiles(static_cast<const float*>(w.data) + j * n_in, tiles.fn, false);
      }
    }
  }
}

size_t BlockedMatmul::scratch_floats(int n_threads, int64_t n_in) {
  return size_t(std::max(1, n_threads)) * size_t(simd::kernels().matmul.cols) * size_t(n_in);
}

size_t BlockedMatmul::scratch_floats_allocated() const {
  size_t n = 0;
  for (const auto& s : scratch_) n += s.size();
  return n;
}

void BlockedMatmul::reserve(int64_t n_in) {
  for (auto& s : scratch_) s.resize(std::max(s.size(), size_t(kernels_->matmul.cols * n_in)));
}

void BlockedMatmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  if (m == 0 || w.n_out == 0) return;
  const int64_t n_blocks = (w.n_out + kernels_->matmul.cols - 1) / kernels_->matmul.cols;
  if (w.type != simd::WeightType::kF32 && w.type != simd::WeightType::kF16) reserve(w.n_in);
  const RowItems items(w, m, n_blocks, pool_->n_threads());
  pool_->run(items.n_items, [&](int64_t i, int t) {
    columns(x, m, w, y, items.first(i), items.first(i + 1), scratch_[size_t(t)].data());
  });
}

}  // namespace kvrt::ops
