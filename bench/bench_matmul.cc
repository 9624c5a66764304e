// Throughput of ops::Matmul (oneDNN or kvrt's blocked GEMM, whichever this build has) on the
// forward-pass shapes of a realistic model: d_model 1024, 16 heads, 4 KV heads, head_dim 64,
// d_ff 2816, 8 layers. Prints a table; never fails on a slow machine.
//   bench_matmul [THREADS] [PREFILL_ROWS] [PRECISION f32|bf16] [WEIGHTS F32|F16|BF16]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "ops/matmul.h"

namespace {

struct Shape {
  const char* name;
  int64_t n_out, n_in;
  int per_layer;  // how many matrices of this shape one layer has
};
constexpr Shape kShapes[] = {{"q,o", 1024, 1024, 2}, {"k,v", 256, 1024, 2}, {"gate,up", 2816, 1024, 2}, {"down", 1024, 2816, 1}};
constexpr int kLayers = 8;

// Seconds per call, from enough calls to fill about 0.3 s.
double seconds_per_call(kvrt::ops::Matmul& mm, const float* x, int64_t m, const kvrt::ops::WeightMatrix& w, float* y) {
  using Clock = std::chrono::steady_clock;
  mm.run(x, m, w, y);  // creates and caches the primitive
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  while (elapsed < 0.3) {
    mm.run(x, m, w, y);
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / calls;
}

}  // namespace

int main(int argc, char** argv) {
  const int n_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t prefill_rows = argc > 2 ? std::atoll(argv[2]) : 512;
  const kvrt::ops::MatmulPrecision precision = kvrt::ops::parse_matmul_precision(argc > 3 ? argv[3] : "f32");
  const std::string type = argc > 4 ? argv[4] : "F32";
  const bool f16 = type == "F16" || type == "BF16";
  kvrt::ops::Matmul mm(n_threads, precision);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::printf("%-8s %6s %6s %6s %10s %9s %9s\n", "matrix", "m", "n_out", "n_in", "us/call", "GFLOP/s", "GB/s(W)");
  for (int64_t m : {int64_t(1), prefill_rows}) {
    double layer_seconds = 0.0;
    for (const Shape& s : kShapes) {
      std::vector<float> w(size_t(s.n_out * s.n_in)), x(size_t(m * s.n_in)), y(size_t(m * s.n_out));  // W [n_out][n_in]
      for (float& v : w) v = normal(rng);
      for (float& v : x) v = normal(rng);
      std::vector<uint16_t> w16(f16 ? w.size() : 0);  // W [n_out][n_in] as F16 or BF16
      for (size_t i = 0; i < w16.size(); ++i) w16[i] = type == "F16" ? kvrt::f32_to_f16(w[i]) : kvrt::f32_to_bf16(w[i]);
      const auto wtype = type == "F16" ? kvrt::simd::WeightType::kF16 : kvrt::simd::WeightType::kBF16;
      const kvrt::ops::WeightMatrix wm = f16 ? kvrt::ops::WeightMatrix{w16.data(), wtype, s.n_out, s.n_in}
                                             : kvrt::ops::WeightMatrix{w.data(), kvrt::simd::WeightType::kF32, s.n_out, s.n_in};
      const double t = seconds_per_call(mm, x.data(), m, wm, y.data());
      layer_seconds += t * s.per_layer;
      std::printf("%-8s %6lld %6lld %6lld %10.1f %9.2f %9.2f\n", s.name, (long long)m, (long long)s.n_out,
                  (long long)s.n_in, t * 1e6, 2.0 * double(m * s.n_out * s.n_in) / t * 1e-9,
                  double(w.size() * sizeof(float)) / t * 1e-9);
    }
    std::printf("m = %lld: %.1f tok/s through the matrix products of %d layers\n", (long long)m,
                double(m) / (layer_seconds * kLayers), kLayers);
  }
  std::printf("implementation: %s, %d threads, %s products, %s weights\n", mm.implementation(), n_threads,
              kvrt::ops::matmul_precision_name(precision), type.c_str());
  return 0;
}
