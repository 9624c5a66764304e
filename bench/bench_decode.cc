// Decode (m = 1) products on the weight shapes of bench_matmul's realistic model (d_model 1024,
// 4 KV heads of 64, d_ff 2816, 8 layers), one thread, timed for a loaded machine: each product is
// timed as the best of many short windows, so time the process spent preempted drops out. Prints
// per type and matrix the best us per call and the W bytes/s it reached, then the tok/s of the
// products of 8 layers. Those are read from the caches (each matrix is timed again and again), so
// it then times whole tokens on 8 distinct layers' matrices, which decode reads from memory as a
// model does: the best tok/s, its W bytes/s, and a plain read of as many bytes beside it (the
// ceiling). Compare kernels by running two builds alternately (ratios in one run).
//   bench_decode [TYPES Q4_K,Q6_K,...] [WINDOWS]
// The rung is the process's (KVRT_ISA picks a lower one).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "simd/dispatch.h"
#include "simd/weights/types.h"
#include "realistic_shape.h"
#include "stream_read.h"

namespace {

using kvrt::bench::kLayers;
using kvrt::bench::kShapes;
using kvrt::bench::parse_type;
using kvrt::bench::Shape;
using kvrt::simd::WeightTypeTraits;

constexpr double kWindowSeconds = 2e-3;  // below a scheduler slice, so most windows run unpreempted

// The best seconds per call of f over `windows` windows of about kWindowSeconds each.
template <class F>
double best_seconds_per_call(F&& f, int windows) {
  using Clock = std::chrono::steady_clock;
  f();
  const auto t0 = Clock::now();
  f();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int calls = std::max(1, int(kWindowSeconds / std::max(once, 1e-9)));
  double best = std::numeric_limits<double>::infinity();
  for (int w = 0; w < windows; ++w) {
    const auto start = Clock::now();
    for (int c = 0; c < calls; ++c) f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / calls);
  }
  return best;
}

// One token's decode products on kLayers distinct layers of W in `type` (every matrix its own, as
// in a model), timed whole: W comes from memory. Prints tok/s, W GB/s and the GB/s of a plain read
// of as many bytes (stream_read.h): what a product that reads W once can reach.
void streamed_token(const WeightTypeTraits& type, kvrt::ops::Matmul& mm, int windows,
                    std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<uint8_t>> stored;  // per matrix of the token: [n_out][row bytes]
  std::vector<kvrt::ops::WeightMatrix> mats;
  size_t bytes = 0;
  int64_t n_max = 0;
  for (int layer = 0; layer < kLayers; ++layer) {
    for (const Shape& s : kShapes) {
      for (int c = 0; c < s.per_layer; ++c) {
        stored.push_back(kvrt::bench::random_weights(type, s, rng));
        bytes += stored.back().size();
        n_max = std::max({n_max, s.n_in, s.n_out});
      }
    }
  }
  size_t i = 0;
  for (int layer = 0; layer < kLayers; ++layer)
    for (const Shape& s : kShapes)
      for (int c = 0; c < s.per_layer; ++c, ++i)
        mats.push_back({stored[i].data(), type.type, s.n_out, s.n_in});
  std::vector<float> x(static_cast<size_t>(n_max)), y(static_cast<size_t>(n_max));
  for (float& v : x) v = normal(rng);
  const std::vector<uint64_t> plain(bytes / 32 * 4, 1);  // [bytes / 8]
  volatile uint64_t sink = 0;
  // A token and a plain read of as many bytes in turn, each the best of its windows: both meet
  // the same neighbours on a shared machine.
  double t = std::numeric_limits<double>::infinity(), t_read = t;
  for (int w = 0; w < windows; ++w) {
    t = std::min(t, best_seconds_per_call(
                        [&] {
                          for (const kvrt::ops::WeightMatrix& m : mats)
                            mm.run(x.data(), 1, m, y.data());
                        },
                        1));
    t_read = std::min(
        t_read, best_seconds_per_call(
                    [&] { sink = sink + kvrt::bench::stream_sum(plain.data(), plain.size()); }, 1));
  }
  const double gbps = double(bytes) / t * 1e-9, stream = double(bytes) / t_read * 1e-9;
  std::printf("%-8s %9.1f %9.2f %12.2f %8.0f%%\n", type.name, 1.0 / t, gbps, stream,
              100.0 * gbps / stream);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const WeightTypeTraits*> types;
  std::istringstream list(argc > 1 ? argv[1] : "Q4_0,Q3_K,Q4_K,Q5_K,Q6_K");
  for (std::string name; std::getline(list, name, ',');)
    types.push_back(&parse_type("bench_decode", name));
  const int windows = argc > 2 ? std::atoi(argv[2]) : 200;
  if (windows < 1) {
    std::fprintf(stderr, "bench_decode: WINDOWS must be a positive count, not '%s'\n", argv[2]);
    return 2;
  }
  kvrt::ops::Matmul mm(1, kvrt::ops::MatmulPrecision::kF32);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::printf("%-8s %-8s %6s %6s %10s %9s\n", "weights", "matrix", "n_out", "n_in", "best us",
              "GB/s(W)");
  std::vector<double> tok_s;
  for (const WeightTypeTraits* type : types) {
    double layer_seconds = 0.0;
    for (const Shape& s : kShapes) {
      const std::vector<uint8_t> stored = kvrt::bench::random_weights(*type, s, rng);
      std::vector<float> x(size_t(s.n_in)), y(size_t(s.n_out));
      for (float& v : x) v = normal(rng);
      const kvrt::ops::WeightMatrix wm{stored.data(), type->type, s.n_out, s.n_in};
      const double t = best_seconds_per_call([&] { mm.run(x.data(), 1, wm, y.data()); }, windows);
      layer_seconds += t * s.per_layer;
      std::printf("%-8s %-8s %6lld %6lld %10.1f %9.2f\n", type->name, s.name, (long long)s.n_out,
                  (long long)s.n_in, t * 1e6, double(stored.size()) / t * 1e-9);
    }
    tok_s.push_back(1.0 / (layer_seconds * kLayers));
  }
  std::printf("\ntok/s through the decode products of %d layers, best windows, 1 thread, %s\n",
              kLayers, mm.implementation());
  for (size_t i = 0; i < types.size(); ++i) std::printf("%-8s %8.1f\n", types[i]->name, tok_s[i]);
  // A token takes milliseconds: fewer windows, each one token.
  std::printf("\nstreamed: whole tokens on %d distinct layers (W from memory), best of %d\n",
              kLayers, std::max(3, windows / 10));
  std::printf("%-8s %9s %9s %12s %9s\n", "weights", "tok/s", "GB/s(W)", "stream GB/s", "of max");
  for (const WeightTypeTraits* type : types)
    streamed_token(*type, mm, std::max(3, windows / 10), rng);
  return 0;
}
