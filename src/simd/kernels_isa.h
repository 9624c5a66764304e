// The per-ISA tables; each lives in kernels_<isa>.cc, compiled only where the build targets it.
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd {
namespace avx512 { const Kernels& table(); }
namespace avx2 { const Kernels& table(); }
namespace avx2::tiles {  // tile kernels of every quantized format, kernels_avx2_int.cc
void install(Kernels& table);
void acc(kv::Format format, const AccArgs& a);
}  // namespace avx2::tiles
namespace avx512vnni { void install(Kernels& table); }  // sets dot and acc of every quantized format
bool cpu_has_avx512_vnni();
namespace neon { const Kernels& table(); }
namespace neon::tiles { void install(Kernels& table); }  // tile kernels of every quantized format, kernels_neon_int.cc
}  // namespace kvrt::simd
