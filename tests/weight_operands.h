// Operands of the decode products on packed weight blocks (simd/kernels.h DecodeArgs) for the
// tests: W rows in a quantized type (from kvrt's encoders, or random bytes), activation rows in
// its activation blocks, both also decoded to floats, and the rounding scales their checks need.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "common/half.h"
#include "simd/kernels.h"
#include "simd/weights/blocks.h"
#include "simd/weights/codecs.h"

namespace kvrt::test {

constexpr int kRows = 7;
constexpr int kMaxM = 4;
constexpr int64_t kRowLengths[] = {256, 2816};
// Also for the 32-value types: rows of 1 and 15 blocks, not whole groups of 8 or 4 (the groups of
// simd/weights/decode_groups_x86-inl.h and the quads of weights/decode_quads_neon-inl.h).
constexpr int64_t kShortRowLengths[] = {32, 480};

inline std::vector<int64_t> row_lengths(simd::WeightType type) {
  std::vector<int64_t> n(std::begin(kRowLengths), std::end(kRowLengths));
  if (simd::weight_type_traits(type).block == simd::kQK)
    n.insert(n.end(), std::begin(kShortRowLengths), std::end(kShortRowLengths));
  return n;
}

inline std::vector<float> gaussian(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

// A product's operands: W [kRows][n] in `type`, activations [kMaxM][n] in its activation blocks,
// and both decoded to floats.
struct Operands {
  const simd::WeightTypeTraits* w_type;
  const simd::WeightTypeTraits* act_type;
  int64_t n;
  std::vector<uint8_t> w;          // [kRows][w_stride]
  std::vector<float> act_storage;  // [kMaxM][act_stride] bytes, float-aligned (Q8_K's f32 scale)
  std::vector<float> w_values;     // [kRows][n]
  std::vector<float> act_values;   // [kMaxM][n]
  size_t w_stride() const { return size_t(w_type->row_bytes(n)); }
  size_t act_stride() const { return size_t(act_type->row_bytes(n)); }
  const uint8_t* act() const { return reinterpret_cast<const uint8_t*>(act_storage.data()); }
};

// random_bytes: W rows are random bytes, with blocks whose scales are not finite drawn again.
inline Operands make_operands(simd::WeightType type, int64_t n, bool random_bytes,
                              std::mt19937& rng) {
  Operands o{&simd::weight_type_traits(type), nullptr, n, {}, {}, {}, {}};
  o.act_type = &simd::weight_type_traits(o.w_type->act);
  o.w.resize(kRows * o.w_stride());
  if (random_bytes) {
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : o.w) b = uint8_t(byte(rng));
    for (int64_t bad; (bad = o.w_type->find_non_finite(o.w.data(), kRows * n)) >= 0;) {
      uint8_t* block = o.w.data() + bad / o.w_type->block * o.w_type->block_bytes;
      for (int64_t i = 0; i < o.w_type->block_bytes; ++i) block[i] = uint8_t(byte(rng));
    }
  } else {
    o.w_type->from_float_ref(gaussian(size_t(kRows * n), rng).data(), kRows * n, o.w.data());
  }
  o.act_storage.resize((kMaxM * o.act_stride() + 3) / 4);
  o.act_type->from_float_ref(gaussian(size_t(kMaxM * n), rng).data(), kMaxM * n,
                             reinterpret_cast<uint8_t*>(o.act_storage.data()));
  o.w_values.resize(size_t(kRows * n));
  o.w_type->to_float_ref(o.w.data(), kRows * n, o.w_values.data());
  o.act_values.resize(size_t(kMaxM * n));
  const auto act_to_float = o.act_type->type == simd::WeightType::kQ8_0 ? simd::ref::q8_0_to_float
                            : o.act_type->type == simd::WeightType::kQ8_1
                                ? simd::ref::q8_1_to_float
                                : simd::ref::q8_k_to_float;
  act_to_float(o.act(), kMaxM * n, o.act_values.data());
  return o;
}

// The activation rows of a decode kernel: o's blocks, or where it has a layout, o's blocks laid
// out into 64-byte aligned rows (as ops/matmul_packed.cc does).
struct KernelRows {
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  KernelRows(const simd::DecodeKernel& decode, const Operands& o)
      : act(o.act()), stride(o.act_stride()) {
    if (!decode.lay) return;
    const size_t lay_stride = size_t(decode.lay_bytes(o.n));  // whole lines
    lay.resize(kMaxM * lay_stride / sizeof(Line));
    for (int i = 0; i < kMaxM; ++i)
      decode.lay(o.act() + i * o.act_stride(), o.n, lay.data()->bytes + i * lay_stride);
    act = lay.data()->bytes;
    stride = lay_stride;
  }
  std::vector<Line> lay;
  const uint8_t* act;
  size_t stride;
};

// y [m][kRows] of a decode product (a weight type's decode slot).
inline std::vector<float> run(const simd::DecodeKernel& decode, const Operands& o, int m) {
  const KernelRows rows(decode, o);
  std::vector<float> y(size_t(m) * kRows);
  decode.run(
      {o.w.data(), o.w_stride(), kRows, rows.act, rows.stride, m, o.n, y.data(), size_t(kRows)});
  return y;
}

// Σ |w_k a_k| of row j and activation row i: the scale of the float rounding of any order of sums.
inline double magnitude(const Operands& o, int i, int j) {
  double s = 0;
  for (int64_t k = 0; k < o.n; ++k)
    s += std::fabs(double(o.w_values[j * o.n + k]) * o.act_values[i * o.n + k]);
  return s;
}

// Q4_1 and Q5_1 take their min term m_w s_a from Q8_1's s = d Σ codes, rounded to f16: the
// product differs from the decoded blocks' by up to 2^-11 |m_w s_a| per block.
inline double q8_1_rounding(const Operands& o, int i, int j) {
  if (o.act_type->type != simd::WeightType::kQ8_1) return 0;
  const auto* a = reinterpret_cast<const simd::BlockQ8_1*>(o.act() + i * o.act_stride());
  double s = 0;
  for (int64_t b = 0; b < o.n / simd::kQK; ++b) {
    uint16_t m;  // at byte 2 of both Q4_1 and Q5_1 blocks
    std::memcpy(&m, o.w.data() + j * o.w_stride() + b * o.w_type->block_bytes + 2, sizeof m);
    s += std::ldexp(std::fabs(double(f16_to_f32(m)) * f16_to_f32(a[b].s)), -11);
  }
  return s;
}

}  // namespace kvrt::test
