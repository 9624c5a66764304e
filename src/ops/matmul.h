// Matrix products for the forward pass. Decode-sized products (a few rows of x) run on kvrt's
// blocked GEMM, which reads W once in its stored type (f16 and bf16 widened in registers'
// reach); prefill-sized products go to oneDNN (matmul_dnnl.cc, the only door to it), with f16
// and bf16 weights widened a block of rows at a time. Builds without oneDNN use the blocked
// GEMM for everything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace kvrt::ops {

// Element type of a weight matrix as stored for compute.
enum class WeightType { kF32, kF16, kBF16 };

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
  // The kernels used so far, e.g. "gemm brg:avx512_core, gemv kvrt-blocked:avx512"; the
  // pointer stays valid until the next run().
  const char* implementation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The matrix-product backends of this build on this CPU, for reports: "oneDNN 2.6.3 (prefill),
// kvrt-blocked:avx512 (decode)", or "kvrt-blocked:neon (prefill and decode; built without oneDNN)".
std::string matmul_backends();

}  // namespace kvrt::ops
