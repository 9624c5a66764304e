// The register tiles of the blocked GEMM and the f16 / bf16 widening over xsimd batches: included
// by kernels_<isa>.cc inside namespace kvrt::simd::<isa>, after xsimd, the ISA's intrinsics
// header and common/half.h, so each ISA's instantiations carry only that file's -m flags.

// One batch of W values as f32: f32 loaded, f16 widened with the conversion instructions of
// this translation unit (exact, as f16_to_float below).
template <class Batch>
Batch load_w(const float* w) {
  return Batch::load_unaligned(w);
}
template <class Batch>
Batch load_w(const uint16_t* w) {
#if defined(__AVX512F__)
  if constexpr (Batch::size == 16)
    return Batch(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
  else
#endif
#if defined(__F16C__)
      if constexpr (Batch::size == 8)
    return Batch(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))));
  else
#endif
#if defined(__aarch64__)
      if constexpr (Batch::size == 4)
    return Batch(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w))));
  else
#endif
    static_assert(Batch::size == 0, "no f16 widening instruction for this batch width");
}
inline float w_value(float w) { return w; }
inline float w_value(uint16_t w) { return f16_to_f32(w); }

// An mr x nr block of dot products: mr + nr vector loads feed mr * nr FMAs per step of k.
template <class Arch, int MR, int NR, class W>
void matmul_tile(const TileArgs<W>& a) {
  using Batch = xsimd::batch<float, Arch>;
  constexpr int64_t kBatch = Batch::size;
  Batch acc[MR][NR];  // [mr][nr] partial sums, one lane per k residue
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = Batch(0.0f);
  int64_t k = 0;
  for (; k + kBatch <= a.n_in; k += kBatch) {
    Batch xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = Batch::load_unaligned(a.x + i * a.x_stride + k);
    for (int j = 0; j < NR; ++j) {
      if (a.next != nullptr) __builtin_prefetch(a.next + j * a.w_stride + k);
      const Batch wv = load_w<Batch>(a.w + j * a.w_stride + k);
      for (int i = 0; i < MR; ++i) acc[i][j] = xsimd::fma(xv[i], wv, acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = xsimd::hadd(acc[i][j]);
      // The tail is an explicit FMA chain: left to the compiler, contraction (and so the last bits)
      // differed between tile instantiations.
      for (int64_t t = k; t < a.n_in; ++t)
        sum = std::fma(a.x[i * a.x_stride + t], w_value(a.w[j * a.w_stride + t]), sum);
      a.y[i * a.y_stride + j] = sum;
    }
  }
}

// Outputs of W rows [j0, j1) of a decode call (f16_decode below), 4 rows of x at a time.
template <class Batch>
void f16_decode_block(const DecodeArgs& a, int j0, int j1) {
  constexpr int64_t kBatch = Batch::size, kStep = 4 * kBatch;
  for (int i0 = 0; i0 < a.m; i0 += 4) {
    const int i1 = std::min(a.m, i0 + 4);
    for (int j = j0; j < j1; ++j) {
      const uint16_t* w = reinterpret_cast<const uint16_t*>(a.w + size_t(j) * a.w_stride);
      for (int i = i0; i < i1; ++i) {
        const float* x = reinterpret_cast<const float*>(a.act + size_t(i) * a.act_stride);
        Batch acc[4] = {Batch(0.0f), Batch(0.0f), Batch(0.0f), Batch(0.0f)};  // k mod kStep
        int64_t k = 0;
        for (; k + kStep <= a.n_in; k += kStep) {
          read_ahead<2 * kStep>(w + k);
          for (int u = 0; u < 4; ++u)
            acc[u] = xsimd::fma(Batch::load_unaligned(x + k + u * kBatch),
                                load_w<Batch>(w + k + u * kBatch), acc[u]);
        }
        for (; k + kBatch <= a.n_in; k += kBatch)
          acc[0] = xsimd::fma(Batch::load_unaligned(x + k), load_w<Batch>(w + k), acc[0]);
        float sum = xsimd::hadd((acc[0] + acc[1]) + (acc[2] + acc[3]));
        for (; k < a.n_in; ++k) sum = std::fma(x[k], w_value(w[k]), sum);
        a.y[size_t(i) * a.y_stride + size_t(j)] = sum;
      }
    }
  }
}

// The decode product of F16 W (the decode slot of F16, DecodeArgs of simd/kernels.h; the
// activation rows are x's F32 rows): one W row at a time, widened in registers, on four
// accumulators that take every fourth batch of k. W is then one sequential stream, read ahead in
// software, and the four FMA chains keep the core ahead of memory; the tiles' mr x nr
// rows at once read nr streams 2 n_in bytes apart, which streamed W from memory more slowly
// (bench_decode's streamed column). The row stays in L1 for up to 4 rows of x; more rows
// (lockstep sessions) go 4 at a time over blocks of W rows that stay in L2, rather than reading
// every row of x for each W row. Each output is the same sum whatever m and whichever thread runs
// its row; the scalar twin sums in k order.
template <class Arch>
void f16_decode(const DecodeArgs& a) {
  constexpr size_t kBlockBytes = 256 * 1024;  // W rows per block: a quarter of L2 or less
  const int block = int(std::max<size_t>(1, kBlockBytes / a.w_stride));
  for (int j0 = 0; j0 < a.n_rows; j0 += block)
    f16_decode_block<xsimd::batch<float, Arch>>(a, j0, std::min(a.n_rows, j0 + block));
}

// f16 -> f32 with the conversion instructions this translation unit was compiled for, a line of
// W per step on x86, read ahead: prefill widens W from DRAM, once per chunk.
inline void f16_to_float(const uint8_t* bytes, int64_t n, float* dst) {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(bytes);
  int64_t k = 0;
#if defined(__AVX512F__)
  for (; k + 32 <= n; k += 32) {
    read_ahead<64>(src + k);
    for (int64_t j = k; j < k + 32; j += 16)
      _mm512_storeu_ps(
          dst + j, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + j))));
  }
#endif
#if defined(__F16C__)
  for (; k + 32 <= n; k += 32) {
    read_ahead<64>(src + k);
    for (int64_t j = k; j < k + 32; j += 8)
      _mm256_storeu_ps(dst + j,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
  }
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(dst + k,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k))));
#endif
#if defined(__aarch64__)
  for (; k + 4 <= n; k += 4)
    vst1q_f32(dst + k, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + k))));
#endif
  for (; k < n; ++k) dst[k] = f16_to_f32(src[k]);
}

// bf16 -> f32 is a 16-bit shift; written so the compiler vectorizes it.
inline void bf16_to_float(const uint8_t* bytes, int64_t n, float* dst) {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(bytes);
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  for (int64_t k = 0; k < n; ++k) d[k] = uint32_t(src[k]) << 16;
}

// f32 -> bf16 rounded to nearest, ties to even, NaN kept quiet: common/half.h's f32_to_bf16 without
// a branch, so the compiler vectorizes it. The activations and W blocks of bf16 products.
inline void bf16_from_float(const float* x, int64_t n, uint8_t* bytes) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(x);
  uint16_t* dst = reinterpret_cast<uint16_t*>(bytes);
  for (int64_t k = 0; k < n; ++k) {
    const uint32_t b = src[k];
    const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    dst[k] = uint16_t((b & 0x7fffffffu) > 0x7f800000u ? (b >> 16) | 0x40u : rounded);
  }
}

// Every tile shape up to MR x NR (the edges of y), the decode product of F16 W, the widening of
// f16 and bf16 rows and the rounding of f32 to bf16.
template <class Arch, int MR, int NR>
void install_matmul(Kernels& t, const char* isa) {
  t.matmul = {isa, MR, NR, {}, {}};
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((t.matmul.fn[I / NR][I % NR] = &matmul_tile<Arch, I / NR + 1, I % NR + 1, float>), ...);
    ((t.matmul.f16[I / NR][I % NR] = &matmul_tile<Arch, I / NR + 1, I % NR + 1, uint16_t>), ...);
  }
  (std::make_integer_sequence<int, MR * NR>{});
  t.weight[weight_index(WeightType::kF16)].to_float = f16_to_float;
  t.weight[weight_index(WeightType::kF16)].decode = {f16_decode<Arch>};
  t.weight[weight_index(WeightType::kBF16)].to_float = bf16_to_float;
  t.weight[weight_index(WeightType::kBF16)].from_float = bf16_from_float;
}
