// What this CPU and OS can run, detected once per process: the one place kvrt asks the hardware.
// x86-64 reads CPUID and XGETBV (a feature counts only when the OS also saves its registers, and
// for AMX only when Linux gave this process the tile data it asked for);
// aarch64 reads the kernel's HWCAP words (getauxval). The dispatch ladder (simd/dispatch.cc),
// `kvrt info` and the reports read it from here.
#pragma once

#include <string>

namespace kvrt::simd {

struct CpuFeatures {
  // x86-64
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vnni = false;  // vpdpbusd / vpdpwssd
  bool avx512bf16 = false;  // vdpbf16ps
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  // aarch64
  bool neon = false;
  bool dotprod = false;  // sdot / udot (HWCAP asimddp)
  bool i8mm = false;     // smmla (HWCAP2 i8mm)
  bool fp16 = false;     // half-precision arithmetic (HWCAP asimdhp)
};

const CpuFeatures& cpu_features();  // detected on first call

// The detected features as names separated by spaces, e.g. "avx2 fma f16c avx512f ...";
// "none" when there are none (a CPU without any of the SIMD extensions kvrt knows).
std::string cpu_features_string(const CpuFeatures& f);

}  // namespace kvrt::simd
