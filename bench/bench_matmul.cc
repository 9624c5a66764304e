// Throughput of ops::Matmul (oneDNN or kvrt's blocked GEMM, whichever this build has) on the
// forward-pass shapes of a realistic model: d_model 1024, 16 heads, 4 KV heads, head_dim 64,
// d_ff 2816, 8 layers, with W stored in each of the given types. Prints a table per type, then
// every type's tok/s beside the first type's (ratios measured in one run) and the rate of its
// to_float kernel beside the reference codec's. Never fails on a slow machine.
//   bench_matmul [THREADS] [PREFILL_ROWS] [PRECISION f32|bf16] [TYPES F32,F16,Q8_0,Q4_0,...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "simd/dispatch.h"
#include "simd/weights/types.h"
#include "realistic_shape.h"

namespace {

using kvrt::bench::kLayers;
using kvrt::bench::kShapes;
using kvrt::bench::parse_type;
using kvrt::bench::Shape;
using kvrt::simd::WeightType;
using kvrt::simd::WeightTypeTraits;

constexpr double kSecondsPerTiming = 0.3;

// Seconds per call of f, from enough calls to fill kSecondsPerTiming (after one untimed call,
// which creates and caches oneDNN's primitive).
template <class F>
double seconds_per_call(F&& f) {
  using Clock = std::chrono::steady_clock;
  f();
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  while (elapsed < kSecondsPerTiming) {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / calls;
}

struct TypeResult {
  const char* name;
  double tok_s[2];          // m = 1, m = prefill rows: through the products of kLayers layers
  double widen_ref = 0;     // to_float rates, values per ns: the reference codec
  double widen_kernel = 0;  // and this process's kernel
};

TypeResult bench_type(kvrt::ops::Matmul& mm, const WeightTypeTraits& type, int64_t prefill_rows) {
  TypeResult r{type.name, {0, 0}};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::printf("%-8s %-8s %6s %6s %6s %10s %9s %9s\n", "weights", "matrix", "m", "n_out", "n_in",
              "us/call", "GFLOP/s", "GB/s(W)");
  std::vector<std::vector<uint8_t>> stored;  // [shape] W in `type`
  for (const Shape& s : kShapes) stored.push_back(kvrt::bench::random_weights(type, s, rng));
  for (int mi = 0; mi < 2; ++mi) {
    const int64_t m = mi == 0 ? 1 : prefill_rows;
    double layer_seconds = 0.0;
    for (size_t si = 0; si < std::size(kShapes); ++si) {
      const Shape& s = kShapes[si];
      std::vector<float> x(size_t(m * s.n_in)),
          y(size_t(m * s.n_out));  // x [m][n_in], y [m][n_out]
      for (float& v : x) v = normal(rng);
      const kvrt::ops::WeightMatrix w{stored[si].data(), type.type, s.n_out, s.n_in};
      const double t = seconds_per_call([&] { mm.run(x.data(), m, w, y.data()); });
      layer_seconds += t * s.per_layer;
      std::printf("%-8s %-8s %6lld %6lld %6lld %10.1f %9.2f %9.2f\n", type.name, s.name,
                  (long long)m, (long long)s.n_out, (long long)s.n_in, t * 1e6,
                  2.0 * double(m * s.n_out * s.n_in) / t * 1e-9,
                  double(stored[si].size()) / t * 1e-9);
    }
    r.tok_s[mi] = double(m) / (layer_seconds * kLayers);
  }
  // Widening alone, one thread: the largest matrix, reference codec against this process's kernel.
  const Shape& big = kShapes[2];
  std::vector<float> out(size_t(big.n_out * big.n_in));
  const auto to_float = kvrt::simd::kernels().weight[kvrt::simd::weight_index(type.type)].to_float;
  const double values = double(out.size());
  r.widen_ref = values / seconds_per_call([&] {
                  type.to_float_ref(stored[2].data(), int64_t(out.size()), out.data());
                }) *
                1e-9;
  r.widen_kernel =
      values /
      seconds_per_call([&] { to_float(stored[2].data(), int64_t(out.size()), out.data()); }) * 1e-9;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int n_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t prefill_rows = argc > 2 ? std::atoll(argv[2]) : 512;
  const kvrt::ops::MatmulPrecision precision =
      kvrt::ops::parse_matmul_precision(argc > 3 ? argv[3] : "f32");
  std::vector<const WeightTypeTraits*> types;
  std::istringstream list(argc > 4 ? argv[4] : "F32");
  for (std::string name; std::getline(list, name, ',');)
    types.push_back(&parse_type("bench_matmul", name));
  kvrt::ops::Matmul mm(n_threads, precision);
  std::vector<TypeResult> results;
  for (const WeightTypeTraits* t : types) results.push_back(bench_type(mm, *t, prefill_rows));
  std::printf(
      "\ntok/s through the matrix products of %d layers (vs %s); to_float on one thread, "
      "values/ns\n",
      kLayers, results[0].name);
  std::printf("%-8s %14s %20s %12s %12s\n", "weights", "m = 1", "m = prefill rows", "to_float ref",
              ("to_float " + std::string(kvrt::simd::isa_name())).c_str());
  for (const TypeResult& r : results) {
    std::printf("%-8s %7.1f (%.2fx) %11.1f (%.2fx) %12.2f %12.2f\n", r.name, r.tok_s[0],
                r.tok_s[0] / results[0].tok_s[0], r.tok_s[1], r.tok_s[1] / results[0].tok_s[1],
                r.widen_ref, r.widen_kernel);
  }
  std::printf("implementation: %s, %d threads, %s products, prefill rows %lld\n",
              mm.implementation(), n_threads, kvrt::ops::matmul_precision_name(precision),
              (long long)prefill_rows);
  return 0;
}
