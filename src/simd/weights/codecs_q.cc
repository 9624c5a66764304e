// Reference codecs of the 32-value block types (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and of Q8_1.
// Decoding is ggml's arithmetic in the same order (d * q, d * q + m as a product then a sum; this
// library is compiled with -ffp-contract=off, so no FMA changes a rounding): bit-exact against
// llama.cpp's and gguf-py's dequantization. Encoding is kvrt's own (the GGUF writer and the
// activation side of the integer products): nearest codes on a scale from the block's range.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "simd/weights/blocks.h"
#include "simd/weights/codecs.h"

namespace kvrt::simd::ref {
namespace {

template <class Block>
const Block* blocks(const uint8_t* src) {
  return reinterpret_cast<const Block*>(
      src);  // callers hand 2-byte aligned blocks (WeightTypeTraits::alignment)
}

float h(uint16_t bits) { return f16_to_f32(bits); }

// Bit j (0..31) of a block's 32 fifth bits, stored little-endian.
int high_bit(const uint8_t qh[4], int j) { return (qh[j / 8] >> (j % 8)) & 1; }

// Signed value of largest magnitude (the first one on ties), and the range.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Codes of a symmetric block: d = max / -half (so the largest magnitude gets code 0 or the top),
// q = clamp(round(x / d) + half, 0, 2 * half - 1).
void symmetric_codes(const float* x, int half, uint16_t& d_bits, uint8_t* q) {
  const float d = signed_absmax(x, kQK) / float(-half);
  d_bits = f32_to_f16(d);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j)
    q[j] = uint8_t(std::clamp(int(std::lround(x[j] * id)) + half, 0, 2 * half - 1));
}

// Codes of an affine block: x ≈ d * q + min with q in 0..n_levels - 1.
void affine_codes(const float* x, int n_levels, uint16_t& d_bits, uint16_t& m_bits, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = (hi - lo) / float(n_levels - 1);
  d_bits = f32_to_f16(d);
  m_bits = f32_to_f16(lo);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j)
    q[j] = uint8_t(std::clamp(int(std::lround((x[j] - lo) * id)), 0, n_levels - 1));
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = uint8_t((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
}

void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  std::memset(qh, 0, 4);
  for (int j = 0; j < kQK; ++j) qh[j / 8] = uint8_t(qh[j / 8] | (((q[j] >> 4) & 1) << (j % 8)));
}

// The nearest entry of the IQ4_NL grid to v (in grid units).
uint8_t iq4nl_nearest(float v) {
  int best = 0;
  for (int k = 1; k < 16; ++k) {
    if (std::fabs(v - float(kIq4nlValues[k])) < std::fabs(v - float(kIq4nlValues[best]))) best = k;
  }
  return uint8_t(best);
}

}  // namespace

void q4_0_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ4_0* b = blocks<BlockQ4_0>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float((b[i].qs[j] & 0xF) - 8) * d;
      dst[j + kQK / 2] = float((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void q4_1_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ4_1* b = blocks<BlockQ4_1>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d), m = h(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float(b[i].qs[j] & 0xF) * d + m;
      dst[j + kQK / 2] = float(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void q5_0_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ5_0* b = blocks<BlockQ5_0>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float(((b[i].qs[j] & 0xF) | (high_bit(b[i].qh, j) << 4)) - 16) * d;
      dst[j + kQK / 2] =
          float(((b[i].qs[j] >> 4) | (high_bit(b[i].qh, j + kQK / 2) << 4)) - 16) * d;
    }
  }
}

void q5_1_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ5_1* b = blocks<BlockQ5_1>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d), m = h(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float((b[i].qs[j] & 0xF) | (high_bit(b[i].qh, j) << 4)) * d + m;
      dst[j + kQK / 2] = float((b[i].qs[j] >> 4) | (high_bit(b[i].qh, j + kQK / 2) << 4)) * d + m;
    }
  }
}

void iq4_nl_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockIQ4_NL* b = blocks<BlockIQ4_NL>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * float(kIq4nlValues[b[i].qs[j] & 0xF]);
      dst[j + kQK / 2] = d * float(kIq4nlValues[b[i].qs[j] >> 4]);
    }
  }
}

void q8_1_to_float(const uint8_t* src, int64_t n, float* dst) {
  const BlockQ8_1* b = blocks<BlockQ8_1>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = h(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = float(b[i].qs[j]) * d;
  }
}

void q4_0_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ4_0* b = reinterpret_cast<BlockQ4_0*>(dst);
  uint8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    symmetric_codes(x, 8, b[i].d, q);
    pack_nibbles(q, b[i].qs);
  }
}

void q4_1_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ4_1* b = reinterpret_cast<BlockQ4_1*>(dst);
  uint8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    affine_codes(x, 16, b[i].d, b[i].m, q);
    pack_nibbles(q, b[i].qs);
  }
}

void q5_0_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ5_0* b = reinterpret_cast<BlockQ5_0*>(dst);
  uint8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    symmetric_codes(x, 16, b[i].d, q);
    pack_nibbles(q, b[i].qs);
    pack_high_bits(q, b[i].qh);
  }
}

void q5_1_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ5_1* b = reinterpret_cast<BlockQ5_1*>(dst);
  uint8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    affine_codes(x, 32, b[i].d, b[i].m, q);
    pack_nibbles(q, b[i].qs);
    pack_high_bits(q, b[i].qh);
  }
}

// IQ4_NL: the scale that maps the largest magnitude onto the grid's end, then a few scales near
// it, keeping the one with the least squared error; the kept scale is refitted by least squares.
void iq4_nl_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockIQ4_NL* b = reinterpret_cast<BlockIQ4_NL*>(dst);
  uint8_t q[kQK], best_q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d0 = signed_absmax(x, kQK) / float(kIq4nlValues[0]);
    float best_err = INFINITY, best_d = 0.0f;
    for (int t = -6; t <= 6 && d0 != 0.0f; ++t) {
      const float d = d0 * (1.0f + 0.02f * float(t));
      float sxv = 0.0f, svv = 0.0f;
      for (int j = 0; j < kQK; ++j) {
        q[j] = iq4nl_nearest(x[j] / d);
        sxv += x[j] * float(kIq4nlValues[q[j]]);
        svv += float(kIq4nlValues[q[j]]) * float(kIq4nlValues[q[j]]);
      }
      const float fit = svv > 0.0f ? sxv / svv : 0.0f;
      float err = 0.0f;
      for (int j = 0; j < kQK; ++j)
        err += (x[j] - fit * float(kIq4nlValues[q[j]])) * (x[j] - fit * float(kIq4nlValues[q[j]]));
      if (err < best_err) {
        best_err = err;
        best_d = fit;
        std::memcpy(best_q, q, kQK);
      }
    }
    if (d0 == 0.0f) std::fill(best_q, best_q + kQK, uint8_t(8));  // grid value 1 times d = 0
    b[i].d = f32_to_f16(best_d);
    pack_nibbles(best_q, b[i].qs);
  }
}

// Q8_1: Q8_0's codes and scale, plus s = d * Σ codes.
void q8_1_from_float(const float* x, int64_t n, uint8_t* dst) {
  BlockQ8_1* b = reinterpret_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      b[i].qs[j] = int8_t(std::round(x[j] * id));
      sum += b[i].qs[j];
    }
    b[i].d = f32_to_f16(d);
    b[i].s = f32_to_f16(float(sum) * d);
  }
}

}  // namespace kvrt::simd::ref
