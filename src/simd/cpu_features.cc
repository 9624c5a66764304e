#include "simd/cpu_features.h"

#include <cstdint>
#include <utility>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kvrt::simd {
namespace {

#if defined(__x86_64__)
struct Regs {
  uint32_t eax, ebx, ecx, edx;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __asm__("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(subleaf));
  return r;
}

bool bit(uint32_t word, int b) { return (word >> b & 1) != 0; }

// XCR0 (XGETBV 0): which register states the OS saves. Bits 1-2 (SSE, AVX) for AVX2, bits 5-7
// (opmask, upper ZMM, ZMM16-31) for AVX-512, bits 17-18 (tile config, tile data) for AMX.
uint64_t os_saved_state() {
  if (!bit(cpuid(1, 0).ecx, 27)) return 0;  // no OSXSAVE: XGETBV is not available
  uint32_t lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// Linux lets a process use the AMX tile data only after it asks (arch_prctl ARCH_REQ_XCOMP_PERM
// for XFEATURE_XTILEDATA); the first tile instruction of a process that has not is a SIGILL. The
// permission, once given, holds for every thread of the process.
bool amx_permitted() {
#if defined(__linux__)
  constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  const uint32_t max_leaf = cpuid(0, 0).eax;
  if (max_leaf < 7) return f;
  const uint64_t xcr0 = os_saved_state();
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  const bool os_amx = (xcr0 & 0x60000) == 0x60000 && bit(l7.edx, 24) && amx_permitted();
  f.fma = os_avx && bit(l1.ecx, 12);
  f.f16c = os_avx && bit(l1.ecx, 29);
  f.avx2 = os_avx && bit(l7.ebx, 5);
  f.avx512f = os_avx512 && bit(l7.ebx, 16);
  f.avx512dq = f.avx512f && bit(l7.ebx, 17);
  f.avx512bw = f.avx512f && bit(l7.ebx, 30);
  f.avx512vl = f.avx512f && bit(l7.ebx, 31);
  f.avx512vnni = f.avx512f && bit(l7.ecx, 11);
  f.avx512bf16 = f.avx512f && bit(l7s1.eax, 5);
  f.amx_bf16 = os_amx && bit(l7.edx, 22);
  f.amx_tile = os_amx && bit(l7.edx, 24);
  f.amx_int8 = os_amx && bit(l7.edx, 25);
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
// Bits of AT_HWCAP / AT_HWCAP2 as in the kernel's uapi asm/hwcap.h.
constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapAsimdhp = 1ul << 10,
                        kHwcapAsimddp = 1ul << 20;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw & kHwcapAsimd) != 0;
  f.fp16 = f.neon && (hw & kHwcapAsimdhp) != 0;
  f.dotprod = f.neon && (hw & kHwcapAsimddp) != 0;
  f.i8mm = f.neon && (hw2 & kHwcap2I8mm) != 0;
  return f;
}
#elif defined(__aarch64__)
CpuFeatures detect() {
  CpuFeatures f;
  f.neon =
      true;  // Advanced SIMD is part of every ARMv8-A core; the extensions need the OS to say so
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string cpu_features_string(const CpuFeatures& f) {
  const std::pair<bool, const char*> named[] = {
      {f.avx2, "avx2"},
      {f.fma, "fma"},
      {f.f16c, "f16c"},
      {f.avx512f, "avx512f"},
      {f.avx512bw, "avx512bw"},
      {f.avx512dq, "avx512dq"},
      {f.avx512vl, "avx512vl"},
      {f.avx512vnni, "avx512vnni"},
      {f.avx512bf16, "avx512bf16"},
      {f.amx_tile, "amx-tile"},
      {f.amx_int8, "amx-int8"},
      {f.amx_bf16, "amx-bf16"},
      {f.neon, "neon"},
      {f.dotprod, "dotprod"},
      {f.i8mm, "i8mm"},
      {f.fp16, "fp16"},
  };
  std::string s;
  for (const auto& [has, name] : named) {
    if (has) s += (s.empty() ? "" : " ") + std::string(name);
  }
  return s.empty() ? "none" : s;
}

}  // namespace kvrt::simd
