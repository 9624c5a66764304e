// oneDNN GEMM for prefill-sized products, in f32 or bf16 (matmul_dnnl.cc is the only file that
// includes oneDNN). Primitives and memory objects are cached per shape and type.
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
  // The same with x and w in bf16 (bit patterns), summed in f32 by a kernel with native bf16
  // instructions; a shape for which oneDNN offers none is a kvrt::Error(kUsage) naming its choice.
  void run_bf16(const uint16_t* x, int64_t m, const uint16_t* w, int64_t n, int64_t k, float* y,
                int64_t ldy);
  const char* implementation() const;  // oneDNN's name for the kernel that ran last

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The oneDNN library linked at run time, e.g. "oneDNN 2.6.3".
std::string dnnl_library_name();

// The kernel oneDNN picks for a small bf16 product on this CPU, e.g. "brg:avx512_core_bf16", and
// whether it uses native bf16 instructions (AVX512-BF16 or AMX) rather than emulating them.
struct DnnlBf16Kernel {
  std::string name;
  bool native = false;
};
DnnlBf16Kernel dnnl_bf16_kernel();

}  // namespace kvrt::ops
