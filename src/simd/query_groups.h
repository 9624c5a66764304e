// The query-head loop shared by the integer tile kernels of every ISA: heads are taken four at a
// time, and each group's count becomes a compile-time constant for the kernel's register arrays.
#pragma once

#include <algorithm>
#include <type_traits>

namespace kvrt::simd {

// fn(std::integral_constant<int, NQ>{}, i0) for i0 = 0, 4, 8, ... < n_q, NQ = min(4, n_q - i0).
template <class Fn>
inline void for_query_groups(int n_q, Fn&& fn) {
  for (int i0 = 0; i0 < n_q; i0 += 4) {
    switch (std::min(4, n_q - i0)) {
      case 1: fn(std::integral_constant<int, 1>{}, i0); break;
      case 2: fn(std::integral_constant<int, 2>{}, i0); break;
      case 3: fn(std::integral_constant<int, 3>{}, i0); break;
      default: fn(std::integral_constant<int, 4>{}, i0); break;
    }
  }
}

}  // namespace kvrt::simd
