// Scalar conversions between IEEE binary16 (f16), bfloat16 (bf16) and f32.
// Narrowing rounds to nearest, ties to even; infinities and signs are kept, subnormals are exact,
// NaN stays NaN (quiet, top payload bits kept). Widening is exact.
#pragma once

#include <bit>
#include <cstdint>

namespace kvrt {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, or NaN with its payload
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal mant * 2^-24: shift the leading one up to the implicit bit.
    uint32_t e = 113;  // f32 biased exponent of 2^-14
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = int(exp) - 127 + 15;             // f16 biased exponent
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // |f| >= 2^16 overflows to inf
  if (e <= 0) {
    if (e < -10) return sign;  // |f| < 2^-25 rounds to zero
    // Result is round(|f| / 2^-24) = round(mant * 2^(e - 14)), with the implicit one added.
    mant |= 0x800000u;
    const int shift = 14 - e;  // 14..24
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal
    return uint16_t(sign | q);
  }
  uint32_t q = (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // a carry may reach inf, correctly
  return uint16_t(sign | q);
}

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace kvrt
