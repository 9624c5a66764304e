// The per-ISA tables; each lives in kernels_<isa>.cc, compiled only where the build targets it.
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd {
namespace avx512 { const Kernels& table(); }
namespace avx2 { const Kernels& table(); }
namespace avx2::tiles {  // q8 / q4 tile kernels of kernels_avx2_int.cc
void install(Kernels& table);
void acc(Codec codec, const AccArgs& a);
}  // namespace avx2::tiles
namespace avx512vnni { void install(Kernels& table); }  // sets the q8 / q4 tile kernels
bool cpu_has_avx512_vnni();
namespace neon { const Kernels& table(); }
namespace neon::tiles { void install(Kernels& table); }  // q8 / q4 tile kernels of kernels_neon_int.cc
}  // namespace kvrt::simd
