// Matrix products for the forward pass. The only door to oneDNN (matmul_dnnl.cc); builds
// without oneDNN use kvrt's own blocked GEMM (matmul_blocked.cc) behind the same interface.
#pragma once

#include <cstdint>
#include <memory>

namespace kvrt::ops {

// Element type of a weight matrix as stored for compute.
enum class WeightType { kF32, kBF16 };

// A weight matrix W [n_out][n_in] (row-major, each output row contiguous), as in GGUF.
struct WeightMatrix {
  const void* data = nullptr;  // [n_out][n_in]
  WeightType type = WeightType::kF32;
  int64_t n_out = 0;
  int64_t n_in = 0;
};

// y[m][n_out] = x[m][n_in] · W^T. Primitives are cached per (shape, type), so calling this for
// every layer of every step creates nothing after the first call with a given m.
class Matmul {
 public:
  explicit Matmul(int n_threads);
  ~Matmul();
  void run(const float* x, int64_t m, const WeightMatrix& w, float* y);
  const char* implementation() const;  // which kernel ran last, e.g. "brg:avx512_core"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvrt::ops
