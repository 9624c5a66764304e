// The lay slots of a decode kernel (simd/kernels.h DecodeKernel) whose activation row of nb
// blocks (Block, kBlockValues values each) is laid out as ceil(nb / kUnitBlocks) Units, the last
// one padded, by lay_row(blocks, nb, units); a row's bytes rounded up to whole 64-byte lines.
#pragma once

#include <cstdint>

#include "simd/kernels.h"

namespace kvrt::simd {

template <class Block, int kBlockValues, class Unit, int kUnitBlocks,
          void (*lay_row)(const Block*, int64_t, Unit*)>
struct Layout {
  static int64_t bytes(int64_t n_in) {
    const int64_t units = (n_in / kBlockValues + kUnitBlocks - 1) / kUnitBlocks;
    return (units * int64_t(sizeof(Unit)) + 63) / 64 * 64;
  }
  static void lay(const uint8_t* act, int64_t n_in, uint8_t* dst) {
    lay_row(reinterpret_cast<const Block*>(act), n_in / kBlockValues, reinterpret_cast<Unit*>(dst));
  }
  // The decode kernel `run`, which reads rows of Units.
  static constexpr DecodeKernel kernel(void (*run)(const DecodeArgs&)) { return {run, bytes, lay}; }
};

}  // namespace kvrt::simd
