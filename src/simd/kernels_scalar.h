// Scalar twins (namespace kvrt::simd::scalar), also the fallback the SIMD tables call for
// shapes their vector width cannot cover (e.g. a row shorter than one vector).
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd::scalar {

constexpr int kMaxRow = 1024;  // longest row (head_dim) the kernels accept

void dequantize(Codec codec, const uint8_t* row, int n, int group, float* x);
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
