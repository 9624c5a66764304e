// The rungs of the dispatch ladder (simd/dispatch.cc): each install() overwrites the slots its
// ISA has kernels for, on top of the table the rung below left. Each lives in kernels_<isa>.cc,
// compiled only where the build targets it.
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd {
namespace avx2 {
void install(Kernels& table);
}
namespace avx2::tiles {
void install(Kernels& table);
}  // namespace avx2::tiles
namespace avx2::weights {
void install(Kernels& table);
}  // namespace avx2::weights
namespace avx2::codecs {
void install(Kernels& table);
}  // namespace avx2::codecs
namespace avx512 {
void install(Kernels& table);
}
namespace avx512::codecs {
void install(Kernels& table);
}  // namespace avx512::codecs
namespace avx512vnni {
void install(Kernels& table);
}  // namespace avx512vnni
namespace avx512vnni::weights {
void install(Kernels& table);
}  // namespace avx512vnni::weights
namespace avx512bf16 {
void install(Kernels& table);
}  // namespace avx512bf16
namespace avx512bf16::codecs {
void install(Kernels& table);
}  // namespace avx512bf16::codecs
namespace avx512amx {
void install(Kernels& table);
}  // namespace avx512amx
namespace neon {
void install(Kernels& table);
}
namespace neon::tiles {
void install(Kernels& table);
}  // namespace neon::tiles
namespace neon::weights {
void install(Kernels& table);
}  // namespace neon::weights
namespace neon_dotprod {
void install(Kernels& table);
}  // namespace neon_dotprod
namespace neon_dotprod::weights {
void install(Kernels& table);
}  // namespace neon_dotprod::weights
namespace neon_i8mm {
void install(Kernels& table);
}  // namespace neon_i8mm
}  // namespace kvrt::simd
