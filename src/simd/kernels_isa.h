// The per-ISA tables; each lives in kernels_<isa>.cc, compiled only where the build targets it.
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd {
namespace avx512 { const Kernels& table(); }
namespace avx2 { const Kernels& table(); }
namespace neon { const Kernels& table(); }
}  // namespace kvrt::simd
