// Matrix products for the forward pass. Decode-sized products (ops/decode_size.h) on quantized W
// are integer dot products on its packed blocks against x quantized to int8 blocks
// (matmul_packed.h); other decode-sized products run on kvrt's blocked GEMM, which reads W once in
// its stored type; prefill-sized products go to oneDNN
// (matmul_dnnl.cc, the only door to it), with W other than F32 widened a block of rows at a time.
// Builds without oneDNN use the blocked GEMM for everything else. Every kernel comes from the weight
// type's slots of the one dispatch table (simd/kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "simd/weight_types.h"

namespace kvrt::ops {

// A weight matrix W [n_out][n_in] (row-major, each output row contiguous), as in GGUF, in any
// computable weight type (n_in a multiple of the type's block).
struct WeightMatrix {
  const void* data = nullptr;  // [n_out][row_bytes()]
  simd::WeightType type = simd::WeightType::kF32;
  int64_t n_out = 0;
  int64_t n_in = 0;

  size_t row_bytes() const {
    const simd::WeightTypeTraits& t = simd::weight_type_traits(type);
    return size_t(n_in / t.block * t.block_bytes);
  }
  const uint8_t* row(int64_t j) const { return static_cast<const uint8_t*>(data) + size_t(j) * row_bytes(); }
  // Rows [first, first + n) as a matrix of their own (one part of a fused projection).
  WeightMatrix rows(int64_t first, int64_t n) const { return {row(first), type, n, n_in}; }
};

// y[m][n_out] = x[m][n_in] · W^T. Primitives are cached per (shape, type), so calling this for
// every layer of every step creates nothing after the first call with a given m.
class Matmul {
 public:
  explicit Matmul(int n_threads);
  ~Matmul();
  void run(const float* x, int64_t m, const WeightMatrix& w, float* y);
  // Allocates now kvrt's scratch for widening W other than F32 with up to n_in values per row
  // (0: none), so run() allocates none of its own; scratch_bytes gives the same count without
  // allocating. oneDNN's primitives keep their own memory, which neither counts.
  void reserve(int64_t n_in);
  static size_t scratch_bytes(int n_threads, int64_t n_in);
  size_t bytes_allocated() const;  // kvrt's scratch as now allocated
  // The kernels of the last products, e.g. "gemm brg:avx512_core, gemv kvrt-packed:avx512-vnni";
  // the pointer stays valid until the next call.
  const char* implementation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The matrix-product backends of this build on this CPU, for reports: "oneDNN 2.6.3 (prefill),
// kvrt-blocked:avx512 (decode)", or "kvrt-blocked:neon (prefill and decode; built without oneDNN)".
std::string matmul_backends();

}  // namespace kvrt::ops
