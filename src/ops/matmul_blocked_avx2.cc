// Blocked GEMM tile kernels for avx2 (compiled with this ISA's flags only).
#include "ops/matmul_blocked_body.h"

namespace kvrt::ops::avx2 {

// AVX2 has 16 registers: 12 accumulators, 3 rows of x, W from memory operands.
const TileKernels& tile_kernels() {
  static constexpr TileKernels kTable = blocked_tile_table<xsimd::fma3<xsimd::avx2>, 3, 4>("avx2");
  return kTable;
}

}  // namespace kvrt::ops::avx2
