// Which kernel table this process uses: the best ISA the CPU and OS support, chosen once,
// or the one forced by the environment (KVRT_ISA=scalar|avx2|avx512|neon).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "simd/kernels.h"

namespace kvrt::simd {

enum class Isa : uint8_t { kScalar, kAvx2, kAvx512, kNeon };

const Kernels& kernels();                  // the process-wide table (first call decides the ISA)
std::vector<Isa> runnable_isas();          // every ISA this CPU and OS can run, scalar first
const Kernels& kernels_for(Isa isa);       // throws kvrt::Error if the CPU lacks it
Isa parse_isa(std::string_view name);      // scalar|avx2|avx512|neon, else kvrt::Error(kUsage)
const char* isa_to_string(Isa isa);

}  // namespace kvrt::simd
