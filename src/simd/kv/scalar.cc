// Scalar twins of every kernel: the oracle of the kernel tests and the fallback on any CPU.
#include "simd/kernels_scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "kv/blocks.h"
#include "kv/tiles.h"

namespace kvrt::simd::scalar {

void dequantize_tile(const kv::TileFormat& f, const uint8_t* tile, float* x) {
  for (int t = 0; t < kv::kTileTokens; ++t) kv::tile_load_row(f, tile, t, x + t * f.n);
}

// Same operations in the same order as the SIMD tile dots: exact integer group sums, then
// s = fma(Σ c q̃, d_k d_q, s) (and s = fma(m_k, Σ q, s) for asymmetric formats) group after group.
void dot_tiles(const kv::TileFormat& f, const DotArgs& a) {
  const int ng = f.n_groups();
  for (int t = 0; t < a.n_rows; ++t) {
    const uint8_t* tile = a.rows + (t / kv::kTileTokens) * a.row_stride;
    const int tt = t % kv::kTileTokens;
    for (int i = 0; i < a.n_q; ++i) {
      float s = 0;
      for (int b = 0; b < ng; ++b) {
        int32_t dot = 0;
        for (int k = b * a.group; k < (b + 1) * a.group; ++k)
          dot += kv::tile_code(f, tile, tt, k) * a.qc->c[i * a.n + k];
        s = std::fma(static_cast<float>(dot), kv::tile_scale(f, tile, b, tt) * a.qc->d[i * ng + b],
                     s);
        if (f.planes == 2) s = std::fma(kv::tile_min(f, tile, b, tt), a.qc->sum[i * ng + b], s);
      }
      a.scores[i * a.scores_stride + t] = s;
    }
  }
}

namespace {

// Tokens [t0, t1) of the value tiles, one kAccChunk run (see AccArgs).
void acc_tiles_run(const kv::TileFormat& f, const AccArgs& a, int t0, int t1) {
  const int ng = f.n_groups();
  const auto tile_of = [&](int t) { return a.rows + (t / kv::kTileTokens) * a.row_stride; };
  for (int b = 0; b < ng; ++b) {
    float dmax = 0;
    for (int t = t0; t < t1; ++t)
      dmax = std::max(dmax, std::fabs(kv::tile_scale(f, tile_of(t), b, t % kv::kTileTokens)));
    for (int i = 0; i < a.n_q; ++i) {
      const float* p = a.p + i * a.p_stride;
      float pmax = 0, msum = 0;
      for (int t = t0; t < t1; ++t) pmax = std::max(pmax, std::fabs(p[t]));
      const float range = pmax * dmax, sw = range / 32767.0f,
                  inv = range > 0 ? 32767.0f / range : 0.0f;
      int32_t dot[kv::kMaxGroup] = {};  // this group's sums
      for (int t = t0; t < t1; ++t) {
        const int tt = t % kv::kTileTokens;
        const auto w =
            static_cast<int32_t>(std::nearbyint(p[t] * kv::tile_scale(f, tile_of(t), b, tt) * inv));
        for (int k = 0; k < a.group; ++k)
          dot[k] += w * kv::tile_code(f, tile_of(t), tt, b * a.group + k);
        if (f.planes == 2) msum += p[t] * kv::tile_min(f, tile_of(t), b, tt);
      }
      float* o = a.acc + i * a.acc_stride;
      for (int k = 0; k < a.group; ++k)
        o[b * a.group + k] = std::fma(static_cast<float>(dot[k]), sw, o[b * a.group + k]) + msum;
    }
  }
}

}  // namespace

void acc_tiles(const kv::TileFormat& f, const AccArgs& a) {
  for (int t0 = 0; t0 < a.n_rows; t0 += kAccChunk)
    acc_tiles_run(f, a, t0, std::min(a.n_rows, t0 + kAccChunk));
}

// The q8 code of kv/blocks.h against an FP32 scale: queries are not stored, so their scale keeps
// full precision.
void quantize_queries(const float* q, int n_q, size_t q_stride, int n, int group,
                      const QueryBuffers& out) {
  const int ng = n / group;
  for (int i = 0; i < n_q; ++i) {
    for (int b = 0; b < ng; ++b) {
      const float* x = q + i * q_stride + b * group;
      int8_t* c = out.c + i * n + b * group;
      float amax = 0, sum = 0;
      for (int k = 0; k < group; ++k) amax = std::max(amax, std::fabs(x[k]));
      const float d = amax / static_cast<float>(kv::Q8::kMaxCode);
      kv::encode_group<kv::Q8>(x, group, d, 0.0f, reinterpret_cast<uint8_t*>(c));
      int32_t csum = 0;
      for (int k = 0; k < group; ++k) {
        sum += x[k];
        csum += c[k];
      }
      out.d[i * ng + b] = d;
      out.sum[i * ng + b] = sum;
      out.csum[i * ng + b] = csum;
    }
  }
}

void acc(const AccArgs& a) {
  for (int t = 0; t < a.n_rows; ++t) {
    const auto* x = reinterpret_cast<const float*>(a.rows + t * a.row_stride);
    for (int i = 0; i < a.n_q; ++i) {
      const float p = a.p[i * a.p_stride + t];
      float* o = a.acc + i * a.acc_stride;
      for (int d = 0; d < a.n; ++d) o[d] += p * x[d];
    }
  }
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void geglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    gate[i] =
        0.5f * x * (1.0f + std::tanh(kGeluSqrt2OverPi * x * (1.0f + kGeluCoef * x * x))) * up[i];
  }
}

float exp_sum(float* x, int n, float max) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - max));
  return sum;
}

void hadamard(float* x, int n) {
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float u = x[j], v = x[j + h];
        x[j] = u + v;
        x[j + h] = u - v;
      }
    }
  }
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= s;
}

void gemm(const GemmArgs& g) {
  for (int i = 0; i < g.n_i; ++i) {
    for (int r = 0; r < g.n_r; ++r) {
      float& c = g.c[static_cast<size_t>(i) * g.n_r + r];
      float sum = g.accumulate ? c : 0.0f;
      for (int k = 0; k < g.n_k; ++k)
        sum += g.b[i * g.b_i + k * g.b_k] * g.a[static_cast<size_t>(k) * g.n_r + r];
      c = sum;
    }
  }
}

void softmax(const SoftmaxArgs& a) {
  for (int r = 0; r < a.n_r; ++r) {
    float m = a.m[r];
    for (int j = 0; j < a.n_j; ++j) m = std::max(m, a.s[static_cast<size_t>(j) * a.n_r + r]);
    const float base = m == -INFINITY ? 0.0f : m;
    const float corr = m == -INFINITY ? 1.0f : std::exp(a.m[r] - base);
    float sum = 0;
    for (int j = 0; j < a.n_j; ++j) {
      float& s = a.s[static_cast<size_t>(j) * a.n_r + r];
      sum += (s = std::exp(s - base));
    }
    a.l[r] = a.l[r] * corr + sum;
    a.m[r] = m;
    for (int d = 0; d < a.n_d; ++d) a.o[static_cast<size_t>(d) * a.n_r + r] *= corr;
  }
}

// vdpbf16ps: c + hi · hi + lo · lo, each product exact in f32 (its denormals flushed, which the
// twin does not do: the tests' values have none).
void gemm_bf16(const GemmBf16Args& g) {
  for (int i = 0; i < g.n_i; ++i) {
    for (int r = 0; r < g.n_r; ++r) {
      float& c = g.c[static_cast<size_t>(i) * g.n_r + r];
      float sum = g.accumulate ? c : 0.0f;
      for (int p = 0; p < g.n_kp; ++p) {
        const uint32_t a = g.a[static_cast<size_t>(p) * g.n_r + r], b = g.b[i * g.b_i + p * g.b_k];
        sum += bf16_to_f32(uint16_t(a >> 16)) * bf16_to_f32(uint16_t(b >> 16));
        sum += bf16_to_f32(uint16_t(a)) * bf16_to_f32(uint16_t(b));
      }
      c = sum;
    }
  }
}

void bf16_pairs(const float* x0, const float* x1, int step, int n, uint32_t* dst) {
  for (int i = 0; i < n; ++i)
    dst[i] = f32_to_bf16(x0[i * step]) | uint32_t(x1 ? f32_to_bf16(x1[i * step]) : 0) << 16;
}

void install(Kernels& k) {
  k.dot = dot<F32Rows>;
  k.acc = acc;
  k.quantize_queries = quantize_queries;
  kv::for_each_quant_format([&](auto f) {
    k.format[static_cast<int>(decltype(f)::kFormat)] = format_kernels<decltype(f)>();
  });
  k.exp_sum = exp_sum;
  k.swiglu = swiglu;
  k.geglu = geglu;
  k.hadamard = hadamard;
  k.gemm = gemm;
  k.softmax = softmax;
  k.gemm_bf16 = gemm_bf16;
  k.bf16_pairs = bf16_pairs;
}

}  // namespace kvrt::simd::scalar
