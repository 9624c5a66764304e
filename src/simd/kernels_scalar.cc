// Scalar twins of every kernel: the oracle of the kernel tests and the fallback on any CPU.
#include "simd/kernels_scalar.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kv/blocks.h"

namespace kvrt::simd::scalar {

void dequantize(Codec codec, const uint8_t* row, int n, int group, float* x) {
  switch (codec) {
    case Codec::kF32: std::memcpy(x, row, sizeof(float) * n); return;
    case Codec::kQ8:
      for (int g = 0; g < n / group; ++g) kv::q8_dequantize_group(row + g * kv::q8_block_bytes(group), group, x + g * group);
      return;
    case Codec::kQ4:
      for (int g = 0; g < n / group; ++g) kv::q4_dequantize_group(row + g * kv::q4_block_bytes(group), group, x + g * group);
      return;
    case Codec::kRaw8:
      for (int i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int8_t>(row[i]));
      return;
    case Codec::kRaw4:
      for (int i = 0; i < n / 2; ++i) {
        x[i] = static_cast<float>(row[i] & 15);
        x[i + n / 2] = static_cast<float>(row[i] >> 4);
      }
      return;
  }
}

void dot(Codec codec, const DotArgs& a) {
  float x[kMaxRow];  // one dequantized row
  KVRT_ASSERT(a.n <= kMaxRow);
  for (int t = 0; t < a.n_rows; ++t) {
    dequantize(codec, a.rows + t * a.row_stride, a.n, a.group, x);
    for (int i = 0; i < a.n_q; ++i) {
      const float* q = a.q + i * a.q_stride;
      float s = 0;
      for (int d = 0; d < a.n; ++d) s += q[d] * x[d];
      a.scores[i * a.scores_stride + t] = s;
    }
  }
}

void acc(Codec codec, const AccArgs& a) {
  float x[kMaxRow];
  KVRT_ASSERT(a.n <= kMaxRow);
  for (int t = 0; t < a.n_rows; ++t) {
    dequantize(codec, a.rows + t * a.row_stride, a.n, a.group, x);
    for (int i = 0; i < a.n_q; ++i) {
      const float p = a.p[i * a.p_stride + t];
      float* o = a.acc + i * a.acc_stride;
      for (int d = 0; d < a.n; ++d) o[d] += p * x[d];
    }
  }
}

void q8_quantize(const float* x, int n, int group, uint8_t* row) {
  for (int g = 0; g < n / group; ++g) kv::q8_quantize_group(x + g * group, group, row + g * kv::q8_block_bytes(group));
}

void q4_quantize(const float* x, int n, int group, uint8_t* row) {
  for (int g = 0; g < n / group; ++g) kv::q4_quantize_group(x + g * group, group, row + g * kv::q4_block_bytes(group));
}

float exp_sum(float* x, int n, float max) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - max));
  return sum;
}

void hadamard(float* x, int n) {
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float u = x[j], v = x[j + h];
        x[j] = u + v;
        x[j + h] = u - v;
      }
    }
  }
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= s;
}

void gemm_qk(const GemmArgs& g) {
  for (int r = 0; r < g.n_r; ++r) {
    for (int j = 0; j < g.n_j; ++j) {
      float s = 0;
      for (int d = 0; d < g.n_d; ++d) s += g.a[r * g.n_d + d] * g.b[d * g.n_j + j];
      g.c[r * g.n_j + j] = s;
    }
  }
}

void gemm_pv(const GemmArgs& g) {
  for (int r = 0; r < g.n_r; ++r) {
    for (int j = 0; j < g.n_j; ++j) {
      const float p = g.a[r * g.n_j + j];
      for (int d = 0; d < g.n_d; ++d) g.c[r * g.n_d + d] += p * g.b[j * g.n_d + d];
    }
  }
}

namespace {

template <Codec C> void dot_of(const DotArgs& a) { dot(C, a); }
template <Codec C> void acc_of(const AccArgs& a) { acc(C, a); }
template <Codec C> void dequantize_of(const uint8_t* row, int n, int group, float* x) { dequantize(C, row, n, group, x); }

}  // namespace

const Kernels& table() {
  static const Kernels k = {
      "scalar",
      {dot_of<Codec::kF32>, dot_of<Codec::kQ8>, dot_of<Codec::kQ4>, dot_of<Codec::kRaw8>, dot_of<Codec::kRaw4>},
      {acc_of<Codec::kF32>, acc_of<Codec::kQ8>, acc_of<Codec::kQ4>},
      {nullptr, q8_quantize, q4_quantize},
      {dequantize_of<Codec::kF32>, dequantize_of<Codec::kQ8>, dequantize_of<Codec::kQ4>,
       dequantize_of<Codec::kRaw8>, dequantize_of<Codec::kRaw4>},
      exp_sum,
      hadamard,
      gemm_qk,
      gemm_pv,
  };
  return k;
}

}  // namespace kvrt::simd::scalar
