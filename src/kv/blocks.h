// The quantized KV formats: for each one a block struct (one group of G values) and a descriptor
// of its compile-time constants, plus the reference (scalar) codec they share. Dependency-free:
// shared by the KV layer (traits table of kv/formats.h, cache) and the kernels (src/simd).
//
// A token-axis row of n values is n / G consecutive blocks of G values (G = group size). A block
// holds its scale planes first (the scale d; asymmetric formats also the minimum m), each an
// IEEE binary16 (FP16) number, then the codes, kBits each:
//   symmetric  (q8):     x = d * q,     q in [-127, 127], d = max|x| / 127       |x - x̂| <= d/2
//   symmetric  (q4s):    x = d * q,     q in [-8, 7], d = e / -8 for e the value of largest
//                        magnitude (llama.cpp's q4_0): e is exact at -8, values of its sign within
//                        |d|/2, values of the other sign clamp at 7, within |d|
//   symmetric  (q3):     x = d * q,     q in [-4, 3], d = e / -4, as q4s: values of e's sign
//                        within |d|/2, values of the other sign clamp at 3, within |d|
//   asymmetric (q4, q2): x = m + d * q, q in [0, 2^bits - 1], d = (max - min) / (2^bits - 1)
//   non-uniform (q4n):   x = d * q,     q one of the 16 int8 levels of kQ4NLevels (4-bit codes
//                        index them), d chosen per group to minimise the squared error (see
//                        quantize_group_q4n)
// q4s takes the whole 4-bit range: `kvrt validate`'s mean KL was below that of [-7, 7] with
// d = max|x| / 7 on stories260K and on the Qwen2-style fixture, both sides, values alone and keys
// alone (docs/kv-formats.md).
// Symmetric codes narrower than a byte are stored offset by kCodeBias = 2^(bits - 1) (q4s: q + 8
// in 0..15), so they unpack like the asymmetric formats' and every stored code is unsigned;
// get_code/set_code and the kernels take the bias off (int8 codes are stored as they are).
// d and m are rounded to FP16 first and the codes computed against the rounded values, so d/2
// bounds the error but where the rounded m lies above the minimum (by at most 2^-11 |m|). FP16
// holds magnitudes up to 65504 (m saturates there) and scales down to 2^-24: a group whose
// d rounds to zero stores all-zero codes.
// Codes narrower than a byte: byte i of a run of n codes holds code i + s * (n / k) in bits
// [s * bits, (s + 1) * bits) for s < k = 8 / bits, so one load of bytes yields k contiguous runs.
// 3-bit codes (q3) are two such planes: the low 2 bits of the n codes as q2 packs them (n / 4
// bytes, k = 4), then their high bits as 1-bit codes (n / 8 bytes, k = 8: bit s of byte i is the
// high bit of code i + s * n / 8). A load of each plane, a shift and a mask give a contiguous run
// of low bits and one of high bits; n is a multiple of 8.
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

#include "common/half.h"

namespace kvrt::kv {

// Every KV format. The value is the format's row in kv/formats.cc and its kernel slot in
// simd::Kernels::format (f32 has no tiles, so its slot stays empty).
enum class Format : uint8_t {
  kF32,  // reference path: exact FP32 rows
  kQ8,   // int8, symmetric, one scale per group of G values
  kQ4,   // 4-bit, asymmetric (scale and minimum) per group of G values
  kQ2,   // 2-bit, asymmetric (scale and minimum) per group of G values (KIVI's codes)
  kQ4S,  // 4-bit, symmetric, one scale per group of G values (llama.cpp's q4_0 size)
  kQ4N,  // 4-bit codes of a fixed non-uniform int8 grid, one scale per group (q4s's size)
  kQ3,   // 3-bit, symmetric, one scale per group of G values (a 2-bit and a 1-bit plane)
};
constexpr int kNumFormats = 7;

// q4n's levels: the 16 reconstruction levels of the Lloyd-Max quantizer of a unit Gaussian
// (+-0.1284, 0.3880, 0.6568, 0.9423, 1.2562, 1.6180, 2.0690, 2.7326), scaled so the outermost is
// 127 and rounded. Rotated keys and values (kv/rotation.h) are near-Gaussian per group, so a grid
// denser near zero fits them better than q4s's uniform one at the same size. Stored code c in
// 0..15 means level kQ4NLevels[c]; the levels are odd-symmetric (level 15 - c = -level c), so
// int8 kernels map codes with one 16-byte table lookup.
inline constexpr int8_t kQ4NLevels[16] = {-127, -96, -75, -58, -44, -31, -18, -6,
                                          6,    18,  31,  44,  58,  75,  96,  127};
constexpr int kMaxGroup = 128;     // largest group G of any format
constexpr int kMaxHeadDim = 1024;  // longest row of a head the cache and its kernels take

using Scale = uint16_t;  // the bits of an FP16 scale or minimum

inline float load_scale(const uint8_t* p) {
  Scale h;
  std::memcpy(&h, p, sizeof h);
  return f16_to_f32(h);
}

// Stores x as FP16 (round to nearest even, saturating at +-65504); returns the stored value.
inline float store_scale(uint8_t* p, float x) {
  const Scale h = f32_to_f16(std::clamp(x, -65504.0f, 65504.0f));
  std::memcpy(p, &h, sizeof h);
  return f16_to_f32(h);
}

// Compile-time constants of a quantized format, derived from its code width and symmetry.
template <Format F, int Bits, bool Symmetric>
struct QuantFormat {
  static constexpr Format kFormat = F;
  static constexpr int kBits = Bits;
  static constexpr bool kSymmetric = Symmetric;  // signed codes, no minimum
  // 3-bit codes: a plane of the low 2 bits and one of the high bit (see above).
  static constexpr bool kHighPlane = Bits == 3;
  static constexpr int kLowBits = kHighPlane ? 2 : Bits;   // bits per code of the first plane
  static constexpr int kPerByte = 8 / kLowBits;            // codes per byte of the first plane
  static constexpr int kRuns = kHighPlane ? 8 : kPerByte;  // runs a run of codes is cut into
  static constexpr int kPlanes = Symmetric ? 1 : 2;        // scale planes: d (and m)
  static constexpr int kMaxCode = Symmetric ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  // Symmetric int8 is balanced, scaled by max|x|; narrower symmetric codes reach -2^(bits - 1).
  static constexpr bool kAbsScale = Symmetric && Bits == 8;
  static constexpr int kMinCode = !Symmetric ? 0 : kAbsScale ? -kMaxCode : -(1 << (Bits - 1));
  static constexpr int kCodeMask = (1 << Bits) - 1;
  static constexpr int kLowMask = (1 << kLowBits) - 1;
  static constexpr int kCodeBias =
      Symmetric && Bits < 8 ? 1 << (Bits - 1) : 0;  // stored = q + kCodeBias
  static constexpr bool kCodebook = false;          // q4n: stored codes index kQ4NLevels
  static constexpr size_t kHeaderBytes = kPlanes * sizeof(Scale);
  static constexpr size_t block_bytes(int group) {
    return kHeaderBytes + static_cast<size_t>(group) * Bits / 8;
  }
};

// Packed: a block is its scales and codes with no padding for any G (q8 G = 9 takes 11 bytes).
template <int G>
struct __attribute__((packed)) Q8Block {
  Scale d;       // scale
  int8_t qs[G];  // codes
};

template <int G>
struct __attribute__((packed)) Q4Block {
  Scale d;            // scale
  Scale m;            // minimum
  uint8_t qs[G / 2];  // two codes per byte, see above
};

template <int G>
struct __attribute__((packed)) Q4SBlock {
  Scale d;            // scale
  uint8_t qs[G / 2];  // two codes per byte, each q + 8, see above
};

template <int G>
struct __attribute__((packed)) Q2Block {
  Scale d;            // scale
  Scale m;            // minimum
  uint8_t qs[G / 4];  // four codes per byte, see above
};

struct Q8 : QuantFormat<Format::kQ8, 8, true> {
  static constexpr const char* kName = "q8";
  template <int G>
  using Block = Q8Block<G>;
};
struct Q4 : QuantFormat<Format::kQ4, 4, false> {
  static constexpr const char* kName = "q4";
  template <int G>
  using Block = Q4Block<G>;
};
struct Q2 : QuantFormat<Format::kQ2, 2, false> {
  static constexpr const char* kName = "q2";
  template <int G>
  using Block = Q2Block<G>;
};
struct Q4S : QuantFormat<Format::kQ4S, 4, true> {
  static constexpr const char* kName = "q4s";
  template <int G>
  using Block = Q4SBlock<G>;
};

template <int G>
struct __attribute__((packed)) Q4NBlock {
  Scale d;            // scale
  uint8_t qs[G / 2];  // two level indexes per byte, see above
};
// Symmetric with 4-bit codes like q4s, but a code is an index into kQ4NLevels rather than q + 8:
// kMinCode/kMaxCode are the extreme levels, kCodeBias 0 (nothing to take off a stored code).
struct Q4N : QuantFormat<Format::kQ4N, 4, true> {
  static constexpr const char* kName = "q4n";
  template <int G>
  using Block = Q4NBlock<G>;
  static constexpr bool kCodebook = true;
  static constexpr int kCodeBias = 0;
  static constexpr int kMinCode = kQ4NLevels[0], kMaxCode = kQ4NLevels[15];
};

template <int G>
struct __attribute__((packed)) Q3Block {
  Scale d;            // scale
  uint8_t qs[G / 4];  // low 2 bits of each code + 4, four per byte, see above
  uint8_t qh[G / 8];  // high bit of each code + 4, eight per byte, see above
};
struct Q3 : QuantFormat<Format::kQ3, 3, true> {
  static constexpr const char* kName = "q3";
  template <int G>
  using Block = Q3Block<G>;
};

// At G = 32: q8 34 bytes (1.0625 bytes/value, as llama.cpp's q8_0), q4 20 (0.625), q4s and q4n 18
// (0.5625, as q4_0 and iq4_nl), q3 14 (0.4375), q2 12 (0.375).
static_assert(sizeof(Q8::Block<8>) == 10 && sizeof(Q8::Block<32>) == Q8::block_bytes(32) &&
              sizeof(Q8::Block<32>) == 34);
static_assert(sizeof(Q4::Block<8>) == 8 && sizeof(Q4::Block<32>) == Q4::block_bytes(32) &&
              sizeof(Q4::Block<32>) == 20);
static_assert(sizeof(Q2::Block<8>) == Q2::block_bytes(8) && sizeof(Q2::Block<32>) == 12 &&
              sizeof(Q2::Block<128>) == 36);
static_assert(sizeof(Q4S::Block<8>) == 6 && sizeof(Q4S::Block<32>) == Q4S::block_bytes(32) &&
              sizeof(Q4S::Block<32>) == 18);
static_assert(sizeof(Q4N::Block<32>) == Q4N::block_bytes(32) && sizeof(Q4N::Block<32>) == 18);
static_assert(sizeof(Q3::Block<8>) == Q3::block_bytes(8) && sizeof(Q3::Block<32>) == 14 &&
              sizeof(Q3::Block<128>) == Q3::block_bytes(128));
static_assert(sizeof(Q8::Block<9>) == Q8::block_bytes(9) &&
              sizeof(Q4::Block<2>) == Q4::block_bytes(2) &&
              sizeof(Q2::Block<4>) == Q2::block_bytes(4) &&
              sizeof(Q4S::Block<2>) == Q4S::block_bytes(2));

// The quantized formats, for code that instantiates something per format (kernel tables).
using QuantFormats = std::tuple<Q8, Q4, Q2, Q4S, Q4N, Q3>;

template <class Fn>
void for_each_quant_format(Fn&& fn) {
  std::apply([&](auto... f) { (fn(f), ...); }, QuantFormats{});
}

// The stored field of code `idx` of a run of n codes packed as above (the int8 code itself for
// 8-bit formats): what tiles and channel tiles copy.
template <class F>
inline int get_stored(const uint8_t* codes, int n, int idx) {
  if constexpr (F::kBits == 8) return static_cast<int8_t>(codes[idx]);
  const int run = n / F::kPerByte;
  const int low = (codes[idx % run] >> (idx / run * F::kLowBits)) & F::kLowMask;
  if constexpr (!F::kHighPlane) return low;
  const int high_run = n / 8;
  return low | ((codes[run + idx % high_run] >> (idx / high_run)) & 1) << F::kLowBits;
}

template <class F>
inline void set_stored(uint8_t* codes, int n, int idx, int stored) {
  if constexpr (F::kBits == 8) {
    codes[idx] = static_cast<uint8_t>(static_cast<int8_t>(stored));
  } else {
    const int run = n / F::kPerByte, shift = idx / run * F::kLowBits;
    uint8_t& byte = codes[idx % run];
    byte =
        static_cast<uint8_t>((byte & ~(F::kLowMask << shift)) | ((stored & F::kLowMask) << shift));
    if constexpr (F::kHighPlane) {
      const int high_run = n / 8, high_shift = idx / high_run;
      uint8_t& high = codes[run + idx % high_run];
      high = static_cast<uint8_t>((high & ~(1 << high_shift)) | (stored >> F::kLowBits & 1)
                                                                    << high_shift);
    }
  }
}

// Code `idx` of a run of n codes: q in [kMinCode, kMaxCode] (q4n: its level).
template <class F>
inline int get_code(const uint8_t* codes, int n, int idx) {
  const int stored = get_stored<F>(codes, n, idx);
  if constexpr (F::kCodebook) return kQ4NLevels[stored];
  else return stored - F::kCodeBias;
}

template <class F>
inline void set_code(uint8_t* codes, int n, int idx, int q) {
  static_assert(!F::kCodebook, "q4n stores level indexes: set_stored");
  set_stored<F>(codes, n, idx, q + F::kCodeBias);
}

// The scale d and minimum m of a group whose values span [lo, hi] (kAbsScale formats: lo = 0,
// hi = max|x|), stored as FP16 at the head of `block`, as the rounded values the codes use.
struct GroupScales {
  float d, m;
};
template <class F>
inline GroupScales store_group_scales(float lo, float hi, uint8_t* block) {
  if constexpr (F::kAbsScale)
    return {store_scale(block, hi / static_cast<float>(F::kMaxCode)), 0.0f};
  if constexpr (F::kSymmetric)
    return {store_scale(block, (-lo > hi ? lo : hi) / static_cast<float>(F::kMinCode)), 0.0f};
  const float m = store_scale(block + sizeof(Scale), lo);
  return {store_scale(block, (hi - m) / static_cast<float>(F::kMaxCode)), m};
}

// Codes of a group against scale d and minimum m (0 for symmetric formats): round-to-nearest-even
// of (x - m) * (1 / d), clamped to the code range; the SIMD quantizers use the same operations.
template <class F>
inline void encode_group(const float* x, int group, float d, float m, uint8_t* qs) {
  std::fill_n(qs, group * F::kBits / 8, uint8_t{0});
  const float id = d != 0 ? 1.0f / d : 0.0f;  // q4s's d is negative where e is positive
  const float lo = static_cast<float>(F::kMinCode), hi = static_cast<float>(F::kMaxCode);
  for (int i = 0; i < group; ++i) {
    const float v = F::kSymmetric ? x[i] * id : (x[i] - m) * id;
    set_code<F>(qs, group, i, static_cast<int>(std::clamp(std::nearbyint(v), lo, hi)));
  }
}

// The 7 midpoints between q4n's neighbouring positive levels (6, 18, ..., 127).
inline constexpr float kQ4NMids[7] = {
    0.5f * (kQ4NLevels[8] + kQ4NLevels[9]),   0.5f * (kQ4NLevels[9] + kQ4NLevels[10]),
    0.5f * (kQ4NLevels[10] + kQ4NLevels[11]), 0.5f * (kQ4NLevels[11] + kQ4NLevels[12]),
    0.5f * (kQ4NLevels[12] + kQ4NLevels[13]), 0.5f * (kQ4NLevels[13] + kQ4NLevels[14]),
    0.5f * (kQ4NLevels[14] + kQ4NLevels[15])};

// Code of the level of kQ4NLevels nearest v: the level of magnitude kQ4NLevels[8 + k], k the
// number of midpoints below |v| (a midpoint goes to the smaller magnitude), on v's side (zero
// takes -6). Counted without branches, as the vector quantizers count it.
inline int nearest_q4n_level(float v) {
  const float a = std::fabs(v);
  int k = 0;
  for (const float m : kQ4NMids) k += a > m;
  return v > 0 ? 8 + k : 7 - k;
}

// q4n's scale search, as iq4_nl's quantizer: candidate scales d = amax / L put the largest
// magnitude at L = 79, 83, ..., 135 (inside the outermost level, or just past it). Each takes the
// codes nearest x / d and their least-squares scale Σ x q / Σ q²; the candidate of least squared
// error (greatest (Σ x q)² / Σ q²) wins. Its scale, kept within the candidates' range so every
// value's error stays bounded (kQ4NMaxError), is rounded to FP16 and the codes taken nearest
// against it.
constexpr int kQ4NFirstTry = 79, kQ4NTryStep = 4, kQ4NTries = 15;
constexpr int kQ4NLastTry = kQ4NFirstTry + kQ4NTryStep * (kQ4NTries - 1);
// Bound of |x - x̂| / amax: half the outermost gap of levels at the largest scale, amax / 79,
// or what lies past the outermost level at the smallest, amax / 135; plus FP16 rounding of d.
constexpr double kQ4NMaxError = (kQ4NLevels[15] - kQ4NLevels[14]) / (2.0 * kQ4NFirstTry) + 0x1p-9;

// The search's bookkeeping, shared by the reference and the vector quantizers. The sums Σ x q
// are taken over fixed-point copies of the values, x / amax * kFixedOne truncated to int32 (at
// most 2^15 in magnitude, also for a subnormal amax; |Σ x q| <= 2^15 * 127 * kMaxGroup < 2^31),
// so they are exact in any order of summation and every rung picks the same candidate and scale.
class Q4NSearch {
 public:
  static constexpr float kFixedOne = 32768.0f;

  explicit Q4NSearch(float amax) : amax_(amax) {}
  bool empty() const { return !(amax_ > 0); }
  float amax() const { return amax_; }
  float inverse_scale(int t) const {  // 1 / d of candidate t
    return static_cast<float>(kQ4NFirstTry + kQ4NTryStep * t) / amax_;
  }
  void add(int32_t sxq, int32_t sqq) {  // a candidate's Σ x q (fixed point) and Σ q²
    if (static_cast<__int128>(sxq) * sxq * best_sqq_ >
        static_cast<__int128>(best_sxq_) * best_sxq_ * sqq)
      best_sxq_ = sxq, best_sqq_ = sqq;
  }
  double scale() const {  // the winner's least-squares d, within the candidates' range
    const double d = static_cast<double>(best_sxq_) / best_sqq_ * amax_ / kFixedOne;
    return std::clamp(d, static_cast<double>(amax_) / kQ4NLastTry,
                      static_cast<double>(amax_) / kQ4NFirstTry);
  }

 private:
  float amax_;
  int32_t best_sxq_ = 0, best_sqq_ = 1;
};

inline void quantize_group_q4n(const float* x, int group, uint8_t* block) {
  float amax = 0;
  for (int i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[i]));
  Q4NSearch search(amax);
  int32_t fixed[kMaxGroup];
  for (int i = 0; i < group && !search.empty(); ++i)
    fixed[i] = static_cast<int32_t>(x[i] / amax * Q4NSearch::kFixedOne);
  for (int t = 0; t < kQ4NTries && !search.empty(); ++t) {
    const float id = search.inverse_scale(t);
    int32_t sxq = 0, sqq = 0;
    for (int i = 0; i < group; ++i) {
      const int32_t q = kQ4NLevels[nearest_q4n_level(x[i] * id)];
      sxq += fixed[i] * q;
      sqq += q * q;
    }
    search.add(sxq, sqq);
  }
  const float d = store_scale(block, static_cast<float>(search.scale()));
  const float id = d != 0 ? 1.0f / d : 0.0f;
  uint8_t* qs = block + sizeof(Scale);
  std::fill_n(qs, group / 2, uint8_t{0});
  for (int i = 0; i < group; ++i) set_stored<Q4N>(qs, group, i, nearest_q4n_level(x[i] * id));
}

// Reference codec of one group of `group` values (a block of format F).
template <class F>
inline void quantize_group(const float* x, int group, uint8_t* block) {
  if constexpr (F::kCodebook) {
    quantize_group_q4n(x, group, block);
  } else {
    float lo = F::kAbsScale ? 0.0f : x[0], hi = F::kAbsScale ? 0.0f : x[0];
    for (int i = 0; i < group; ++i) {
      if constexpr (F::kAbsScale) {
        hi = std::max(hi, std::fabs(x[i]));
      } else {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
      }
    }
    const GroupScales s = store_group_scales<F>(lo, hi, block);
    encode_group<F>(x, group, s.d, s.m, block + F::kHeaderBytes);
  }
}

template <class F>
inline void dequantize_group(const uint8_t* block, int group, float* x) {
  const float d = load_scale(block), m = F::kSymmetric ? 0.0f : load_scale(block + sizeof(Scale));
  const uint8_t* qs = block + F::kHeaderBytes;
  for (int i = 0; i < group; ++i) {
    const auto q = static_cast<float>(get_code<F>(qs, group, i));
    x[i] = F::kSymmetric ? d * q : m + d * q;
  }
}

}  // namespace kvrt::kv
