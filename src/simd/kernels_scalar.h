// Scalar twins (namespace kvrt::simd::scalar), also the fallback the SIMD tables call for
// shapes their vector width cannot cover (e.g. a row shorter than one vector).
#pragma once

#include "kv/tiles.h"
#include "simd/kernels.h"

namespace kvrt::simd::scalar {

constexpr int kMaxRow = 1024;  // longest row (head_dim) the kernels accept

// Buffers of QueryCodes for n_q queries of n values (see simd/kernels.h).
struct QueryBuffers {
  int8_t* c;     // [n_q][n]
  float* d;      // [n_q][n / group]
  float* sum;    // [n_q][n / group]
  int32_t* csum; // [n_q][n / group]
  QueryCodes view() const { return {c, d, sum, csum}; }
};

void dequantize(Codec codec, const uint8_t* row, int n, float* x);  // row codecs (kF32, kRaw8, kRaw4)
void dequantize_tile(kv::TileRole role, bool q4, const uint8_t* tile, int n, int group, float* x);  // x [16][n]
// q rows [n_q][q_stride] as int8 codes per group with the q8 codec of kv/blocks.h.
void quantize_queries(const float* q, int n_q, size_t q_stride, int n, int group, QueryBuffers& out);
void dot(Codec codec, const DotArgs& a);
void acc(Codec codec, const AccArgs& a);
void q8_quantize(const float* x, int n, int group, uint8_t* row);
void q4_quantize(const float* x, int n, int group, uint8_t* row);
float exp_sum(float* x, int n, float max);
void hadamard(float* x, int n);
void gemm_qk(const GemmArgs& g);
void gemm_pv(const GemmArgs& g);
const Kernels& table();

}  // namespace kvrt::simd::scalar
