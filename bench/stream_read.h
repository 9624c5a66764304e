// The plain read beside the benchmarks' GB/s: what a kernel that reads its bytes once can reach
// from the memory level that holds them.
#pragma once

#include <cstddef>
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvrt::bench {

// Σ p[0..n) as a streaming read: a 64-byte line a step into independent sums, read 2 KiB ahead in
// software as kvrt's weight kernels read W, with the widest loads the CPU has (AVX-512 where it
// runs: generic code read 180 MiB at 16.3 GB/s where zmm loads read 22.2, Intel Xeon).
#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline uint64_t stream_sum_avx512(const uint64_t* p, size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __builtin_prefetch(p + i + 256);
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 8));
  }
  uint64_t s = _mm512_reduce_add_epi64(_mm512_add_epi64(a, b));
  for (; i < n; ++i) s += p[i];
  return s;
}
#endif

inline uint64_t stream_sum(const uint64_t* p, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return stream_sum_avx512(p, n);
#endif
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __builtin_prefetch(p + i + 256);
    for (int u = 0; u < 8; ++u) s[u] += p[i + u];
  }
  for (; i < n; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

}  // namespace kvrt::bench
