// kvrt's own GEMM, used instead of oneDNN when the build has none (-Ddnnl=disabled, and the
// aarch64 build). y = x · W^T with W [n_out][n_in] as stored: every output is a dot product of
// two contiguous rows, computed by register tiles of mr x nr outputs (matmul_blocked.h).
//
// Blocking: threads split the columns of y (rows of W) into contiguous ranges, so at m = 1 each
// thread streams its own part of W exactly once. Rows of x are taken kRowBlockBytes at a time so
// the block stays in L2 while every W tile of the thread passes over it; a W tile (nr rows) is
// reused by all row tiles of the block. f16 and bf16 weights are widened one W tile at a time
// into a per-thread scratch (L1-resident), then run through the same f32 kernels: W is read from
// memory once, in its stored size.
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "ops/matmul.h"
#include "ops/matmul_blocked.h"

namespace kvrt::ops {

namespace scalar {
namespace {

void widen_f16(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = f16_to_f32(src[k]);
}

void widen_bf16(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = bf16_to_f32(src[k]);
}

template <int MR, int NR>
void tile(const TileArgs& a) {
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < a.n_in; ++k) sum += a.x[i * a.x_stride + k] * a.w[j * a.w_stride + k];
      a.y[i * a.y_stride + j] = sum;
    }
  }
}

}  // namespace

const TileKernels& tile_kernels() {
  static constexpr TileKernels kTable{"scalar",
                                      4,
                                      4,
                                      {{&tile<1, 1>, &tile<1, 2>, &tile<1, 3>, &tile<1, 4>},
                                       {&tile<2, 1>, &tile<2, 2>, &tile<2, 3>, &tile<2, 4>},
                                       {&tile<3, 1>, &tile<3, 2>, &tile<3, 3>, &tile<3, 4>},
                                       {&tile<4, 1>, &tile<4, 2>, &tile<4, 3>, &tile<4, 4>}},
                                      &widen_f16,
                                      &widen_bf16};
  return kTable;
}

}  // namespace scalar

const TileKernels& tile_kernels_for(simd::Isa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case simd::Isa::kAvx512: return avx512::tile_kernels();
    case simd::Isa::kAvx2: return avx2::tile_kernels();
#elif defined(__aarch64__)
    case simd::Isa::kNeon: return neon::tile_kernels();
#endif
    default: return scalar::tile_kernels();
  }
}

namespace {

constexpr int64_t kRowBlockBytes = 512 * 1024;  // x rows per block: about a quarter of L2
constexpr int64_t kMinParallelFlops = 1 << 16;  // below this a parallel region costs more than it saves

}  // namespace

BlockedMatmul::BlockedMatmul(int n_threads)
    : n_threads_(std::max(1, n_threads)),
      tiles_(&tile_kernels_for(simd::parse_isa(simd::isa_name()))),  // as KVRT_ISA chose
      name_(std::string("kvrt-blocked:") + tiles_->name),
      scratch_(size_t(n_threads_)) {}

void BlockedMatmul::columns(const float* x, int64_t m, const WeightMatrix& w, float* y, int64_t b0,
                            int64_t b1, float* widened) const {
  const int mr = tiles_->rows, nr = tiles_->cols;
  const int64_t n_in = w.n_in, n_out = w.n_out;
  const int64_t row_block = std::max<int64_t>(mr, kRowBlockBytes / (4 * n_in) / mr * mr);
  const WidenFn widen = w.type == WeightType::kF16    ? tiles_->widen_f16
                        : w.type == WeightType::kBF16 ? tiles_->widen_bf16
                                                      : nullptr;
  for (int64_t i0 = 0; i0 < m; i0 += row_block) {
    const int64_t i1 = std::min(m, i0 + row_block);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t j = b * nr;
      const int nr_here = int(std::min<int64_t>(nr, n_out - j));
      const float* w_rows = static_cast<const float*>(w.data) + j * n_in;
      if (widen) {
        widen(static_cast<const uint16_t*>(w.data) + j * n_in, nr_here * n_in, widened);
        w_rows = widened;
      }
      for (int64_t i = i0; i < i1; i += mr) {
        const int mr_here = int(std::min<int64_t>(mr, i1 - i));
        const TileArgs args{x + i * n_in, size_t(n_in), w_rows, size_t(n_in),
                            y + i * n_out + j, size_t(n_out), n_in};
        tiles_->fn[mr_here - 1][nr_here - 1](args);
      }
    }
  }
}

void BlockedMatmul::run(const float* x, int64_t m, const WeightMatrix& w, float* y) {
  if (m == 0 || w.n_out == 0) return;
  const int64_t n_blocks = (w.n_out + tiles_->cols - 1) / tiles_->cols;
  if (w.type != WeightType::kF32) {
    for (auto& s : scratch_) s.resize(std::max(s.size(), size_t(tiles_->cols * w.n_in)));
  }
  const bool parallel = 2 * m * w.n_out * w.n_in >= kMinParallelFlops;
  const int n_threads = int(std::min<int64_t>(parallel ? n_threads_ : 1, n_blocks));
#pragma omp parallel num_threads(n_threads) if (n_threads > 1)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    columns(x, m, w, y, n_blocks * t / nt, n_blocks * (t + 1) / nt, scratch_[size_t(t)].data());
  }
}

}  // namespace kvrt::ops
