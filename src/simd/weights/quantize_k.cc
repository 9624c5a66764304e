// kvrt's encoders of the K types (the GGUF writer of tools/synth_model and tests): each sub-block
// gets a least-squares scale (and min) for its codes, the sub-block scales are quantized against
// the super-block's f16 scale(s), and the codes are rounded again on the scales as stored, so
// decoding (weights/codecs_k.cc) gives the nearest values the stored scales allow. Not llama.cpp's
// search (which weighs values by importance); files it writes decode the same way.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "simd/weights/blocks.h"
#include "simd/weights/codecs.h"

namespace kvrt::simd::ref {
namespace {

int nearest(float v) { return int(std::lround(v)); }
float h(uint16_t bits) { return f16_to_f32(bits); }

// x[0..n) ≈ scale * q - min with q in 0..nmax and min >= 0: starts from the range, then
// alternates rounding and a least-squares fit of (scale, min) while the error falls.
void fit_affine(const float* x, int n, int nmax, float& scale, float& min) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  scale = (hi - lo) / float(nmax);
  min = -lo;
  if (scale == 0.0f) return;
  float best = INFINITY;
  for (int iter = 0; iter < 4; ++iter) {
    float sl = 0, sll = 0, sx = 0, sxl = 0, err = 0;
    for (int i = 0; i < n; ++i) {
      const float l = float(std::clamp(nearest((x[i] + min) / scale), 0, nmax));
      err += (scale * l - min - x[i]) * (scale * l - min - x[i]);
      sl += l, sll += l * l, sx += x[i], sxl += x[i] * l;
    }
    if (err >= best) break;
    best = err;
    const float det = float(n) * sll - sl * sl;
    if (det <= 0.0f) break;
    float a = (float(n) * sxl - sx * sl) / det, b = (sx - a * sl) / float(n);  // x ≈ a l + b
    if (b > 0.0f) b = 0.0f, a = sxl / sll;
    if (a <= 0.0f) break;
    scale = a, min = -b;
  }
}

// x[0..n) ≈ scale * q with q in -lo_code..hi_code: candidate scales around max / -lo_code, each
// refitted by least squares; the one with the least error.
float fit_symmetric(const float* x, int n, int lo_code, int hi_code) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  }
  if (amax == 0.0f) return 0.0f;
  float best_err = INFINITY, best = 0.0f;
  for (int t = -4; t <= 4; ++t) {
    const float s = max / -(float(lo_code) + 0.1f * float(t));
    float sxl = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const float l = float(std::clamp(nearest(x[i] / s), -lo_code, hi_code));
      sxl += x[i] * l, sll += l * l;
    }
    const float fit = sll > 0.0f ? sxl / sll : s;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float l = float(std::clamp(nearest(x[i] / fit), -lo_code, hi_code));
      err += (fit * l - x[i]) * (fit * l - x[i]);
    }
    if (err < best_err) best_err = err, best = fit;
  }
  return best;
}

// Unsigned sub-block scales v[0..n) as codes 0..top on an f16 super-scale; returns its bits.
uint16_t quantize_scales(const float* v, int n, int top, uint8_t* codes) {
  float vmax = 0.0f;
  for (int i = 0; i < n; ++i) vmax = std::max(vmax, v[i]);
  const uint16_t bits = f32_to_f16(vmax / float(top));
  const float d = h(bits);
  for (int i = 0; i < n; ++i)
    codes[i] = uint8_t(d > 0.0f ? std::clamp(nearest(v[i] / d), 0, top) : 0);
  return bits;
}

// Signed sub-block scales as codes -(top + 1)..top: the largest magnitude maps to -(top + 1).
uint16_t quantize_signed_scales(const float* v, int n, int top, int* codes) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(v[i]) > amax) amax = std::fabs(v[i]), max = v[i];
  }
  const uint16_t bits = f32_to_f16(max / -float(top + 1));
  const float d = h(bits);
  for (int i = 0; i < n; ++i)
    codes[i] = d != 0.0f ? std::clamp(nearest(v[i] / d), -(top + 1), top) : 0;
  return bits;
}

// Codes of n values on the stored affine scale dl and min ml (x ≈ dl * q - ml).
void affine_codes(const float* x, int n, float dl, float ml, int nmax, uint8_t* q) {
  for (int i = 0; i < n; ++i)
    q[i] = uint8_t(dl > 0.0f ? std::clamp(nearest((x[i] + ml) / dl), 0, nmax) : 0);
}

// Codes q + lo_code (0..lo_code + hi_code) of n values on the stored scale dl.
void symmetric_codes(const float* x, int n, float dl, int lo_code, int hi_code, uint8_t* q) {
  for (int i = 0; i < n; ++i)
    q[i] = uint8_t((dl != 0.0f ? std::clamp(nearest(x[i] / dl), -lo_code, hi_code) : 0) + lo_code);
}

// The 12 bytes of Q4_K / Q5_K scales and mins (inverse of k_scale_min).
void pack_k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = uint8_t(m[j] | ((m[j + 4] >> 4) << 6));
    out[j + 8] = uint8_t((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// The affine K types (Q4_K, Q5_K): 8 sub-blocks of 32, 6-bit scales and mins; codes [256].
void affine_k_block(const float* x, int nmax, uint16_t& d_bits, uint16_t& dmin_bits,
                    uint8_t* scales12, uint8_t* q) {
  float scale[8], min[8];
  for (int s = 0; s < 8; ++s) fit_affine(x + 32 * s, 32, nmax, scale[s], min[s]);
  uint8_t sc[8], mc[8];
  d_bits = quantize_scales(scale, 8, 63, sc);
  dmin_bits = quantize_scales(min, 8, 63, mc);
  pack_k_scales(sc, mc, scales12);
  for (int s = 0; s < 8; ++s)
    affine_codes(x + 32 * s, 32, h(d_bits) * float(sc[s]), h(dmin_bits) * float(mc[s]), nmax,
                 q + 32 * s);
}

}  // namespace

void q2_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ2_K& b = reinterpret_cast<BlockQ2_K*>(dst)[i];
    float scale[16], min[16];
    for (int s = 0; s < 16; ++s) fit_affine(x + 16 * s, 16, 3, scale[s], min[s]);
    uint8_t sc[16], mc[16], q[kQK_K];
    b.d = quantize_scales(scale, 16, 15, sc);
    b.dmin = quantize_scales(min, 16, 15, mc);
    for (int s = 0; s < 16; ++s) {
      b.scales[s] = uint8_t(sc[s] | (mc[s] << 4));
      affine_codes(x + 16 * s, 16, h(b.d) * float(sc[s]), h(b.dmin) * float(mc[s]), 3, q + 16 * s);
    }
    std::memset(b.qs, 0, sizeof b.qs);
    for (int v = 0; v < kQK_K; ++v) {  // v = 128n + 32j + 16half + l
      const int n2 = v / 128, j = (v % 128) / 32, rest = v % 32;
      b.qs[32 * n2 + rest] = uint8_t(b.qs[32 * n2 + rest] | (q[v] << (2 * j)));
    }
  }
}

void q3_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ3_K& b = reinterpret_cast<BlockQ3_K*>(dst)[i];
    float scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = fit_symmetric(x + 16 * s, 16, 4, 3);
    int sc[16];
    b.d = quantize_signed_scales(scale, 16, 31, sc);
    uint8_t q[kQK_K];
    std::memset(b.scales, 0, sizeof b.scales);
    for (int s = 0; s < 16; ++s) {
      symmetric_codes(x + 16 * s, 16, h(b.d) * float(sc[s]), 4, 3, q + 16 * s);
      const int biased = sc[s] + 32;  // 0..63
      b.scales[s % 8] = uint8_t(b.scales[s % 8] | ((biased & 0xF) << (4 * (s / 8))));
      b.scales[8 + s % 4] = uint8_t(b.scales[8 + s % 4] | ((biased >> 4) << (2 * (s / 4))));
    }
    std::memset(b.qs, 0, sizeof b.qs);
    std::memset(b.hmask, 0, sizeof b.hmask);
    for (int v = 0; v < kQK_K; ++v) {  // code q = low 2 bits + 4 * high bit
      const int n2 = v / 128, j = (v % 128) / 32, rest = v % 32;
      b.qs[32 * n2 + rest] = uint8_t(b.qs[32 * n2 + rest] | ((q[v] & 3) << (2 * j)));
      b.hmask[rest] = uint8_t(b.hmask[rest] | ((q[v] >> 2) << (4 * n2 + j)));
    }
  }
}

void q4_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ4_K& b = reinterpret_cast<BlockQ4_K*>(dst)[i];
    uint8_t q[kQK_K];
    affine_k_block(x, 15, b.d, b.dmin, b.scales, q);
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l)
        b.qs[32 * k + l] = uint8_t(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
    }
  }
}

void q5_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ5_K& b = reinterpret_cast<BlockQ5_K*>(dst)[i];
    uint8_t q[kQK_K];
    affine_k_block(x, 31, b.d, b.dmin, b.scales, q);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l)
        b.qs[32 * k + l] = uint8_t((q[64 * k + l] & 0xF) | ((q[64 * k + 32 + l] & 0xF) << 4));
    }
    for (int v = 0; v < kQK_K; ++v)
      b.qh[v % 32] = uint8_t(b.qh[v % 32] | ((q[v] >> 4) << (v / 32)));
  }
}

void q6_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ6_K& b = reinterpret_cast<BlockQ6_K*>(dst)[i];
    float scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = fit_symmetric(x + 16 * s, 16, 32, 31);
    int sc[16];
    b.d = quantize_signed_scales(scale, 16, 127, sc);
    uint8_t q[kQK_K];
    for (int s = 0; s < 16; ++s) {
      b.scales[s] = int8_t(sc[s]);
      symmetric_codes(x + 16 * s, 16, h(b.d) * float(sc[s]), 32, 31, q + 16 * s);
    }
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int v = 0; v < kQK_K; ++v) {  // v = 128n + 32k + l
      const int n2 = v / 128, k = (v % 128) / 32, l = v % 32;
      uint8_t& low = b.ql[64 * n2 + 32 * (k % 2) + l];
      low = uint8_t(low | ((q[v] & 0xF) << (4 * (k / 2))));
      b.qh[32 * n2 + l] = uint8_t(b.qh[32 * n2 + l] | ((q[v] >> 4) << (2 * k)));
    }
  }
}

// Q8_K (activations), as ggml's quantize_row_q8_K_ref: d = max / -127 for the signed value of
// largest magnitude, codes round(x / d) to nearest even (ggml's nearest_int) capped at 127, and the
// sums of each 16 codes.
void q8_k_from_float(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ8_K b{};
    float amax = 0.0f, max = 0.0f;
    for (int v = 0; v < kQK_K; ++v) {
      if (std::fabs(x[v]) > amax) amax = std::fabs(x[v]), max = x[v];
    }
    if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int v = 0; v < kQK_K; ++v)
        b.qs[v] = int8_t(std::min(127, int(std::nearbyint(iscale * x[v]))));
      b.d = 1.0f / iscale;
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
      b.bsums[g] = int16_t(sum);
    }
    std::memcpy(dst + i * int64_t(sizeof(BlockQ8_K)), &b, sizeof b);
  }
}

}  // namespace kvrt::simd::ref
