// The kernel table: every SIMD kernel of kvrt behind one set of function pointers (one table
// per ISA; simd/dispatch.h picks the table of this process).
// Kernels see raw pointers and the layouts of kv/blocks.h and kv/tiles.h only (both dependency-free).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/blocks.h"

namespace kvrt::simd {

// How a row of keys or values is stored for the row kernels: FP32 values, or bare codes without
// scales (the code rows of a channel-axis tile, kv/channel_tile.h) whose value is the code itself:
// int8, or the 4-bit code packed as in kv/blocks.h.
enum class RowCodec : uint8_t { kF32, kRaw8, kRaw4 };
constexpr int kNumRowCodecs = 3;
constexpr int kAccColumnDims = 8;  // the value-tile kernels take head_dim 8 dims at a time
constexpr int kMaxQueries = 8;  // queries per dot/acc call (query heads sharing one kv head)

// Queries quantized once per decode step for the integer dot over key tiles (see
// scalar::quantize_queries): per query and group of G values q ≈ d * c, int8 codes c (the q8
// codec of kv/blocks.h). The minimum term of asymmetric formats uses the exact sum of q.
struct QueryCodes {
  const int8_t* c;      // [n_q][n]
  const float* d;       // [n_q][n / group]
  const float* sum;     // [n_q][n / group]  Σ q over the group
  const int32_t* csum;  // [n_q][n / group]  Σ c over the group
};

// scores[i * scores_stride + t] = q_i · row_t  for i < n_q, t < n_rows.
// Format kernels: `rows` is the key tile holding token 0, tile k at rows + k * row_stride, and q_i
// is taken as qc (quantized), so scores carry q's quantization error (|δq| <= d/2 per value).
struct DotArgs {
  const float* q;        // [n_q][q_stride]
  int n_q;
  size_t q_stride;
  const uint8_t* rows;   // row t at rows + t * row_stride
  size_t row_stride;     // bytes
  int n_rows;
  int n;                 // values per row
  int group;             // values per block (format kernels)
  float* scores;         // [n_q][scores_stride]
  size_t scores_stride;
  const QueryCodes* qc = nullptr;  // format kernels only
};

// acc_i += sum_t p[i * p_stride + t] * row_t  for i < n_q.
// Format kernels: `rows` is the value tile holding token 0 (as DotArgs). Each run of kAccChunk tokens
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

// The kernels of one quantized KV format (kv/blocks.h descriptor F, tiles of kv/tiles.h).
struct FormatKernels {
  void (*dot)(const DotArgs&);                                 // q·k over key tiles
  void (*acc)(const AccArgs&);                                 // p·V over value tiles
  void (*quantize)(const float* x, int n, int group, uint8_t* row);  // a row of blocks
  // [kv::TileRole]: the 16 tokens of a tile as FP32 rows, x [16][n].
  void (*dequantize_tile[2])(const uint8_t* tile, int n, int group, float* x);
};

struct Kernels {
  const char* isa;
  void (*dot[kNumRowCodecs])(const DotArgs&);    // rows of any RowCodec
  void (*acc)(const AccArgs&);                   // FP32 rows
  FormatKernels format[kv::kNumFormats];         // slot = kv::Format; the f32 slot is empty
  float (*exp_sum)(float* x, int n, float max);  // x = exp(x - max) in place; returns the sum
  void (*hadamard)(float* x, int n);             // orthonormal fast Walsh–Hadamard, n power of two
  void (*gemm_qk)(const GemmArgs&);
  void (*gemm_pv)(const GemmArgs&);
};

const char* isa_name();  // ISA of this process's table, e.g. "avx512" (see simd/dispatch.h)

}  // namespace kvrt::simd
