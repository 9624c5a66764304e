// Shared pieces of the decode (attention.cc) and prefill (attention_prefill.cc) attention paths.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "kv/cache_view.h"
#include "ops/attention.h"
#include "simd/kernels.h"

namespace kvrt::ops {

constexpr int kTile = 64;  // key positions per online-softmax step
static_assert(kv::kRingAlign % kTile == 0,
              "a chunk of packed positions must not wrap around a sliding-window ring");

// Key positions are read in chunks of kTile positions, the sinks apart, so that every chunk of
// packed positions starts on a tile: [0, 64), ... up to the sinks' end, then [sinks, sinks + 64),
// ... The chunk holding position j, and the end of the chunk that starts at j0 (at most n_pos).
inline int chunk_start(const kv::HeadView& v, int j) {
  const int sinks = v.k.n_sinks();
  return j < sinks ? j / kTile * kTile : sinks + (j - sinks) / kTile * kTile;
}
inline int chunk_end(const kv::HeadView& v, int j0, int n_pos) {
  const int sinks = v.k.n_sinks();
  return std::min(n_pos, j0 < sinks ? std::min(sinks, j0 + kTile) : j0 + kTile);
}

// Per-thread buffers, sized once; `rows` = query rows handled together (GQA group x tokens).
struct ThreadScratch {
  std::vector<float>
      q;  // [rows][head_dim]  scaled (and rotated) queries (prefill: [head_dim][rows])
  std::vector<float> s;     // [rows][kTile]     scores, then probabilities (prefill: [kTile][rows])
  std::vector<float> m, l;  // [rows]            running max and sum of the online softmax
  std::vector<float> o;     // [rows][head_dim]  unnormalized output (prefill: [head_dim][rows])
  std::vector<float> x;     // [kTile][head_dim] prefill: K or V tile as FP32 rows
  std::vector<uint32_t>
      pairs;  // prefill in bf16: Q [head_dim / 2][rows] and P [kTile / 2][rows] as bf16 pairs
  std::vector<int8_t> qc;           // [group][head_dim] key token tiles: queries as int8 codes,
  std::vector<float> qc_d, qc_sum;  // [group][head_dim / G] their scales and Σ q per group
  std::vector<int32_t> qc_csum;     // [group][head_dim / G] Σ codes per group
  simd::QueryCodes codes{};         // views of the four above, set by prepare_query_codes
};

struct AttentionScratch::Impl {
  std::shared_ptr<ThreadPool> pool;
  int n_threads = 1;
  int max_rows = 0;
  int prefill_tokens = 0;  // query tokens per prefill block
  std::vector<ThreadScratch> threads;
  std::vector<uint32_t> staged;  // prefill in bf16: one kv head's K and V as pairs (StagedPairs)
};

// scores[i][j - j0] = q_i · k_j for j in [j0, j1), straight from the packed tiles.
void k_scores(const kv::HeadView& v, const float* q, int n_q, int j0, int j1, float* scores,
              ThreadScratch& ts);
// o_i += sum_j p[i][j - j0] * v_j for j in [j0, j1), straight from the packed tiles.
void v_accumulate(const kv::HeadView& v, const float* p, int n_q, int j0, int j1, float* o);
// Reads ahead into L2 (prefetcht1) every cache line of the packed tiles (or rows) holding
// positions [j0, j1) of one side. The decode path calls it for the next chunk while it computes
// this one: a kv head's tiles are interleaved with the other heads' (kv/kv_cache.cc), runs of
// 1-2 KB every few KB, which the hardware prefetchers follow too late once the cache is in DRAM
// (bench_attention at 8k shows the gain); into L1 (prefetcht0) or two chunks ahead were no faster.
void prefetch_packed(const kv::SideView& s, int j0, int j1);
// rows j0..j1 of one side as FP32 (dequantized a tile at a time for prefill); x [j1 - j0][head_dim]
void load_rows(const kv::HeadView& v, const kv::SideView& s, int j0, int j1, float* x);

// Quantizes the n_q prepared query rows q [n_q][head_dim] for key token tiles (no-op otherwise).
void prepare_query_codes(const kv::HeadView& v, const float* q, int n_q, ThreadScratch& ts);
// Copies a query row, multiplies it by `scale` and rotates it like the stored keys.
void prepare_query(const kv::HeadView& v, float scale, const float* q, float* dst);
// What multiplies the queries: a.q_scale, or 1/sqrt(head_dim) when that is 0.
float query_scale(const AttentionArgs& a, int head_dim);
// The first key position the query at position pos sees (the window's start).
int first_key(const AttentionArgs& a, int pos);
// One row of scores s[0, n) of key positions [j0, j0 + n) for the query at position pos:
// soft-capped, and -inf at the keys it does not see (after pos, or before the window).
void finish_scores(const AttentionArgs& a, int pos, int j0, float* s, int n);
// out = o / l, rotated back if V is stored rotated.
void finish_row(const kv::HeadView& v, const float* o, float l, float* out);

// Prefill in bf16 stages one kv head's K and V of a call as bf16 pairs: at most this many.
size_t staged_pairs_size(const kv::CacheShape& shape);
void attention_prefill(const kv::KvCache& cache, const AttentionArgs& a, AttentionScratch::Impl& s);

}  // namespace kvrt::ops
