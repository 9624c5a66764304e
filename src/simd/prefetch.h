// Software prefetch of W ahead of the kernels that stream it. A product's W rows are one
// sequential stream from memory, yet the hardware prefetchers alone left the kernels waiting on
// it: at each step a kernel asks for the lines a fixed distance ahead. kAhead, 2 KiB, was the best
// of the distances tried (1 to 8 KiB) for the Q4_0 and F16 decode kernels (bench_matmul, kvrt
// bench) and the prefill widening (a streaming test of F16 -> bf16: 9.2 GB/s without, 11.0 with);
// the K-quant decode kernels read 8 KiB ahead (simd/weights/decode_k_x86-inl.h). Included by the
// kernel files before their ISA namespaces.
#pragma once

#include <cstddef>

namespace kvrt::simd {

inline constexpr size_t kAhead = 2048;

// Asks for the lines of the kBytes that start kDistance bytes past p, for reading, into every
// cache level (prefetcht0 on x86), one line per 64 bytes from the first; kLastLine: the line of
// the last byte too, for a range that is not line-aligned and that the next call does not cover.
template <size_t kBytes, bool kLastLine = false, size_t kDistance = kAhead>
inline void read_ahead(const void* p) {
  const char* from = static_cast<const char*>(p) + kDistance;
  for (size_t l = 0; l < kBytes; l += 64) __builtin_prefetch(from + l);
  if constexpr (kLastLine) __builtin_prefetch(from + kBytes - 1);
}

}  // namespace kvrt::simd
