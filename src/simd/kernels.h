// The kernel table: every SIMD kernel of kvrt behind one set of function pointers (one table
// per ISA; simd/dispatch.h picks the table of this process).
// Kernels see raw pointers and the block layouts of kv/blocks.h only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt::simd {

// How keys or values are stored. kF32: FP32 rows. kQ8 / kQ4: token-axis tiles of 16 positions
// (kv/tiles.h; key tiles for dot, value tiles for acc). kRaw8 / kRaw4: rows of bare codes without
// scales (the rows of a channel-axis tile); their value is the code itself (int8, or the nibble).
enum class Codec : uint8_t { kF32, kQ8, kQ4, kRaw8, kRaw4 };
constexpr int kNumCodecs = 5;
constexpr int kMaxQueries = 8;  // queries per dot/acc call (query heads sharing one kv head)

// Queries quantized once per decode step for the integer dot over key tiles (see
// scalar::quantize_queries): per query and group of G values q ≈ d * c, int8 codes c (the q8
// codec of kv/blocks.h). The q4 minimum term uses the exact sum of q.
struct QueryCodes {
  const int8_t* c;      // [n_q][n]
  const float* d;       // [n_q][n / group]
  const float* sum;     // [n_q][n / group]  Σ q over the group
  const int32_t* csum;  // [n_q][n / group]  Σ c over the group
};

// scores[i * scores_stride + t] = q_i · row_t  for i < n_q, t < n_rows.
// kQ8 / kQ4: `rows` is the key tile holding token 0, tile k at rows + k * row_stride, and q_i is
// taken as qc (quantized), so scores carry q's quantization error (|δq| <= d/2 per value).
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
  const QueryCodes* qc = nullptr;  // kQ8 / kQ4 only
};

// acc_i += sum_t p[i * p_stride + t] * row_t  for i < n_q.
// kQ8 / kQ4: `rows` is the value tile holding token 0 (as DotArgs). Each run of kAccChunk tokens
// folds p into the value scales, w = p * d, and rounds w to int16 on a scale of
// max|p| * max d / 32767 over the run (relative error <= 2^-16 of that product per weight).
constexpr int kAccChunk = 64;
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
  // [role: key, value][q4]: the 16 tokens of a tile as FP32 rows, x [16][n].
  void (*dequantize_tile[2][2])(const uint8_t* tile, int n, int group, float* x);
  float (*exp_sum)(float* x, int n, float max);  // x = exp(x - max) in place; returns the sum
  void (*hadamard)(float* x, int n);             // orthonormal fast Walsh–Hadamard, n power of two
  void (*gemm_qk)(const GemmArgs&);
  void (*gemm_pv)(const GemmArgs&);
};

const char* isa_name();  // ISA of this process's table, e.g. "avx512" (see simd/dispatch.h)

}  // namespace kvrt::simd
