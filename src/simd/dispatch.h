// The kernel table of this process: one decision for every kernel family (quantize, attention,
// matrix products), made once. Tables are filled as dav1d fills its function pointers: the scalar
// twins first, then each rung of the ladder that the CPU and OS run overwrites the slots it has
// kernels for (each rung needs the one below):
//   x86-64:  scalar → avx2 (with fma, f16c) → avx512 (f, bw, dq, vl) → avx512-vnni → avx512-bf16
//            → avx512-amx (amx-tile, amx-bf16)
//   aarch64: scalar → neon → neon-dotprod (sdot) → neon-i8mm (smmla)
// KVRT_ISA=<rung> stops the ladder at that rung for every family; a rung this CPU or build does
// not run is an error, not a silent fallback.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simd/kernels.h"

namespace kvrt::simd {

enum class Isa : uint8_t {
  kScalar,
  kAvx2,
  kAvx512,
  kAvx512Vnni,
  kAvx512Bf16,
  kAvx512Amx,  // x86-64
  kNeon,
  kNeonDotprod,
  kNeonI8mm  // aarch64
};

const Kernels& kernels();              // the process-wide table (first call decides the rung)
std::vector<Isa> runnable_isas();      // every rung this CPU and build run, scalar first
const Kernels& kernels_for(Isa isa);   // throws kvrt::Error(kUsage) if the CPU lacks it
Isa parse_isa(std::string_view name);  // a rung's name, else kvrt::Error(kUsage)
const char* isa_to_string(Isa isa);    // "scalar", "avx2", "avx512", "avx512-vnni",
                                       // "avx512-bf16", "avx512-amx", "neon", "neon-dotprod",
                                       // "neon-i8mm"

// Which rung filled each slot of kernels_for(isa): one line per rung, top rung first, as
// "<rung>: <slot> <slot> ..." (matmul tiles named once, with their shape).
std::vector<std::string> describe_slots(Isa isa);
Isa process_isa();  // the rung of kernels()

}  // namespace kvrt::simd
