// Scalar twins (namespace kvrt::simd::scalar), also the fallback the SIMD tables call for
// shapes their vector width cannot cover (e.g. a row shorter than one vector).
#pragma once

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kv/blocks.h"
#include "kv/channel_tile.h"
#include "kv/tiles.h"
#include "simd/kernels.h"

namespace kvrt::simd::scalar {

constexpr int kMaxRow = kv::kMaxHeadDim;  // longest row the kernels accept

// A row of codec C (simd/kernels.h: F32Rows, or a format's bare codes) as FP32 values.
template <class C>
void dequantize_row(const uint8_t* row, int n, float* x) {
  if constexpr (C::kBits == 32) std::memcpy(x, row, sizeof(float) * n);
  else
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(kv::get_code<C>(row, n, i));
}
// q rows [n_q][q_stride] as int8 codes per group with the q8 codec of kv/blocks.h.
void quantize_queries(const float* q, int n_q, size_t q_stride, int n, int group,
                      const QueryBuffers& out);
// scores = q · row for rows of codec C, each row dequantized, then summed in order.
template <class C>
void dot(const DotArgs& a) {
  float x[kMaxRow];  // one dequantized row
  KVRT_ASSERT(a.n <= kMaxRow);
  for (int t = 0; t < a.n_rows; ++t) {
    dequantize_row<C>(a.rows + t * a.row_stride, a.n, x);
    for (int i = 0; i < a.n_q; ++i) {
      const float* q = a.q + i * a.q_stride;
      float s = 0;
      for (int d = 0; d < a.n; ++d) s += q[d] * x[d];
      a.scores[i * a.scores_stride + t] = s;
    }
  }
}
void acc(const AccArgs& a);  // FP32 rows
// q·k over the channel-axis key tiles of format F (see DotArgs), in the order of the SIMD
// kernels: per tile qd = q * d per channel; s = Σ qd · code over a token's row (summed in any
// order there), then s + Σ q · m for asymmetric formats.
template <class F>
void dot_channel(const DotArgs& a) {
  float qd[kMaxRow], x[kMaxRow];  // one query scaled per channel, one row of codes
  KVRT_ASSERT(a.n <= kMaxRow && a.first >= 0 && a.first < a.group);
  const size_t row = static_cast<size_t>(a.n) * F::kBits / 8;
  for (int t = 0; t < a.n_rows;) {
    const int tt = (a.first + t) % a.group, n = std::min(a.n_rows - t, a.group - tt);
    const uint8_t* tile = a.rows + static_cast<size_t>((a.first + t) / a.group) * a.row_stride;
    const uint8_t* codes = tile + kv::channel_codes_offset<F>(a.n) + tt * row;
    for (int i = 0; i < a.n_q; ++i) {
      const float* q = a.q + i * a.q_stride;
      float bias = 0;
      for (int c = 0; c < a.n; ++c) {
        qd[c] = q[c] * kv::channel_scale(tile, a.n, 0, c);
        if constexpr (!F::kSymmetric) bias += q[c] * kv::channel_scale(tile, a.n, 1, c);
      }
      for (int j = 0; j < n; ++j) {
        dequantize_row<F>(codes + j * row, a.n, x);
        float s = 0;
        for (int c = 0; c < a.n; ++c) s += qd[c] * x[c];
        a.scores[i * a.scores_stride + t + j] = s + bias;
      }
    }
    t += n;
  }
}
// Tile kernels of any format, given its geometry (f.n and f.group equal a.n and a.group).
void dot_tiles(const kv::TileFormat& f, const DotArgs& a);
void acc_tiles(const kv::TileFormat& f, const AccArgs& a);
void dequantize_tile(const kv::TileFormat& f, const uint8_t* tile, float* x);  // x [16][n]
float exp_sum(float* x, int n, float max);
void swiglu(float* gate, const float* up, int64_t n);
constexpr float kGeluSqrt2OverPi = 0.79788456080286535588f,
                kGeluCoef = 0.044715f;  // ggml's constants
void geglu(float* gate, const float* up, int64_t n);
void hadamard(float* x, int n);
void gemm(const GemmArgs& g);
void softmax(const SoftmaxArgs& a);
void gemm_bf16(const GemmBf16Args& g);
void bf16_pairs(const float* x0, const float* x1, int step, int n, uint32_t* dst);
void install(Kernels& k);         // the attention and quantize slots (kv/scalar.cc)
void install_matmul(Kernels& k);  // the matmul and weight slots (matmul/scalar.cc)

// A row of n values (n a multiple of group) as blocks of format F.
template <class F>
void quantize(const float* x, int n, int group, uint8_t* row) {
  for (int g = 0; g < n / group; ++g)
    kv::quantize_group<F>(x + g * group, group, row + g * F::block_bytes(group));
}

template <class F>
void dot_of(const DotArgs& a) {
  dot_tiles(kv::TileFormat::of<F>(kv::TileRole::kKey, a.n, a.group), a);
}
template <class F>
void acc_of(const AccArgs& a) {
  acc_tiles(kv::TileFormat::of<F>(kv::TileRole::kValue, a.n, a.group), a);
}
template <class F, kv::TileRole R>
void dequantize_tile_of(const uint8_t* tile, int n, int group, float* x) {
  dequantize_tile(kv::TileFormat::of<F>(R, n, group), tile, x);
}

// The scalar twins of format F's kernels.
template <class F>
FormatKernels format_kernels() {
  return {dot_of<F>,
          dot_channel<F>,
          acc_of<F>,
          quantize<F>,
          {dequantize_tile_of<F, kv::TileRole::kKey>, dequantize_tile_of<F, kv::TileRole::kValue>}};
}

}  // namespace kvrt::simd::scalar
