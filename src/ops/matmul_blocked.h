// kvrt's own GEMM (matmul_blocked.cc): decode-sized products in every build, everything in builds
// without oneDNN. It drives the register tiles of the dispatch table (simd/kernels.h, slot
// matmul): a tile computes an mr x nr block of y = x · Wᵀ as full-length dot products, so W is
// read in its stored row-major layout and needs no packing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "ops/matmul.h"
#include "simd/kernels.h"

namespace kvrt::ops {

// y[m][n_out] = x[m][n_in] · Wᵀ for every computable weight type, the pool's threads claiming
// blocks of W's rows (ops/row_items.h).
class BlockedMatmul {
 public:
  explicit BlockedMatmul(ThreadPool& pool);
  void run(const float* x, int64_t m, const WeightMatrix& w, float* y);
  const char* name() const { return name_.c_str(); }  // "kvrt-blocked:<isa of the tiles>"
  // The widening scratch of products over W rows of up to n_in values other than F32, allocated
  // now.
  void reserve(int64_t n_in);
  static size_t scratch_floats(int n_threads, int64_t n_in);
  size_t scratch_floats_allocated() const;

 private:
  // Columns [b0 * cols, b1 * cols) of y for all m rows; `widened` is the thread's [cols][n_in].
  void columns(const float* x, int64_t m, const WeightMatrix& w, float* y, int64_t b0, int64_t b1,
               float* widened) const;

  ThreadPool* pool_;
  const simd::Kernels* kernels_;
  std::string name_;
  std::vector<std::vector<float>> scratch_;  // per thread: [cols][n_in] widened W rows
};

}  // namespace kvrt::ops
