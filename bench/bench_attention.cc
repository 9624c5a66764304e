// Decode-attention throughput in GB/s of KV cache read, per ISA and format, at 1k..16k context,
// for one layer of the realistic shape (16 query heads, 4 kv heads, head_dim 64). Prints a table
// and writes JSON (argv[1], default bench_attention.json). Numbers only; nothing here can fail.
//   kernel rows: the fused dot + accumulate kernels of each runnable ISA over packed rows, 1 thread
//   attention rows: ops::attention() for one decode token with this process's ISA, 2 threads
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_cache_impl.h"
#include "ops/attention.h"
#include "simd/dispatch.h"

namespace {

using namespace kvrt;
using Clock = std::chrono::steady_clock;

constexpr int kHeads = 16, kKvHeads = 4, kHeadDim = 64, kThreads = 2;
const int kContexts[] = {1024, 4096, 8192, 16384};
const kv::Format kFormats[] = {kv::Format::kF32, kv::Format::kQ8, kv::Format::kQ4};

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
  auto cache = std::make_unique<kv::KvCache>(cfg, kv::CacheShape{1, kKvHeads, kHeadDim, n_ctx});
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n_ctx) * kKvHeads * kHeadDim);
  for (float& v : x) v = nd(rng);
  cache->write(0, 0, n_ctx, x.data(), x.data());
  return cache;
}

struct Row {
  std::string kind, isa, format;
  int ctx;
  double gbps, us;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<Row> rows;
  std::vector<float> q(kHeads * kHeadDim, 0.1f), out(kHeads * kHeadDim);
  for (int ctx : kContexts) {
    for (kv::Format f : kFormats) {
      const auto cache = filled_cache(f, ctx);
      const double bytes = cache->bytes_per_token() * ctx;  // one layer, K and V
      const kv::KvCache::Impl& c = cache->impl();
      for (simd::Isa isa : simd::runnable_isas()) {
        const simd::Kernels& k = simd::kernels_for(isa);
        const int codec = static_cast<int>(f == kv::Format::kF32 ? simd::Codec::kF32 : f == kv::Format::kQ8 ? simd::Codec::kQ8 : simd::Codec::kQ4);
        std::vector<float> s(4 * ctx), acc(4 * kHeadDim);
        const double sec = best_seconds([&] {
          for (int h = 0; h < kKvHeads; ++h) {
            k.dot[codec]({q.data(), 4, kHeadDim, c.row(c.k, 0, 0, h), c.k.row_bytes * kKvHeads, ctx, kHeadDim, c.group_size, s.data(), static_cast<size_t>(ctx)});
            k.acc[codec]({s.data(), 4, static_cast<size_t>(ctx), c.row(c.v, 0, 0, h), c.v.row_bytes * kKvHeads, ctx, kHeadDim, c.group_size, acc.data(), kHeadDim});
          }
        });
        rows.push_back({"kernel", simd::isa_to_string(isa), kv::format_name(f), ctx, bytes / sec / 1e9, sec * 1e6});
      }
      ops::AttentionScratch scratch(cache->shape(), kHeads, 1, kThreads);
      ops::AttentionArgs a;
      a.q = q.data(), a.n_tokens = 1, a.pos0 = ctx - 1, a.n_heads = kHeads, a.out = out.data();
      const double sec = best_seconds([&] { ops::attention(*cache, a, scratch); });
      rows.push_back({"attention", simd::isa_name(), kv::format_name(f), ctx, bytes / sec / 1e9, sec * 1e6});
    }
  }
  std::printf("%-10s %-7s %-4s %6s %10s %9s\n", "kind", "isa", "fmt", "ctx", "us", "GB/s");
  for (const Row& r : rows) std::printf("%-10s %-7s %-4s %6d %10.1f %9.2f\n", r.kind.c_str(), r.isa.c_str(), r.format.c_str(), r.ctx, r.us, r.gbps);
  std::ofstream js(argc > 1 ? argv[1] : "bench_attention.json");
  js << "{\n  \"shape\": {\"n_heads\": 16, \"n_kv_heads\": 4, \"head_dim\": 64, \"threads_attention\": " << kThreads << "},\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    js << "    {\"kind\": \"" << r.kind << "\", \"isa\": \"" << r.isa << "\", \"format\": \"" << r.format << "\", \"ctx\": " << r.ctx
       << ", \"us\": " << r.us << ", \"gb_per_s\": " << r.gbps << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  return 0;
}
