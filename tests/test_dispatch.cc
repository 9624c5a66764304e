// The dispatch ladder: one table per rung, filled scalar first; every rung keeps every slot the
// scalar twins fill and overwrites some; KVRT_ISA stops the ladder for every kernel family.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "simd/cpu_features.h"
#include "simd/dispatch.h"
#include "test_util.h"

namespace {

using namespace kvrt::simd;

std::map<std::string, const void*> slots_of(const Kernels& k) {
  std::map<std::string, const void*> m;
  for_each_slot(k, [&](const char* name, auto fn) { m[name] = reinterpret_cast<const void*>(fn); });
  return m;
}

}  // namespace

TEST_CASE("dispatch: rung names round-trip and bad names are usage errors") {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAvx512Bf16,
                  Isa::kAvx512Amx, Isa::kNeon, Isa::kNeonDotprod, Isa::kNeonI8mm}) {
    CHECK(parse_isa(isa_to_string(isa)) == isa);
  }
  try {
    parse_isa("sse9");
    FAIL("sse9 parsed");
  } catch (const kvrt::Error& e) {
    CHECK(e.kind() == kvrt::ErrorKind::kUsage);
    CHECK(std::string(e.what()).find("avx512-vnni") != std::string::npos);  // lists the valid names
  }
#if defined(__x86_64__)
  CHECK_THROWS_AS(kernels_for(Isa::kNeon), kvrt::Error);
#else
  CHECK_THROWS_AS(kernels_for(Isa::kAvx512), kvrt::Error);
#endif
}

TEST_CASE("dispatch: the runnable rungs follow the CPU features, scalar first") {
  const CpuFeatures& f = cpu_features();
  const std::vector<Isa> isas = runnable_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == Isa::kScalar);
  MESSAGE("CPU features: " << cpu_features_string(f) << "; process rung "
                           << std::string(isa_name()));
  for (Isa isa : isas) {
    if (isa == Isa::kAvx2) CHECK((f.avx2 && f.fma && f.f16c));
    if (isa == Isa::kAvx512) CHECK((f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl));
    if (isa == Isa::kAvx512Vnni) CHECK(f.avx512vnni);
    if (isa == Isa::kAvx512Bf16) CHECK(f.avx512bf16);
    if (isa == Isa::kAvx512Amx) CHECK((f.amx_tile && f.amx_bf16));
    if (isa == Isa::kNeon) CHECK(f.neon);
    if (isa == Isa::kNeonDotprod) CHECK(f.dotprod);
    if (isa == Isa::kNeonI8mm) CHECK(f.i8mm);
  }
  // The ARM rungs above neon are chosen from HWCAP at run time: a core that has the extension runs
  // its rung (qemu -cpu max has both, cortex-a72 neither).
  const auto runs = [&](Isa isa) { return std::find(isas.begin(), isas.end(), isa) != isas.end(); };
  if (runs(Isa::kAvx512Vnni) && f.avx512bf16)
    CHECK(runs(Isa::kAvx512Bf16));  // KVRT_ISA can choose it
  if (runs(Isa::kAvx512Bf16) && f.amx_tile && f.amx_bf16) CHECK(runs(Isa::kAvx512Amx));
  if (f.neon && f.dotprod) CHECK(runs(Isa::kNeonDotprod));
  if (f.neon && f.dotprod && f.i8mm) CHECK(runs(Isa::kNeonI8mm));
  if (!f.dotprod) CHECK(!runs(Isa::kNeonDotprod));
  if (!f.i8mm) CHECK(!runs(Isa::kNeonI8mm));
  CHECK(std::string(kernels().isa) ==
        isa_to_string(isas.back()));  // unless KVRT_ISA says otherwise
}

TEST_CASE("dispatch: every rung fills the slots the scalar twins fill, and overwrites some") {
  const std::map<std::string, const void*> scalar = slots_of(kernels_for(Isa::kScalar));
  std::map<std::string, const void*> below = scalar;
  for (Isa isa : runnable_isas()) {
    const Kernels& k = kernels_for(isa);
    const std::map<std::string, const void*> here = slots_of(k);
    INFO("rung " << std::string(isa_to_string(isa)));
    CHECK(std::string(k.isa) == isa_to_string(isa));
    int n_filled = 0, n_changed = 0;
    for (const auto& [name, fn] : here) {
      INFO("slot " << name);
      const bool layout =
          name.size() > 11 && name.compare(name.size() - 11, 11, ".decode_lay") == 0;
      if (name.rfind("matmul.tile", 0) == 0) CHECK(fn != nullptr);  // each rung's own tile shape
      else if (!layout) CHECK((fn != nullptr) == (scalar.at(name) != nullptr));  // as the twins
      n_filled += fn != nullptr;
      n_changed += below.count(name) == 0 || below.at(name) != fn;
    }
    for (const WeightKernels& w : k.weight) {  // a layout (its own choice) with its kernel
      CHECK((w.decode.lay == nullptr) == (w.decode.lay_bytes == nullptr));
      if (w.decode.lay != nullptr) CHECK(bool(w.decode));
    }
    CHECK(n_filled > 20);
    if (isa != Isa::kScalar) CHECK(n_changed > 0);
    below = here;
  }
}

TEST_CASE("dispatch: describe_slots names the rung that filled each slot") {
  for (Isa isa : runnable_isas()) {
    const std::vector<std::string> lines = describe_slots(isa);
    REQUIRE(!lines.empty());
    CHECK(lines.front().rfind(std::string(isa_to_string(isa)) + ": ", 0) ==
          0);  // the top rung has slots
    for (const std::string& line : lines) {
      const Isa rung = parse_isa(line.substr(0, line.find(':')));
      CHECK(size_t(rung) <= size_t(isa));
    }
  }
#if defined(__x86_64__)
  const std::vector<Isa> isas = runnable_isas();
  if (std::find(isas.begin(), isas.end(), Isa::kAvx512Vnni) != isas.end()) {
    // The VNNI tile kernels serve every head_dim the cache allows, so no other rung's acc is left.
    const std::string top = describe_slots(Isa::kAvx512Vnni).front();
    CHECK(top.find("attention.acc.q8") != std::string::npos);
    CHECK(top.find("attention.dot.q4") != std::string::npos);
  }
#endif
}

TEST_CASE("dispatch: KVRT_ISA stops the ladder for every kernel family, as kvrt info prints") {
  kvrt::test::TempDir tmp;
  for (Isa isa : runnable_isas()) {
    const std::string name = isa_to_string(isa);
    setenv("KVRT_ISA", name.c_str(), 1);
    const kvrt::test::CommandResult forced =
        kvrt::test::run_kvrt("info -m " + kvrt::test::stories_path(), tmp);
    unsetenv("KVRT_ISA");
    INFO("KVRT_ISA=" << name << "\n" << forced.out << forced.err);
    REQUIRE(forced.exit_code == 0);
    CHECK(forced.out.find("ISA:            " + name + " ") != std::string::npos);
    // The matmul tiles and the attention kernels come from this rung or below, never above.
    const std::string kernels = forced.out.substr(forced.out.find("kernels:"));
    for (Isa above : runnable_isas()) {
      if (size_t(above) > size_t(isa))
        CHECK(kernels.find(std::string(isa_to_string(above)) + ":") == std::string::npos);
    }
    CHECK(kernels.find("matmul.tiles." + std::to_string(kernels_for(isa).matmul.rows)) !=
          std::string::npos);
  }
}
