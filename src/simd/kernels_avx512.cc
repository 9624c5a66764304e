// Kernels for avx512: kernels_body.inc compiled with this file's -m flags (src/simd/meson.build).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kv/blocks.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd::avx512 {

#include "simd/kernels_body_decl.inc"
#include "simd/kernels_x86.inc"
#include "simd/kernels_body.inc"
#include "simd/kernels_table.inc"

// The tile kernels of every quantized format come from kernels_avx2_int.cc, dot and acc from kernels_vnni.cc where
// the CPU has AVX512-VNNI.
const Kernels& table() {
  static const Kernels k = [] {
    Kernels t = make_table<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>, xsimd::sse4_2>("avx512");
    avx2::tiles::install(t);
    if (cpu_has_avx512_vnni()) avx512vnni::install(t);
    return t;
  }();
  return k;
}

}  // namespace kvrt::simd::avx512
