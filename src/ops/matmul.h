// Matrix products for the forward pass. Decode-sized products (ops/decode_size.h) on quantized W
// are integer dot products on its packed blocks against x quantized to int8 blocks
// (matmul_packed.h); other decode-sized products run on kvrt's blocked GEMM, which reads W once in
// its stored type; prefill-sized products go to oneDNN
// (matmul_dnnl.cc, the only door to it), with W other than F32 widened a block of rows at a time,
// in f32 or, as a precision setting, in bf16. Builds without oneDNN use the blocked GEMM for
// everything else. Every kernel comes from the weight type's slots of the one dispatch table
// (simd/kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_pool.h"
#include "simd/dispatch.h"
#include "simd/kernels.h"
#include "simd/weights/types.h"

namespace kvrt::ops {

// The arithmetic of prefill-sized products; decode-sized ones never round to bf16 (they run the
// packed integer products or the blocked f32 tiles).
//   f32:  the baseline.
//   bf16: x and W rounded to bfloat16 (nearest, ties to even; relative error <= 2^-8 each), the
//         products summed in f32, through oneDNN on CPUs with AVX512-BF16. It changes
//         the numbers, so it is a setting that `kvrt validate` measures and `kvrt run` gates.
enum class MatmulPrecision : uint8_t { kF32, kBf16 };

const char* matmul_precision_name(MatmulPrecision p);  // "f32", "bf16": CLI, TOML, records
MatmulPrecision parse_matmul_precision(
    std::string_view name);  // else kvrt::Error(kUsage) listing them

// Why a process whose CPU runs the dispatch rungs `runnable` (simd::runnable_isas()), running the
// kernels of rung `isa`, cannot run bf16 products ("" when it can): bf16 needs a CPU that runs the
// avx512-bf16 rung, an AVX-512 rung (KVRT_ISA below it stands for a CPU without AVX-512) and a
// build with oneDNN.
std::string bf16_unavailable(const std::vector<simd::Isa>& runnable, simd::Isa isa);
// Throws kvrt::Error(kUsage) with the reason when this process cannot run products at `p`, also
// when oneDNN offers no native bf16 kernel here (it would emulate bf16, slower than f32).
void require_matmul_precision(MatmulPrecision p);

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
  const uint8_t* row(int64_t j) const {
    return static_cast<const uint8_t*>(data) + size_t(j) * row_bytes();
  }
  // Rows [first, first + n) as a matrix of their own (one part of a fused projection).
  WeightMatrix rows(int64_t first, int64_t n) const { return {row(first), type, n, n_in}; }
};

// One product of a group that shares x (Q, K and V; gate and up): y[m][w->n_out] = x · w->ᵀ.
struct Product {
  const WeightMatrix* w;
  float* y;
};

// Which kernels a call runs:
//   kByCount:   by the number of rows of x (ops/decode_size.h): decode-sized calls on the decode
//               kernels, larger ones on oneDNN (at the Matmul's precision). A session's products.
//   kEachAlone: the decode kernels for any number of rows, so each row of y is what a call with
//               that row alone computes, bit for bit: one token of each of several sessions
//               stepped together (model/lockstep.h).
enum class MatmulRows : uint8_t { kByCount, kEachAlone };

// The products a Matmul will run, for allocating its scratch up front.
struct MatmulPlan {
  int64_t n_rows = 0;  // most rows of x in one call (the prefill chunk; kEachAlone: the sessions)
  int64_t n_in = 0;    // longest W row of any product
  int64_t n_in_widened = 0;  // longest W row stored in a type other than F32 (0: all F32)
};

// y[m][n_out] = x[m][n_in] · W^T. Primitives are cached per (shape, type), so calling this for
// every layer of every step creates nothing after the first call with a given m.
class Matmul {
 public:
  // Throws as require_matmul_precision does when this process cannot run `precision`. Runs on
  // the threads of `pool` (a session's, shared with its attention), or of a pool of n_threads of
  // its own.
  explicit Matmul(int n_threads, MatmulPrecision precision = MatmulPrecision::kF32,
                  MatmulRows rows = MatmulRows::kByCount);
  explicit Matmul(std::shared_ptr<ThreadPool> pool,
                  MatmulPrecision precision = MatmulPrecision::kF32,
                  MatmulRows rows = MatmulRows::kByCount);
  ~Matmul();
  void run(const float* x, int64_t m, const WeightMatrix& w, float* y);
  // The products of one x in one pass of the threads, each y as run() gives it: x is rounded or
  // quantized once and one join ends them all. At most kMaxGroup, every w of the same n_in.
  void run(const float* x, int64_t m, std::span<const Product> group);
  static constexpr size_t kMaxGroup = 3;
  // A gated FFN's first half: gate_y = glu(x · gateᵀ, x · upᵀ) (gate and up of one n_in and n_out;
  // up_y is scratch, left undefined). Prefill products run both for a block of columns, then
  // glu while the block is in cache, and write gate_y's columns only.
  void run_glu(const float* x, int64_t m, const WeightMatrix& gate, const WeightMatrix& up,
               simd::GluKernel glu, float* gate_y, float* up_y);
  MatmulPrecision precision() const;
  int n_threads() const;
  ThreadPool& pool() const;  // its threads, for the other parallel loops of the same caller
  // Allocates now kvrt's scratch for the products of `plan` (W widened or rounded a block of
  // rows at a time, x rounded to bf16), so run() allocates none of its own for them;
  // scratch_bytes gives the same count without allocating (for MatmulRows::kByCount). oneDNN's
  // primitives keep their own memory, which neither counts.
  void reserve(const MatmulPlan& plan);
  static size_t scratch_bytes(int n_threads, MatmulPrecision precision, const MatmulPlan& plan);
  size_t bytes_allocated() const;  // kvrt's scratch as now allocated
  // The kernels of the last products, e.g. "gemm brg:avx512_core, gemv kvrt-packed:avx512-vnni";
  // the pointer stays valid until the next call.
  const char* implementation() const;

 private:
  Matmul(std::shared_ptr<ThreadPool> pool, MatmulPrecision precision, MatmulRows rows,
         int n_threads);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The matrix-product backends of this build on this CPU, for reports: "oneDNN 2.6.3 (prefill),
// kvrt-blocked:avx512 (decode)", or "kvrt-blocked:neon (prefill and decode; built without oneDNN)".
std::string matmul_backends();

}  // namespace kvrt::ops
