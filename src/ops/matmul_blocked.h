// kvrt's own GEMM (matmul_blocked.cc): decode-sized products in every build, everything in builds
// without oneDNN. The register-tile kernels it drives come in one table per ISA. A tile computes an mr x nr block of y = x · W^T as full-length dot
// products, so W is read in its stored row-major layout and needs no packing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/matmul.h"

#include "simd/dispatch.h"

namespace kvrt::ops {

constexpr int kMaxTileRows = 4;  // mr: rows of x (and y) per tile
constexpr int kMaxTileCols = 4;  // nr: rows of W (columns of y) per tile

// y[i * y_stride + j] = sum_k x[i * x_stride + k] * w[j * w_stride + k]  for i < mr, j < nr, k < n_in.
struct TileArgs {
  const float* x;  // [mr][x_stride]
  size_t x_stride;
  const float* w;  // [nr][w_stride]
  size_t w_stride;
  float* y;  // [mr][y_stride]
  size_t y_stride;
  int64_t n_in;
};
using TileFn = void (*)(const TileArgs&);
// dst[k] = (float) src[k] for k < n: f16 or bf16 weights widened to f32.
using WidenFn = void (*)(const uint16_t* src, int64_t n, float* dst);

// fn[mr - 1][nr - 1] computes an mr x nr tile; mr <= rows, nr <= cols (the full tile of this ISA).
struct TileKernels {
  const char* name;
  int rows;
  int cols;
  TileFn fn[kMaxTileRows][kMaxTileCols];
  WidenFn widen_f16;
  WidenFn widen_bf16;
};

// The tiles for an ISA of simd::runnable_isas(); the scalar tiles for one without its own.
const TileKernels& tile_kernels_for(simd::Isa isa);

// y[m][n_out] = x[m][n_in] · Wᵀ for f32, f16 and bf16 W, threads splitting the rows of W.
class BlockedMatmul {
 public:
  explicit BlockedMatmul(int n_threads);
  void run(const float* x, int64_t m, const WeightMatrix& w, float* y);
  const char* name() const { return name_.c_str(); }  // "kvrt-blocked:<isa>"
  const TileKernels& tiles() const { return *tiles_; }

 private:
  // Columns [b0 * cols, b1 * cols) of y for all m rows; `widened` is the thread's [cols][n_in].
  void columns(const float* x, int64_t m, const WeightMatrix& w, float* y, int64_t b0, int64_t b1,
               float* widened) const;

  int n_threads_;
  const TileKernels* tiles_;
  std::string name_;
  std::vector<std::vector<float>> scratch_;  // per thread: [cols][n_in] widened W rows
};

namespace scalar {
const TileKernels& tile_kernels();
}
namespace avx2 {
const TileKernels& tile_kernels();
}
namespace avx512 {
const TileKernels& tile_kernels();
}
namespace neon {
const TileKernels& tile_kernels();
}

}  // namespace kvrt::ops
