// The kernel table: every SIMD kernel of kvrt behind one set of function pointers (one table
// per ISA; simd/dispatch.h picks the table of this process).
// Kernels see raw pointers and the block layouts of kv/blocks.h only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt::simd {

// How a row of n values is stored. kRaw8 / kRaw4 are bare codes without scales (the rows of a
// channel-axis tile); their value is the code itself (int8, or the unsigned nibble).
enum class Codec : uint8_t { kF32, kQ8, kQ4, kRaw8, kRaw4 };
constexpr int kNumCodecs = 5;
constexpr int kMaxQueries = 8;  // queries per dot/acc call (query heads sharing one kv head)

// scores[i * scores_stride + t] = q_i · row_t  for i < n_q, t < n_rows.
struct DotArgs {
  const float* q;        // [n_q][q_stride]
  int n_q;
  size_t q_stride;
  const uint8_t* rows;   // row t at rows + t * row_stride
  size_t row_stride;     // bytes
  int n_rows;
  int n;                 // values per row
  int group;             // values per block (q8, q4)
  float* scores;         // [n_q][scores_stride]
  size_t scores_stride;
};

// acc_i += sum_t p[i * p_stride + t] * row_t  for i < n_q.
struct AccArgs {
  const float* p;        // [n_q][p_stride]
  int n_q;
  size_t p_stride;
  const uint8_t* rows;
  size_t row_stride;
  int n_rows;
  int n;
  int group;
  float* acc;            // [n_q][acc_stride]
  size_t acc_stride;
};

// Prefill tiles (rows padded to kGemmRows, columns to kGemmCols with zeros by the caller):
//   qk: s[r][j] = sum_d q[r][d] * kt[d][j]           q [n_r][n_d], kt [n_d][n_j], s [n_r][n_j]
//   pv: o[r][d] += sum_j p[r][j] * v[j][d]           p [n_r][n_j], v [n_j][n_d], o [n_r][n_d]
struct GemmArgs {
  const float* a;
  const float* b;
  float* c;
  int n_r, n_d, n_j;
};
constexpr int kGemmRows = 4;
constexpr int kGemmCols = 32;

struct Kernels {
  const char* isa;
  void (*dot[kNumCodecs])(const DotArgs&);
  void (*acc[3])(const AccArgs&);                                   // kF32, kQ8, kQ4
  void (*quantize[3])(const float* x, int n, int group, uint8_t* row);  // [1] q8, [2] q4
  void (*dequantize[kNumCodecs])(const uint8_t* row, int n, int group, float* x);
  float (*exp_sum)(float* x, int n, float max);  // x = exp(x - max) in place; returns the sum
  void (*hadamard)(float* x, int n);             // orthonormal fast Walsh–Hadamard, n power of two
  void (*gemm_qk)(const GemmArgs&);
  void (*gemm_pv)(const GemmArgs&);
};

const char* isa_name();  // ISA of this process's table, e.g. "avx512" (see simd/dispatch.h)

}  // namespace kvrt::simd
