// The dispatch ladder: one table per rung, built on first use from the scalar twins upwards.
#include "simd/dispatch.h"

#include <array>
#include <cstdlib>
#include <map>

#include "common/error.h"
#include "simd/cpu_features.h"
#include "simd/kernels_isa.h"
#include "simd/kernels_scalar.h"

namespace kvrt::simd {
namespace {

constexpr Isa kAllIsas[] = {Isa::kScalar,     Isa::kAvx2,        Isa::kAvx512,
                            Isa::kAvx512Vnni, Isa::kAvx512Bf16,  Isa::kAvx512Amx,
                            Isa::kNeon,       Isa::kNeonDotprod, Isa::kNeonI8mm};
constexpr size_t kNumIsas = std::size(kAllIsas);

struct Rung {
  Isa isa;
  bool (*runs)(const CpuFeatures& f);  // given that every rung below runs
  void (*install)(Kernels& table);
};

void install_scalar(Kernels& t) {
  scalar::install(t);
  scalar::install_matmul(t);
}

constexpr Rung kLadder[] = {
    {Isa::kScalar, [](const CpuFeatures&) { return true; }, install_scalar},
#if defined(__x86_64__)
    {Isa::kAvx2, [](const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c; }, avx2::install},
    {Isa::kAvx512,
     [](const CpuFeatures& f) { return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl; },
     avx512::install},
    {Isa::kAvx512Vnni, [](const CpuFeatures& f) { return f.avx512vnni; }, avx512vnni::install},
    {Isa::kAvx512Bf16, [](const CpuFeatures& f) { return f.avx512bf16; }, avx512bf16::install},
    {Isa::kAvx512Amx, [](const CpuFeatures& f) { return f.amx_tile && f.amx_bf16; },
     avx512amx::install},
#elif defined(__aarch64__)
    {Isa::kNeon, [](const CpuFeatures& f) { return f.neon; }, neon::install},
    {Isa::kNeonDotprod, [](const CpuFeatures& f) { return f.dotprod; }, neon_dotprod::install},
    {Isa::kNeonI8mm, [](const CpuFeatures& f) { return f.i8mm; }, neon_i8mm::install},
#endif
};

struct Tables {
  std::array<Kernels, kNumIsas> table{};
  std::array<bool, kNumIsas> runs{};
};

// Climbs the ladder once; the table of each rung reached is kept.
const Tables& tables() {
  static const Tables all = [] {
    Tables out;
    Kernels t{};
    for (const Rung& r : kLadder) {
      if (!r.runs(cpu_features())) break;
      r.install(t);
      t.isa = isa_to_string(r.isa);
      out.table[size_t(r.isa)] = t;
      out.runs[size_t(r.isa)] = true;
    }
    return out;
  }();
  return all;
}

std::string names(const std::vector<Isa>& isas) {
  std::string s;
  for (Isa isa : isas) s += (s.empty() ? "" : ", ") + std::string(isa_to_string(isa));
  return s;
}

Isa choose() {
  if (const char* forced = std::getenv("KVRT_ISA"); forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced);
    kernels_for(isa);  // refuses a rung this CPU does not run
    return isa;
  }
  return runnable_isas().back();
}

// Slot name -> function address, matmul tiles as one slot.
std::map<std::string, const void*> slot_map(const Kernels& k) {
  std::map<std::string, const void*> m;
  for_each_slot(k, [&](const char* name, auto fn) {
    const std::string n(name);
    const bool tile = n.rfind("matmul.tile", 0) == 0;
    const std::string key =
        tile ? "matmul.tiles." + std::to_string(k.matmul.rows) + "x" + std::to_string(k.matmul.cols)
             : n;
    if (fn != nullptr && (!tile || n == "matmul.tile1x1"))
      m[key] = reinterpret_cast<const void*>(fn);
  });
  return m;
}

}  // namespace

const char* isa_to_string(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Vnni: return "avx512-vnni";
    case Isa::kAvx512Bf16: return "avx512-bf16";
    case Isa::kAvx512Amx: return "avx512-amx";
    case Isa::kNeon: return "neon";
    case Isa::kNeonDotprod: return "neon-dotprod";
    case Isa::kNeonI8mm: return "neon-i8mm";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas) {
    if (name == isa_to_string(isa)) return isa;
  }
  throw Error("unknown ISA '" + std::string(name) + "' in KVRT_ISA (valid: " +
                  names({std::begin(kAllIsas), std::end(kAllIsas)}) + ")",
              ErrorKind::kUsage);
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> isas;
  for (Isa isa : kAllIsas) {
    if (tables().runs[size_t(isa)]) isas.push_back(isa);
  }
  return isas;
}

const Kernels& kernels_for(Isa isa) {
  if (!tables().runs[size_t(isa)])
    throw Error(std::string("KVRT_ISA=") + isa_to_string(isa) +
                    " is not supported by this CPU or build (it runs " + names(runnable_isas()) +
                    ")",
                ErrorKind::kUsage);
  return tables().table[size_t(isa)];
}

Isa process_isa() {
  static const Isa isa = choose();
  return isa;
}

const Kernels& kernels() {
  static const Kernels& table = kernels_for(process_isa());
  return table;
}

const char* isa_name() { return kernels().isa; }

std::vector<std::string> describe_slots(Isa isa) {
  std::map<std::string, Isa> origin;
  std::map<std::string, const void*> below;
  for (Isa rung : runnable_isas()) {
    if (size_t(rung) > size_t(isa)) break;
    for (const auto& [name, fn] : slot_map(kernels_for(rung))) {
      const auto it = below.find(name);
      if (it == below.end() || it->second != fn) origin[name] = rung;
    }
    below = slot_map(kernels_for(rung));
  }
  std::vector<std::string> lines;
  for (auto it = std::rbegin(kAllIsas); it != std::rend(kAllIsas); ++it) {
    std::string line;
    for (const auto& [name, rung] : origin) {
      if (rung == *it && below.count(name)) line += " " + name;
    }
    if (!line.empty()) lines.push_back(std::string(isa_to_string(*it)) + ":" + line);
  }
  return lines;
}

}  // namespace kvrt::simd
