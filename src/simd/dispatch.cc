// Chooses the kernel table once per process: the best ISA the CPU and OS support, or KVRT_ISA.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <xsimd/xsimd.hpp>

#include "common/error.h"
#include "simd/dispatch.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd {

namespace {

#if defined(__x86_64__)
// xsimd 8.1 reads CPUID only; the OS must also save the wide registers (XCR0, read by XGETBV):
// bits 1-2 (SSE, AVX state) for AVX2, and bits 5-7 (opmask, ZMM) as well for AVX-512.
uint64_t os_saved_state() {
  unsigned eax, ebx, ecx, edx;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(1), "c"(0));
  if (!(ecx >> 27 & 1)) return 0;  // no OSXSAVE
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

}  // namespace

#if defined(__x86_64__)
bool cpu_has_avx512_vnni() {
  unsigned eax, ebx, ecx, edx;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  return (ecx >> 11 & 1) != 0;  // CPUID.(EAX=7,ECX=0):ECX[bit 11] AVX512_VNNI
}
#endif

const char* isa_to_string(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (name == isa_to_string(isa)) return isa;
  }
  throw Error("unknown ISA '" + std::string(name) + "' in KVRT_ISA (valid: scalar, avx2, avx512, neon)", ErrorKind::kUsage);
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> isas = {Isa::kScalar};
  [[maybe_unused]] const auto cpu = xsimd::available_architectures();
#if defined(__x86_64__)
  const uint64_t xcr0 = os_saved_state();
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
  if (os_avx && cpu.fma3_avx2) isas.push_back(Isa::kAvx2);
  if (os_avx512 && cpu.avx512bw && cpu.avx512dq && cpu.fma3_avx2) isas.push_back(Isa::kAvx512);
#elif defined(__aarch64__)
  if (cpu.neon64) isas.push_back(Isa::kNeon);
#endif
  return isas;
}

const Kernels& kernels_for(Isa isa) {
  for (Isa ok : runnable_isas()) {
    if (ok != isa) continue;
    switch (isa) {
#if defined(__x86_64__)
      case Isa::kAvx2: return avx2::table();
      case Isa::kAvx512: return avx512::table();
#elif defined(__aarch64__)
      case Isa::kNeon: return neon::table();
#endif
      default: return scalar::table();
    }
  }
  throw Error(std::string("KVRT_ISA=") + isa_to_string(isa) + " is not supported by this CPU or build", ErrorKind::kUsage);
}

namespace {

const Kernels& choose() {
  if (const char* forced = std::getenv("KVRT_ISA"); forced != nullptr && *forced != '\0') {
    return kernels_for(parse_isa(forced));
  }
  return kernels_for(runnable_isas().back());
}

}  // namespace

const Kernels& kernels() {
  static const Kernels& table = choose();
  return table;
}

const char* isa_name() { return kernels().isa; }

}  // namespace kvrt::simd
