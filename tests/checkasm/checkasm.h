// checkasm: one harness for every slot of the dispatch table (simd/kernels.h), as dav1d's checkasm.
// Each check registers the slots it covers (their names in simd::for_each_slot) and a function that
// runs one rung's table against the scalar rung's twins. The driver (main.cc) runs each check on
// every rung this CPU runs whose covered slots hold a function no earlier rung was checked with,
// fails on any filled slot that no check covers, and with --bench times one call per slot on
// every rung.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kv/blocks.h"
#include "simd/dispatch.h"

namespace kvrt::checkasm {

struct Rung {
  simd::Isa isa;
  const simd::Kernels& k;       // the table under test
  const simd::Kernels& scalar;  // the scalar rung's: the twins
  std::string name() const { return simd::isa_to_string(isa); }
};

// One call of a slot on a rung for --bench, on inputs the closure owns.
struct BenchCall {
  std::string slot;
  std::function<void()> call;
};

struct Check {
  std::string name;                // what it checks, e.g. "tiles q8"
  std::vector<std::string> slots;  // the slots it covers
  bool on_scalar = false;          // runs on the scalar rung too: it bounds the twin itself
  std::function<void(const Rung&)> run;
  std::function<std::vector<BenchCall>(const Rung&)> bench;  // one call per slot worth timing
};

// Registers a check: the check_*.cc files call it from a static initializer.
bool add(Check c);
// Registers make(F{}) for the descriptor F of every quantized KV format (kv/blocks.h).
template <class Make>
bool add_per_format(Make make) {
  kv::for_each_quant_format([&](auto format) { add(make(format)); });
  return true;
}
const std::vector<Check>& checks();

// Reordered float sums: |simd - scalar| <= kSumTol * Σ |terms| (+ a tiny absolute floor).
constexpr double kSumTol = 1e-5;

// n values of N(0, scale), every 13th of them 8 times larger (outlier channels).
std::vector<float> randn(size_t n, unsigned seed, float scale = 1.0f);

}  // namespace kvrt::checkasm
