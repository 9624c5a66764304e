// Sliding-window layers keep a ring of tiles (kv/cache_layout.h): the outputs equal those of a
// cache that keeps every position, bit for bit, many windows on; the memory stops at the ring
// whatever the context; copies carry a wrapped ring; bad shapes and oversized writes are errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attention_case.h"
#include "common/error.h"
#include "kv/cache_layout.h"
#include "kv/kv_cache.h"
#include "kv/kv_config.h"
#include "ops/attention.h"

using namespace kvrt;
using kv::CacheShape;
using kv::KvCache;
using test::Case;

namespace {

constexpr int kWindow = 48, kChunk = 20;

// One windowed layer of n_ctx positions (a ring when `ring`, else every position kept).
Case windowed_case(int head_dim, int n_chunk, bool ring) {
  Case c;
  c.shape = CacheShape{1, 2, head_dim, 720};
  c.n_heads = 4;
  c.n_prompt = 640;  // 15 windows, more than 3 turns of a ring of 192 positions
  c.n_chunk = n_chunk;
  c.n_decode = 80;
  c.window = kWindow;
  if (ring) {
    c.shape.windows = {kWindow};
    c.shape.n_chunk = n_chunk;
  }
  return c;
}

// Attends the n tokens at pos of d (already written) in layer 0 of cache into out.
void attend(const KvCache& cache, const Case& c, const test::Data& d, int pos, int n,
            std::vector<float>& out) {
  const size_t q_tok = size_t(c.n_heads) * c.shape.head_dim;
  ops::AttentionScratch scratch(c.shape, c.n_heads, n, 1);
  ops::AttentionArgs a;
  a.q = &d.q[pos * q_tok];
  a.n_tokens = n;
  a.pos0 = pos;
  a.n_heads = c.n_heads;
  a.window = c.window;
  out.resize(q_tok * n);
  a.out = out.data();
  ops::attention(cache, a, scratch);
}

}  // namespace

TEST_CASE(
    "a sliding-window layer's ring attends exactly as a cache of every position, many windows on") {
  const char* settings[] = {"f32",
                            "q8",
                            "k=q8,v=q4",
                            "q4",
                            "q4,axis=channel,r=32",
                            "q8,r=16",
                            "q8,sinks=4",
                            "q2,axis=channel,r=32,sinks=5",
                            "q4,rot=1"};
  for (const char* setting : settings) {
    for (int hd : {96, 128}) {
      // head_dim 96 (three groups of 32, no rotation) for a few settings: the test runs under qemu
      // too
      const std::string name = setting;
      if (hd == 96 && name != "f32" && name != "q8" && name != "q4,axis=channel,r=32") continue;
      for (int n_chunk : {1, kChunk}) {
        CAPTURE(std::string(setting));
        CAPTURE(hd);
        CAPTURE(n_chunk);
        const kv::KvConfig cfg = kv::parse_setting(setting);
        const Case full = windowed_case(hd, n_chunk, false),
                   ring = windowed_case(hd, n_chunk, true);
        const test::Data d = test::make_data(full, unsigned(hd + n_chunk), 4.0f);
        const KvCache ring_cache(cfg, ring.shape);
        const kv::SideLayout& k = ring_cache.layout().layers[0].k;
        REQUIRE(k.kept > 0);
        CHECK(k.kept % kv::kRingAlign == 0);
        CHECK(k.kept <= (full.n_prompt + full.n_decode) / 3);  // the ring turns at least 3 times
        const KvCache full_cache(cfg, full.shape);
        for (kv::TileRole role : {kv::TileRole::kKey, kv::TileRole::kValue})
          CHECK(ring_cache.layout().packed_bytes(role) * 3 <=
                full_cache.layout().packed_bytes(role));
        // The ring reads the same bytes with the same kernels: equal outputs, not close ones.
        const std::vector<float> a = test::run_cache(cfg, ring, d, 2);
        CHECK(a == test::run_cache(cfg, full, d, 2));
        if (std::string(setting) == "f32") CHECK(test::max_error(cfg, ring, d, 2) < 2e-5);
      }
    }
  }
}

TEST_CASE(
    "a sliding-window layer's memory stops at its ring, whatever the context; full layers grow") {
  for (const char* setting :
       {"f32", "q8", "q4,axis=channel,r=32,sinks=4", "q4,layers[0]=q8,k[-1]=f32"}) {
    CAPTURE(std::string(setting));
    const kv::KvConfig cfg = kv::parse_setting(setting);
    auto shape = [](int n_ctx) {
      CacheShape s{4, 2, 64, n_ctx};
      s.windows = {kWindow, 0, kWindow, 0};
      s.n_chunk = kChunk;
      return s;
    };
    const KvCache small(cfg, shape(1000)), large(cfg, shape(8000));
    for (const KvCache* c : {&small, &large}) {
      CHECK(c->bytes_allocated() == c->layout().bytes());
      CHECK(c->bytes_allocated() == kv::plan_cache(cfg, c->shape()).bytes());
    }
    const std::vector<kv::LayerKind> a = small.layout().layer_kinds(),
                                     b = large.layout().layer_kinds();
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    CHECK(a[0].sliding_window == 0);
    CHECK(a[0].n_layers == 2);
    CHECK(a[1].sliding_window == kWindow);
    CHECK(a[1].n_layers == 2);
    CHECK(a[1].kept ==
          192);  // window + chunk - 1 = 67 positions, and the 63 before them in the first run read
    CHECK(a[1].packed_bytes == b[1].packed_bytes);
    CHECK(b[0].packed_bytes > 7 * a[0].packed_bytes);
    CHECK(a[1].packed_bytes == size_t(a[1].bytes_per_token * a[1].kept + 0.5));
    // In use: the full layers grow with every position, the windowed ones stop at their ring.
    const double growth = double(large.bytes_in_use(6000) - large.bytes_in_use(2000)) / 4000;
    CHECK(growth == doctest::Approx(b[0].bytes_per_token).epsilon(1e-6));
  }
}

TEST_CASE("a copy of a cache whose ring has wrapped continues exactly as the original") {
  for (const char* setting : {"f32", "q8,sinks=3", "q4,axis=channel,r=8"}) {
    CAPTURE(std::string(setting));
    const kv::KvConfig cfg = kv::parse_setting(setting);
    const Case c = windowed_case(64, kChunk, true);
    const test::Data d = test::make_data(c, 5, 1.0f);
    const size_t kv_tok = size_t(c.shape.n_kv_heads) * c.shape.head_dim;
    KvCache a(cfg, c.shape), b(cfg, c.shape);
    int pos = 0;
    for (; pos + kChunk <= 400; pos += kChunk)
      a.write(0, pos, kChunk, &d.k[pos * kv_tok], &d.v[pos * kv_tok]);
    b.copy_from(a);
    for (; pos < 440; ++pos) {
      std::vector<float> out_a, out_b;
      for (KvCache* cache : {&a, &b})
        cache->write(0, pos, 1, &d.k[pos * kv_tok], &d.v[pos * kv_tok]);
      attend(a, c, d, pos, 1, out_a);
      attend(b, c, d, pos, 1, out_b);
      CAPTURE(pos);
      CHECK(out_a == out_b);
    }
  }
}

TEST_CASE("sliding-window shapes that cannot hold, and writes beyond the chunk, are clear errors") {
  const kv::KvConfig q8 = kv::parse_setting("q8");
  CacheShape s{2, 1, 32, 256};
  s.windows = {kWindow};  // one window for two layers
  CHECK_THROWS_WITH_AS(KvCache(q8, s), doctest::Contains("1 sliding windows for 2 layers"), Error);
  s.windows = {kWindow, -1};
  CHECK_THROWS_WITH_AS(KvCache(q8, s), doctest::Contains("sliding window must be >= 0"), Error);
  s.windows = {kWindow, 0};
  s.n_chunk = 0;
  CHECK_THROWS_WITH_AS(KvCache(q8, s), doctest::Contains("positions per write must be positive"),
                       Error);
  s.n_chunk = 8;
  KvCache cache(q8, s);
  const std::vector<float> kv(9 * 32, 1.0f);
  CHECK_THROWS_WITH_AS(
      cache.write(0, 0, 9, kv.data(), kv.data()),
      doctest::Contains("a write of 9 positions to sliding-window layer 0 exceeds the 8"), Error);
  CHECK(cache.length(0) == 0);
  CHECK_NOTHROW(cache.write(1, 0, 9, kv.data(), kv.data()));  // a full layer takes any write
  // A window that is no shorter than the context keeps every position: no ring.
  s.windows = {512, 0};
  CHECK(KvCache(q8, s).layout().layers[0].k.kept == 0);
}
