// The checkasm driver: the coverage rule, every check on every rung, and --bench.
//   checkasm [doctest options]   checks every rung this CPU runs against the scalar rung
//   checkasm --bench[=TEXT]      ns per call of every slot (whose name contains TEXT) per rung
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkasm.h"

namespace kvrt::checkasm {

std::vector<Check>& registry() {
  static std::vector<Check> all;
  return all;
}

bool add(Check c) {
  registry().push_back(std::move(c));
  return true;
}

const std::vector<Check>& checks() { return registry(); }

std::vector<float> randn(size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = nd(rng) * ((i % 13 == 5) ? 8.0f : 1.0f);
  return x;
}

namespace {

using simd::Isa;

// The filled slots of a table, by name.
std::map<std::string, const void*> filled_slots(const simd::Kernels& k) {
  std::map<std::string, const void*> m;
  simd::for_each_slot(k, [&](const char* name, auto fn) {
    if (fn != nullptr) m[name] = reinterpret_cast<const void*>(fn);
  });
  return m;
}

bool covers(const Check& c, const std::string& slot) {
  return std::find(c.slots.begin(), c.slots.end(), slot) != c.slots.end();
}

Rung rung(Isa isa) { return {isa, simd::kernels_for(isa), simd::kernels_for(Isa::kScalar)}; }

// Nanoseconds per call: the best of 3 runs of at least 1 ms each.
double ns_per_call(const std::function<void()>& call) {
  using clock = std::chrono::steady_clock;
  call();
  double best = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < 3; ++rep) {
    for (long n = 1;; n *= 2) {
      const auto t0 = clock::now();
      for (long i = 0; i < n; ++i) call();
      const double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
      if (ns >= 1e6) {
        best = std::min(best, ns / double(n));
        break;
      }
    }
  }
  return best;
}

int bench(const std::string& filter) {
  const std::vector<Isa> isas = simd::runnable_isas();
  std::printf("%-36s", "slot (ns per call)");
  for (Isa isa : isas) std::printf(" %12s", simd::isa_to_string(isa));
  std::printf("\n");
  for (const Check& c : checks()) {
    if (!c.bench) continue;
    std::vector<std::vector<BenchCall>> calls;  // [rung][call]
    for (Isa isa : isas) calls.push_back(c.bench(rung(isa)));
    for (size_t i = 0; i < calls.front().size(); ++i) {
      if (calls.front()[i].slot.find(filter) == std::string::npos) continue;
      std::printf("%-36s", calls.front()[i].slot.c_str());
      for (const std::vector<BenchCall>& r : calls) std::printf(" %12.1f", ns_per_call(r[i].call));
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvrt::checkasm

using namespace kvrt::checkasm;
using kvrt::simd::Isa;

TEST_CASE("checkasm: every slot a rung fills is covered by a check") {
  for (Isa isa : kvrt::simd::runnable_isas()) {
    for (const auto& [name, fn] : filled_slots(kvrt::simd::kernels_for(isa))) {
      const bool covered = std::any_of(checks().begin(), checks().end(),
                                       [&](const Check& c) { return covers(c, name); });
      CHECK_MESSAGE(covered, "rung " << std::string(kvrt::simd::isa_to_string(isa)) << " fills "
                                     << name << ", which no check covers");
    }
  }
}

TEST_CASE("checkasm: every slot a check covers is a slot of the table") {
  std::set<std::string> names;
  kvrt::simd::for_each_slot(kvrt::simd::kernels_for(Isa::kScalar),
                            [&](const char* name, auto) { names.insert(name); });
  for (const Check& c : checks()) {
    REQUIRE(!c.slots.empty());
    for (const std::string& s : c.slots)
      CHECK_MESSAGE(names.count(s), "check " << c.name << " covers " << s << ", not a slot");
  }
}

TEST_CASE("checkasm: every rung's kernels agree with the scalar rung") {
  // (slot, function) pairs already checked, or the twins themselves: a rung that keeps the
  // function of the rung below is not checked again.
  std::set<std::pair<std::string, const void*>> checked;
  for (Isa isa : kvrt::simd::runnable_isas()) {
    const Rung r = rung(isa);
    const std::map<std::string, const void*> slots = filled_slots(r.k);
    int n_run = 0;
    for (const Check& c : checks()) {
      if (isa == Isa::kScalar && !c.on_scalar) continue;
      const bool fresh = std::any_of(slots.begin(), slots.end(), [&](const auto& s) {
        return covers(c, s.first) && checked.count(s) == 0;
      });
      if (!fresh) continue;
      INFO("rung " << r.name() << ", check " << c.name);
      c.run(r);
      ++n_run;
    }
    checked.insert(slots.begin(), slots.end());
    MESSAGE("rung " << r.name() << ": " << n_run << " checks");
  }
}

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--bench", 7) == 0 && (argv[i][7] == '\0' || argv[i][7] == '=')) {
      return bench(argv[i][7] == '=' ? argv[i] + 8 : "");
    }
    args.push_back(argv[i]);
  }
  doctest::Context context(int(args.size()), args.data());
  return context.run();
}
