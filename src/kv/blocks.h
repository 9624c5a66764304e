// The quantized KV formats: for each one a block struct (one group of G values) and a descriptor
// of its compile-time constants, plus the reference (scalar) codec they share. Dependency-free:
// shared by the KV layer (traits table of kv/formats.h, cache) and the kernels (src/simd).
//
// A token-axis row of n values is n / G consecutive blocks of G values (G = group size). A block
// holds its scale planes first (the scale d; asymmetric formats also the minimum m), then the
// codes, kBits each:
//   symmetric  (q8): x = d * q,      q in [-max, max], d = max|x| / max     |x - x̂| <= d/2
//   asymmetric (q4, q2): x = m + d * q, q in [0, 2^bits - 1], d = (max - min) / (2^bits - 1)
// Codes narrower than a byte: byte i of a run of n codes holds code i + s * (n / k) in bits
// [s * bits, (s + 1) * bits) for s < k = 8 / bits, so one load of bytes yields k contiguous runs.
//
// Adding a format: its block struct and descriptor here (with the static_assert on its size),
// its entry in QuantFormats, its row in kv/formats.cc; the kernels are templates over the
// descriptor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>

namespace kvrt::kv {

// Every KV format. The value is the format's row in kv/formats.cc and its kernel slot in
// simd::Kernels::format (f32 has no tiles, so its slot stays empty).
enum class Format : uint8_t {
  kF32,  // reference path: exact FP32 rows
  kQ8,   // int8, symmetric, one scale per group of G values
  kQ4,   // 4-bit, asymmetric (scale and minimum) per group of G values
  kQ2,   // 2-bit, asymmetric (scale and minimum) per group of G values (KIVI's codes)
};
constexpr int kNumFormats = 4;
constexpr int kMaxGroup = 128;  // largest group G of any format

// Compile-time constants of a quantized format, derived from its code width and symmetry.
template <Format F, int Bits, bool Symmetric, class ScaleT>
struct QuantFormat {
  using Scale = ScaleT;
  static constexpr Format kFormat = F;
  static constexpr int kBits = Bits;
  static constexpr bool kSymmetric = Symmetric;           // signed codes, no minimum
  static constexpr int kPerByte = 8 / Bits;               // codes per byte
  static constexpr int kPlanes = Symmetric ? 1 : 2;       // scale planes: d (and m)
  static constexpr int kMaxCode = Symmetric ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  static constexpr int kCodeMask = (1 << Bits) - 1;
  static constexpr size_t kHeaderBytes = kPlanes * sizeof(Scale);
  static constexpr size_t block_bytes(int group) { return kHeaderBytes + static_cast<size_t>(group) * Bits / 8; }
};

template <int G>
struct Q8Block {
  float d;        // scale
  int8_t qs[G];   // codes
};

template <int G>
struct Q4Block {
  float d;             // scale
  float m;             // minimum
  uint8_t qs[G / 2];   // two codes per byte, see above
};

template <int G>
struct __attribute__((packed)) Q2Block {  // packed: G = 8 takes 10 bytes
  float d;             // scale
  float m;             // minimum
  uint8_t qs[G / 4];   // four codes per byte, see above
};

struct Q8 : QuantFormat<Format::kQ8, 8, true, float> {
  static constexpr const char* kName = "q8";
  template <int G> using Block = Q8Block<G>;
};
struct Q4 : QuantFormat<Format::kQ4, 4, false, float> {
  static constexpr const char* kName = "q4";
  template <int G> using Block = Q4Block<G>;
};
struct Q2 : QuantFormat<Format::kQ2, 2, false, float> {
  static constexpr const char* kName = "q2";
  template <int G> using Block = Q2Block<G>;
};

static_assert(sizeof(Q8::Block<8>) == 12 && sizeof(Q8::Block<32>) == Q8::block_bytes(32) && sizeof(Q8::Block<128>) == 132);
static_assert(sizeof(Q4::Block<8>) == 12 && sizeof(Q4::Block<32>) == Q4::block_bytes(32) && sizeof(Q4::Block<128>) == 72);
static_assert(sizeof(Q2::Block<8>) == Q2::block_bytes(8) && sizeof(Q2::Block<32>) == 16 && sizeof(Q2::Block<128>) == 40);

// The quantized formats, for code that instantiates something per format (kernel tables).
using QuantFormats = std::tuple<Q8, Q4, Q2>;

template <class Fn>
void for_each_quant_format(Fn&& fn) {
  std::apply([&](auto... f) { (fn(f), ...); }, QuantFormats{});
}

// Code `idx` of a run of n codes packed as above: int8 (symmetric) or 0..2^bits-1.
template <class F>
inline int get_code(const uint8_t* codes, int n, int idx) {
  if constexpr (F::kBits == 8) return static_cast<int8_t>(codes[idx]);
  const int run = n / F::kPerByte;
  return (codes[idx % run] >> (idx / run * F::kBits)) & F::kCodeMask;
}

template <class F>
inline void set_code(uint8_t* codes, int n, int idx, int q) {
  if constexpr (F::kBits == 8) {
    codes[idx] = static_cast<uint8_t>(static_cast<int8_t>(q));
  } else {
    const int run = n / F::kPerByte, shift = idx / run * F::kBits;
    uint8_t& byte = codes[idx % run];
    byte = static_cast<uint8_t>((byte & ~(F::kCodeMask << shift)) | (q << shift));
  }
}

// Reference codec of one group of `group` values. The scale is computed as d = range / levels
// and codes as round-to-nearest-even of x * (1 / d); the SIMD kernels use the same operations.
template <class F>
inline void quantize_group(const float* x, int group, uint8_t* block) {
  uint8_t* qs = block + F::kHeaderBytes;
  std::fill_n(qs, group * F::kBits / 8, uint8_t{0});
  if constexpr (F::kSymmetric) {
    float amax = 0;
    for (int i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / static_cast<float>(F::kMaxCode);
    const float id = d > 0 ? 1.0f / d : 0.0f;
    std::memcpy(block, &d, sizeof d);
    const auto lim = static_cast<float>(F::kMaxCode);
    for (int i = 0; i < group; ++i) set_code<F>(qs, group, i, static_cast<int>(std::clamp(std::nearbyint(x[i] * id), -lim, lim)));
  } else {
    float mn = x[0], mx = x[0];
    for (int i = 1; i < group; ++i) {
      mn = std::min(mn, x[i]);
      mx = std::max(mx, x[i]);
    }
    const float d = (mx - mn) / static_cast<float>(F::kMaxCode);
    const float id = d > 0 ? 1.0f / d : 0.0f;
    std::memcpy(block, &d, sizeof d);
    std::memcpy(block + sizeof d, &mn, sizeof mn);
    const auto lim = static_cast<float>(F::kMaxCode);
    for (int i = 0; i < group; ++i) set_code<F>(qs, group, i, static_cast<int>(std::clamp(std::nearbyint((x[i] - mn) * id), 0.0f, lim)));
  }
}

template <class F>
inline void dequantize_group(const uint8_t* block, int group, float* x) {
  float d, m = 0;
  std::memcpy(&d, block, sizeof d);
  if constexpr (!F::kSymmetric) std::memcpy(&m, block + sizeof d, sizeof m);
  const uint8_t* qs = block + F::kHeaderBytes;
  for (int i = 0; i < group; ++i) {
    const auto q = static_cast<float>(get_code<F>(qs, group, i));
    x[i] = F::kSymmetric ? d * q : m + d * q;
  }
}

}  // namespace kvrt::kv
