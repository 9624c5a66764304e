// oneDNN f32 GEMM for prefill-sized products (matmul_dnnl.cc is the only file that includes
// oneDNN). Primitives and memory objects are cached per shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace kvrt::ops {

class DnnlGemm {
 public:
  explicit DnnlGemm(int n_threads);
  ~DnnlGemm();
  // y[i][j] (row stride ldy) = sum_k x[i][k] * w[j][k]: x [m][k], w [n][k], y [m][ldy].
  void run(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y, int64_t ldy);
  const char* implementation() const;  // oneDNN's name for the kernel that ran last

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The oneDNN library linked at run time, e.g. "oneDNN 2.6.3".
std::string dnnl_library_name();

}  // namespace kvrt::ops
