#include "simd/weights/codecs.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "common/half.h"
#include "simd/weights/types.h"

namespace kvrt::simd::ref {
namespace {

// Stored values are read and written with memcpy: a reference codec makes no alignment demand.
template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// First index whose 16- or 32-bit pattern has all exponent bits set (infinity or NaN). Chunks
// without an early exit, so the compiler vectorizes the scan of a whole model at load.
template <class T>
int64_t find_all_ones_exponent(const uint8_t* src, int64_t n, T exponent_mask) {
  constexpr int64_t kChunk = 4096;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t i1 = std::min(n, i0 + kChunk);
    int bad = 0;
    for (int64_t i = i0; i < i1; ++i)
      bad |= (load<T>(src + i * sizeof(T)) & exponent_mask) == exponent_mask;
    if (!bad) continue;
    for (int64_t i = i0; i < i1; ++i) {
      if ((load<T>(src + i * sizeof(T)) & exponent_mask) == exponent_mask) return i;
    }
  }
  return -1;
}

}  // namespace

void f32_to_float(const uint8_t* src, int64_t n, float* dst) {
  std::memcpy(dst, src, sizeof(float) * size_t(n));
}

void f16_to_float(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load<uint16_t>(src + 2 * i));
}

void bf16_to_float(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load<uint16_t>(src + 2 * i));
}

void f16_to_bf16(const uint8_t* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(f16_to_f32(load<uint16_t>(src + 2 * i)));
}

void q8_0_to_float(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* block = src + b * sizeof(BlockQ8_0);
    const float d = f16_to_f32(load<uint16_t>(block + offsetof(BlockQ8_0, d)));
    for (int j = 0; j < 32; ++j)
      dst[b * 32 + j] = d * float(int8_t(block[offsetof(BlockQ8_0, qs) + j]));
  }
}

void f32_from_float(const float* x, int64_t n, uint8_t* dst) {
  std::memcpy(dst, x, sizeof(float) * size_t(n));
}

void f16_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) store(dst + 2 * i, f32_to_f16(x[i]));
}

void bf16_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) store(dst + 2 * i, f32_to_bf16(x[i]));
}

void q8_0_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    uint8_t* block = dst + b * sizeof(BlockQ8_0);
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store(block + offsetof(BlockQ8_0, d), f32_to_f16(d));
    for (int j = 0; j < 32; ++j)
      block[offsetof(BlockQ8_0, qs) + j] = uint8_t(int8_t(std::round(x[j] * id)));
  }
}

int64_t f32_find_non_finite(const uint8_t* src, int64_t n) {
  return find_all_ones_exponent<uint32_t>(src, n, 0x7f800000u);
}
int64_t f16_find_non_finite(const uint8_t* src, int64_t n) {
  return find_all_ones_exponent<uint16_t>(src, n, 0x7c00u);
}
int64_t bf16_find_non_finite(const uint8_t* src, int64_t n) {
  return find_all_ones_exponent<uint16_t>(src, n, 0x7f80u);
}

}  // namespace kvrt::simd::ref
