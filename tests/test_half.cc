// f16/bf16 <-> f32 conversions: exhaustive over all 16-bit patterns, with expectations derived
// from the IEEE definitions (value formula, midpoints between neighbours, nearest-value search).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "common/half.h"

namespace {

bool f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

// The value of a finite f16 from its definition: (-1)^s * m * 2^(e - 25), m with implicit bit.
double f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  const double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000u) ? -v : v;
}

// Checks that `h` is the correctly rounded f16 of x by comparing with its two neighbours.
void check_nearest_f16(float x, uint16_t h) {
  const double err = std::fabs(double(x) - f16_value(h));
  for (int step : {-1, 1}) {
    const uint16_t mag = uint16_t((h & 0x7fffu) + step);
    if ((h & 0x7fffu) == 0 && step < 0) continue;
    if (mag >= 0x7c00u) continue;
    const double other = std::fabs(double(x) - f16_value(uint16_t((h & 0x8000u) | mag)));
    REQUIRE(err <= other);
    if (err == other) REQUIRE((h & 1u) == 0);  // ties to even
  }
}

float next_up(float x) { return std::nextafter(x, std::numeric_limits<float>::infinity()); }
float next_down(float x) { return std::nextafter(x, -std::numeric_limits<float>::infinity()); }

}  // namespace

TEST_CASE("f16_to_f32 matches the IEEE definition for every bit pattern") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = uint16_t(i);
    const float f = kvrt::f16_to_f32(h);
    if ((h & 0x7c00u) == 0x7c00u) {
      if (f16_is_nan(h)) {
        REQUIRE(std::isnan(f));
      } else {
        REQUIRE(std::isinf(f));
        REQUIRE(std::signbit(f) == bool(h & 0x8000u));
      }
      continue;
    }
    REQUIRE(double(f) == f16_value(h));
    REQUIRE(std::signbit(f) == bool(h & 0x8000u));  // includes -0
  }
}

TEST_CASE("f32_to_f16 round-trips every non-NaN f16 and keeps NaN") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = uint16_t(i);
    const uint16_t back = kvrt::f32_to_f16(kvrt::f16_to_f32(h));
    if (f16_is_nan(h)) REQUIRE(f16_is_nan(back));
    else REQUIRE(back == h);
  }
}

TEST_CASE("f32_to_f16 rounds every midpoint between neighbours to even") {
  // Consecutive positive finite f16 a < b: their midpoint is exact in f32.
  for (uint32_t a = 0; a < 0x7bffu; ++a) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t lo = uint16_t(a | sign), hi = uint16_t((a + 1) | sign);
      const float mid = float((f16_value(lo) + f16_value(hi)) / 2);
      const uint16_t even = (a & 1u) ? hi : lo;
      REQUIRE(kvrt::f32_to_f16(mid) == even);
      const float toward_lo = sign ? next_up(mid) : next_down(mid);
      const float toward_hi = sign ? next_down(mid) : next_up(mid);
      REQUIRE(kvrt::f32_to_f16(toward_lo) == lo);
      REQUIRE(kvrt::f32_to_f16(toward_hi) == hi);
    }
  }
}

TEST_CASE("f32_to_f16 known values, overflow and underflow") {
  CHECK(kvrt::f32_to_f16(1.0f) == 0x3c00);
  CHECK(kvrt::f32_to_f16(-2.0f) == 0xc000);
  CHECK(kvrt::f32_to_f16(0.1f) == 0x2e66);
  CHECK(kvrt::f32_to_f16(65504.0f) == 0x7bff);
  CHECK(kvrt::f32_to_f16(65519.996f) == 0x7bff);  // just below the midpoint to 2^16
  CHECK(kvrt::f32_to_f16(65520.0f) == 0x7c00);    // the midpoint ties to even: inf
  CHECK(kvrt::f32_to_f16(1e10f) == 0x7c00);
  CHECK(kvrt::f32_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(kvrt::f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(kvrt::f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // half of it ties to even zero
  CHECK(kvrt::f32_to_f16(next_up(std::ldexp(1.0f, -25))) == 0x0001);
  CHECK(kvrt::f32_to_f16(-std::ldexp(1.0f, -26)) == 0x8000);
  CHECK(kvrt::f32_to_f16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(f16_is_nan(kvrt::f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(f16_is_nan(kvrt::f32_to_f16(std::bit_cast<float>(0x7f800001u))));  // low payload only
}

TEST_CASE("f32_to_f16 is the nearest f16 for a spread of f32 bit patterns") {
  // Strided over all 2^32 patterns plus a dense sweep of the subnormal/normal boundary.
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4093) {
    const float x = std::bit_cast<float>(uint32_t(bits));
    if (!std::isfinite(x) || std::fabs(x) >= 65520.0f) continue;
    check_nearest_f16(x, kvrt::f32_to_f16(x));
  }
  for (uint32_t bits = 0x33000000u; bits < 0x38800000u; bits += 97) {
    const float x = std::bit_cast<float>(bits);
    check_nearest_f16(x, kvrt::f32_to_f16(x));
    check_nearest_f16(-x, kvrt::f32_to_f16(-x));
  }
}

TEST_CASE("bf16 widening is exact and narrowing round-trips every non-NaN bf16") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = uint16_t(i);
    const float f = kvrt::bf16_to_f32(h);
    REQUIRE(std::bit_cast<uint32_t>(f) == uint32_t(h) << 16);
    if (bf16_is_nan(h)) REQUIRE(bf16_is_nan(kvrt::f32_to_bf16(f)));
    else REQUIRE(kvrt::f32_to_bf16(f) == h);
  }
}

TEST_CASE("f32_to_bf16 rounds to nearest even between every pair of neighbours") {
  for (uint32_t a = 0; a < 0x7f80u; ++a) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint32_t lo = a | sign;
      // The f32 patterns between lo and lo+1 (same sign): low half below, at and above 0x8000.
      const uint32_t base = lo << 16;
      REQUIRE(kvrt::f32_to_bf16(std::bit_cast<float>(base | 0x7fffu)) == lo);
      REQUIRE(kvrt::f32_to_bf16(std::bit_cast<float>(base | 0x8001u)) == lo + 1);
      REQUIRE(kvrt::f32_to_bf16(std::bit_cast<float>(base | 0x8000u)) == ((a & 1u) ? lo + 1 : lo));
    }
  }
  CHECK(kvrt::f32_to_bf16(1.0f) == 0x3f80);
  CHECK(kvrt::f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(kvrt::f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(kvrt::f32_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(bf16_is_nan(kvrt::f32_to_bf16(std::bit_cast<float>(0x7f800001u))));
}
