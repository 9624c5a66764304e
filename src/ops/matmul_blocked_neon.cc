// Blocked GEMM tile kernels for neon (compiled with this ISA's flags only).
#include "ops/matmul_blocked_body.h"

namespace kvrt::ops::neon {

// 32 registers: 16 accumulators plus the loaded rows.
const TileKernels& tile_kernels() {
  static constexpr TileKernels kTable = blocked_tile_table<xsimd::neon64, 4, 4>("neon");
  return kTable;
}

}  // namespace kvrt::ops::neon
