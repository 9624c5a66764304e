// Kernels for aarch64 NEON: kv/row_kernels-inl.h over xsimd::neon64 (4 float lanes).
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <xsimd/xsimd.hpp>

#include "common/half.h"
#include "kv/blocks.h"
#include "simd/kernels_isa.h"
#include "simd/prefetch.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::neon {

#include "simd/batch-inl.h"

// 4 int8 codes, or 4 codes of Bits bits at bit `shift` of 4 bytes, to 4 floats.
template <class A>
inline Vec<A> cvt_i8(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  const int16x8_t h = vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(w)));
  return Vec<A>(vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))));
}

template <class A, int Bits>
inline Vec<A> cvt_codes(const uint8_t* p, int shift) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  const uint32x4_t b = vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)))));
  return Vec<A>(
      vcvtq_f32_u32(vandq_u32(vshlq_u32(b, vdupq_n_s32(-shift)), vdupq_n_u32((1u << Bits) - 1))));
}

// 4 codes of 4 bits at bit `shift` of 4 bytes, as the levels of kv::kQ4NLevels they index (tbl),
// to 4 floats.
template <class A>
inline Vec<A> cvt_levels(const uint8_t* p, int shift) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  const uint8x8_t c =
      vand_u8(vshl_u8(vreinterpret_u8_u32(vdup_n_u32(w)), vdup_n_s8(-shift)), vdup_n_u8(15));
  const int8x8_t q = vqtbl1_s8(vld1q_s8(kv::kQ4NLevels), c);
  return Vec<A>(vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(q)))));
}

// 4 FP16 values (kv::Scale) to 4 floats, exactly (fcvtl, base ARMv8.0; as load_scales of
// kv/qk_tiles_neon-inl.h and the F16 rows of matmul/gemm_tiles-inl.h).
template <class A>
inline Vec<A> cvt_f16(const uint8_t* p) {
  return Vec<A>(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)))));
}

// out[e] = sum of the lanes of v[e] for e < 4.
template <class A>
inline void lane_sums(const Vec<A>* v, float* out) {
  xsimd::haddp(v).store_unaligned(out);
}

#include "simd/kv/row_kernels-inl.h"
#include "simd/matmul/prefill_tiles-inl.h"
#include "simd/kv/row_slots-inl.h"
#include "simd/matmul/gemm_tiles-inl.h"

// The neon rung: the row kernels, the tile kernels of every quantized format (kv/tiles_neon.cc),
// the decode products of the weight types (weights/decode_neon.cc) and the matmul tiles (32
// registers: 16 accumulators plus the loaded rows).
void install(Kernels& t) {
  install_rows<xsimd::neon64>(t);
  tiles::install(t);
  weights::install(t);
  install_matmul<xsimd::neon64, 4, 4>(t, "neon");
}

}  // namespace kvrt::simd::neon
