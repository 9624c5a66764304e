// Block layouts of the quantized weight types, byte for byte as ggml stores them in GGUF files
// (ggml-common.h). Scales are IEEE binary16 bit patterns (uint16_t) except Q8_K's, which is an
// f32 (an activation format, never stored in files kvrt reads). Every struct has a static_assert
// on its size: the bytes per block of the type's traits row (simd/weights/types.cc).
//
// Value order inside a block, as ggml defines it (the decoders in weight_codecs_*.cc spell it out):
// the 4-bit types of 32 values hold value j in the low nibble of qs[j] and value j + 16 in the
// high nibble; the K types (256 values, "super-blocks") hold sub-blocks of 16 or 32 values, each
// with its own scale (and min) quantized against the super-block's f16 scale(s).
#pragma once

#include <cstdint>
#include <cstring>

namespace kvrt::simd {

constexpr int kQK = 32;     // values per block of the 32-value types
constexpr int kQK_K = 256;  // values per super-block of the K types

// Q8_0: x = d * qs[i]. Also the activation format of the integer products of Q8_0, Q4_0, Q5_0
// and IQ4_NL.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q8_1: as Q8_0 plus s = d * Σ qs: the activation format of Q4_1 and Q5_1 (their min term).
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// Q4_0: x = d * (q - 8), q a nibble.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d * q + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d * (q - 16), q = nibble | bit j of qh (little-endian u32) << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x = d * q + m, q as Q5_0's.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: x = d * kIq4nlValues[q], q a nibble (non-linear 4-bit grid).
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Q2_K: 16 sub-blocks of 16; scales[i] = scale (low nibble) | min (high nibble) of sub-block i;
// x = d * scale * q - dmin * min, q 2 bits.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16 with 6-bit scales s (stored biased by 32 in 12 bytes);
// x = d * (s - 32) * (q - 4 * !high_bit), q the low 2 bits.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32 with 6-bit scale and min (12 bytes, k_scale_min());
// x = d * scale * q - dmin * min, q 4 bits.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: Q4_K with a fifth bit per value in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 with int8 scales; x = d * scale * (q - 32), q 6 bits (4 in ql, 2 in
// qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q8_K: the activation format of the K types' integer products: x = d * qs[i], bsums[j] the sum
// of the codes of values 16j .. 16j + 15 (for the min terms).
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// Q8_K's f32 scale, which a 2-byte aligned block does not promise to align.
inline float q8_k_scale(const BlockQ8_K& b) {
  float d;
  std::memcpy(&d, &b.d, sizeof d);
  return d;
}

// Scale and min of sub-block j (0..7) of Q4_K and Q5_K: 6 bits each, packed in 12 bytes.
inline void k_scale_min(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The 6-bit scale of sub-block i (0..15) of Q3_K, still biased by 32: low 4 bits from bytes 0..7,
// high 2 bits from bytes 8..11.
inline int q3_k_scale(int i, const uint8_t* s) {
  const int low = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | (high << 4);
}

// q3_k_scale of all 16 sub-blocks at once (as ggml's utmp): scale i is byte i % 4 of word i / 4,
// the words little-endian.
inline void q3_k_scale_words(const uint8_t* s, uint32_t w[4]) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, s, sizeof u);
  w[0] = (u[0] & kLow4) | ((u[2] & kLow2) << 4);
  w[1] = (u[1] & kLow4) | (((u[2] >> 2) & kLow2) << 4);
  w[2] = ((u[0] >> 4) & kLow4) | (((u[2] >> 4) & kLow2) << 4);
  w[3] = ((u[1] >> 4) & kLow4) | (((u[2] >> 6) & kLow2) << 4);
}

}  // namespace kvrt::simd
