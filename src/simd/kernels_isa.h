// The rungs of the dispatch ladder (simd/dispatch.cc): each install() overwrites the slots its
// ISA has kernels for, on top of the table the rung below left. Each lives in kernels_<isa>.cc,
// compiled only where the build targets it.
#pragma once

#include "simd/kernels.h"

namespace kvrt::simd {
namespace avx2 { void install(Kernels& table); }
namespace avx2::tiles { void install(Kernels& table); }  // tile kernels of every quantized format, kv/tiles_avx2.cc
namespace avx2::weights { void install(Kernels& table); }  // decode products of the weight types, weights/decode_avx2.cc
namespace avx2::codecs { void install(Kernels& table); }  // to_float of the quantized weight types, weights/to_float_avx2.cc
namespace avx512 { void install(Kernels& table); }
namespace avx512::codecs { void install(Kernels& table); }  // the same on zmm, weights/to_float_avx512.cc
namespace avx512vnni { void install(Kernels& table); }  // sets dot and acc of every quantized format
namespace avx512vnni::weights { void install(Kernels& table); }  // decode products of the weight types, weights/decode_vnni.cc
namespace avx512bf16 { void install(Kernels& table); }  // bf16 prefill tiles, matmul/prefill_bf16_avx512.cc
namespace neon { void install(Kernels& table); }
namespace neon::tiles { void install(Kernels& table); }  // tile kernels of every quantized format, kv/tiles_neon.cc
namespace neon::weights { void install(Kernels& table); }  // decode products of the weight types, weights/decode_neon.cc
namespace neon_dotprod { void install(Kernels& table); }  // sets dot of every quantized format (sdot)
namespace neon_dotprod::weights { void install(Kernels& table); }  // decode products with sdot, weights/decode_neon_dotprod.cc
namespace neon_i8mm { void install(Kernels& table); }  // sets dot of every quantized format (smmla)
}  // namespace kvrt::simd
