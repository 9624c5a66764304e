// Decode products on packed weight blocks (the slot WeightKernels::decode, simd/kernels.h): the
// activations are quantized once per product to int8 blocks (the type's WeightTypeTraits::act:
// Q8_0, Q8_1 or Q8_K, by the from_float slot of that format), then every W row is an integer dot
// product on the packed blocks, as llama.cpp's CPU backend computes ggml_vec_dot_<type>_<act>.
//
// What every kernel computes, the scalar twins (weights/decode_scalar.cc) spelling it out: per
// block (32 values) or sub-block (16 or 32 values of a K super-block) the exact integer sum Σ q_w ·
// q_a, then in floats the sum over blocks of d_w · d_a · sum (plus the min terms of the affine
// types, from Q8_1's s or Q8_K's bsums). The SIMD versions have the same integer sums; only the
// order of the float additions differs (lanes), so they match the twins within a few ulps of Σ
// |terms|.
#pragma once

#include <cstdint>

#include "simd/kernels.h"

namespace kvrt::simd {

// The dot product of one W row and one activation row of n values (whole blocks).
using RowDot = float (*)(const uint8_t* w, const uint8_t* act, int64_t n);

// A decode product from a row dot: y[i][j] = act_i · w_j for the rows of DecodeArgs.
template <RowDot Dot>
void decode_rows(const DecodeArgs& a) {
  for (int j = 0; j < a.n_rows; ++j) {
    const uint8_t* w = a.w + size_t(j) * a.w_stride;
    for (int i = 0; i < a.m; ++i)
      a.y[size_t(i) * a.y_stride + size_t(j)] = Dot(w, a.act + size_t(i) * a.act_stride, a.n_in);
  }
}

namespace scalar {
void install_weight_dots(Kernels& k);  // the decode slot of every quantized weight type
}  // namespace scalar

}  // namespace kvrt::simd
