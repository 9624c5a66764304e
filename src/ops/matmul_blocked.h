// kvrt's own GEMM for builds without oneDNN (matmul_blocked.cc): the register-tile kernels it
// drives, one table per ISA. A tile computes an mr x nr block of y = x · W^T as full-length dot
// products, so W is read in its stored row-major layout and needs no packing.
#pragma once

#include <cstddef>
#include <cstdint>

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

// fn[mr - 1][nr - 1] computes an mr x nr tile; mr <= rows, nr <= cols (the full tile of this ISA).
struct TileKernels {
  const char* name;
  int rows;
  int cols;
  TileFn fn[kMaxTileRows][kMaxTileCols];
};

// The tiles for an ISA of simd::runnable_isas(); the scalar tiles for one without its own.
const TileKernels& tile_kernels_for(simd::Isa isa);

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
