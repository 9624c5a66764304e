// Blocked GEMM tile kernels for avx512 (compiled with this ISA's flags only).
#include "ops/matmul_blocked_body.h"

namespace kvrt::ops::avx512 {

// 32 registers: 16 accumulators plus the loaded rows.
const TileKernels& tile_kernels() {
  static constexpr TileKernels kTable = blocked_tile_table<xsimd::avx512f, 4, 4>("avx512");
  return kTable;
}

}  // namespace kvrt::ops::avx512
