// Decode-attention throughput in GB/s of KV cache read, per ISA and format, at 1k..16k context,
// for the realistic shape (16 query heads, 4 kv heads, head_dim 64). Each timed pass reads all
// kLayers layers of the cache, as a decode step does, so the data comes from DRAM once it
// outgrows the L3 cache (one layer of f32 KV at 8k is 16 MB). Prints a table and writes JSON
// (argv[1], default bench_attention.json; opened before the first measurement, so a path that
// cannot be written fails at once).
// Each row also shows the machine's streaming-read rate over a buffer of the same size at the same
// thread count ("stream GB/s"), so the distance of every format to the memory limit is visible.
//   kernel rows: the fused dot + accumulate kernels of each runnable ISA over the packed cache, 1
//   thread attention rows: ops::attention() for one decode token with this process's ISA, on 1 and
//   2 threads (on a machine shared with other jobs the 2-thread rows wait on whichever thread the
//   scheduler holds back: the 1-thread rows are the steadier measure of the decode path)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kv/formats.h"
#include "kv/kv_cache.h"
#include "ops/attention.h"
#include "simd/dispatch.h"
#include "stream_read.h"

namespace {

using namespace kvrt;
using Clock = std::chrono::steady_clock;

constexpr int kHeads = 16, kKvHeads = 4, kHeadDim = 64, kThreads = 2, kLayers = 8;
const int kContexts[] = {1024, 4096, 8192, 16384};

template <class F>
double best_seconds(F f, double min_total = 0.3) {
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 200 && (total < min_total || rep < 3); ++rep) {
    const auto t0 = Clock::now();
    f();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

std::unique_ptr<kv::KvCache> filled_cache(kv::Format f, int n_ctx) {
  kv::KvConfig cfg;
  cfg.k_format = cfg.v_format = f;
  auto cache =
      std::make_unique<kv::KvCache>(cfg, kv::CacheShape{kLayers, kKvHeads, kHeadDim, n_ctx});
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n_ctx) * kKvHeads * kHeadDim);
  for (float& v : x) v = nd(rng);
  for (int layer = 0; layer < kLayers; ++layer) cache->write(layer, 0, n_ctx, x.data(), x.data());
  return cache;
}

struct Row {
  std::string kind, isa, format;
  int ctx, threads;
  double gbps, us;
  double stream_gbps;  // streaming read of as many bytes, same threads
};

// GB/s of a plain read of `bytes` bytes (stream_read.h, a contiguous share per thread) on
// `threads` threads: the ceiling a decode step that reads the cache once can reach from the memory
// level that holds it.
double stream_read_gbps(size_t bytes, int threads) {
  std::vector<uint64_t> buf(bytes / sizeof(uint64_t), 1);  // [bytes / 8]
  const size_t n = buf.size();
  volatile uint64_t sink = 0;
  const double sec = best_seconds([&] {
    uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      const size_t share = (n + size_t(omp_get_num_threads()) - 1) / size_t(omp_get_num_threads());
      const size_t i0 = std::min(n, share * size_t(omp_get_thread_num()));
      total += kvrt::bench::stream_sum(buf.data() + i0, std::min(n - i0, share));
    }
    sink = sink + total;
  });
  return static_cast<double>(n * sizeof(uint64_t)) / sec / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string arg = argc > 1 ? argv[1] : "";
  if (arg == "--help" || arg == "-h") {
    std::printf("usage: bench_attention [OUT.json]  (default bench_attention.json)\n");
    return 0;
  }
  if (argc > 2 || (!arg.empty() && arg[0] == '-')) {
    std::fprintf(stderr, "bench_attention: usage: bench_attention [OUT.json]\n");
    return 2;
  }
  const std::string out_path = arg.empty() ? "bench_attention.json" : arg;
  std::ofstream js(out_path);
  if (!js) {
    std::fprintf(stderr, "bench_attention: cannot write '%s'\n", out_path.c_str());
    return 1;
  }
  std::vector<Row> rows_out;
  std::vector<float> q(kHeads * kHeadDim, 0.1f), out(kHeads * kHeadDim);
  for (int ctx : kContexts) {
    for (int format_idx = 0; format_idx < kv::kNumFormats;
         ++format_idx) {  // every row of kv/formats.h
      const auto f = static_cast<kv::Format>(format_idx);
      const auto cache = filled_cache(f, ctx);
      const double bytes = cache->bytes_per_token() * ctx;  // all layers, K and V
      const double stream_1t = stream_read_gbps(static_cast<size_t>(bytes), 1);
      const int group = cache->layout().group;
      // queries as the decode path prepares them (int8 codes per group for quantized key tiles)
      std::vector<int8_t> qc(4 * kHeadDim);
      std::vector<float> qd(4 * kHeadDim), qsum(4 * kHeadDim);
      std::vector<int32_t> qcsum(4 * kHeadDim);
      const simd::QueryBuffers qb{qc.data(), qd.data(), qsum.data(), qcsum.data()};
      simd::kernels().quantize_queries(q.data(), 4, kHeadDim, kHeadDim, group, qb);
      const simd::QueryCodes codes = qb.view();
      for (simd::Isa isa : simd::runnable_isas()) {
        const simd::Kernels& k = simd::kernels_for(isa);
        const bool tiled = kv::format_traits(f).quantized();
        const auto dot = tiled ? k.format[static_cast<int>(f)].dot : k.dot;
        const auto acc_fn = tiled ? k.format[static_cast<int>(f)].acc : k.acc;
        std::vector<float> s(4 * ctx, 1.0f / ctx), acc(4 * kHeadDim);
        if (isa == simd::Isa::kScalar && ctx > 1024) continue;  // minutes, and says nothing new
        const double sec = best_seconds([&] {
          for (int layer = 0; layer < kLayers; ++layer) {
            for (int h = 0; h < kKvHeads; ++h) {
              const kv::HeadView view = cache->view(layer, h);
              dot({q.data(), 4, kHeadDim, view.k.packed, view.k.tile_stride, ctx, kHeadDim, group,
                   s.data(), static_cast<size_t>(ctx), &codes});
              acc_fn({s.data(), 4, static_cast<size_t>(ctx), view.v.packed, view.v.tile_stride, ctx,
                      kHeadDim, group, acc.data(), kHeadDim});
            }
          }
        });
        rows_out.push_back({"kernel", simd::isa_to_string(isa), kv::format_name(f), ctx, 1,
                            bytes / sec / 1e9, sec * 1e6, stream_1t});
      }
      for (int threads : {1, kThreads}) {
        ops::AttentionScratch scratch(cache->shape(), kHeads, 1, threads);
        ops::AttentionArgs a;
        a.q = q.data(), a.n_tokens = 1, a.pos0 = ctx - 1, a.n_heads = kHeads, a.out = out.data();
        const double sec = best_seconds([&] {
          for (a.layer = 0; a.layer < kLayers; ++a.layer) ops::attention(*cache, a, scratch);
        });
        rows_out.push_back(
            {"attention", simd::isa_name(), kv::format_name(f), ctx, threads, bytes / sec / 1e9,
             sec * 1e6,
             threads == 1 ? stream_1t : stream_read_gbps(static_cast<size_t>(bytes), threads)});
      }
    }
  }
  std::printf("%-10s %-7s %-4s %6s %3s %10s %9s %12s %8s\n", "kind", "isa", "fmt", "ctx", "thr",
              "us", "GB/s", "stream GB/s", "of max");
  for (const Row& r : rows_out) {
    std::printf("%-10s %-7s %-4s %6d %3d %10.1f %9.2f %12.2f %7.0f%%\n", r.kind.c_str(),
                r.isa.c_str(), r.format.c_str(), r.ctx, r.threads, r.us, r.gbps, r.stream_gbps,
                100 * r.gbps / r.stream_gbps);
  }
  js << "{\n  \"shape\": {\"n_heads\": 16, \"n_kv_heads\": 4, \"head_dim\": 64, \"n_layers\": "
     << kLayers << ", \"threads_attention\": [1, " << kThreads << "]},\n  \"rows\": [\n";
  for (size_t i = 0; i < rows_out.size(); ++i) {
    const Row& r = rows_out[i];
    js << "    {\"kind\": \"" << r.kind << "\", \"isa\": \"" << r.isa << "\", \"format\": \""
       << r.format << "\", \"ctx\": " << r.ctx << ", \"threads\": " << r.threads
       << ", \"us\": " << r.us << ", \"gb_per_s\": " << r.gbps
       << ", \"stream_gb_per_s\": " << r.stream_gbps << "}" << (i + 1 < rows_out.size() ? "," : "")
       << "\n";
  }
  js << "  ]\n}\n";
  js.flush();
  if (!js) {
    std::fprintf(stderr, "bench_attention: writing '%s' failed\n", out_path.c_str());
    return 1;
  }
  return 0;
}
