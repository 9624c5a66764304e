// A Session owns all mutable state of one generation stream: the KV cache and every scratch
// buffer, allocated up front for n_ctx positions. Nothing is allocated inside eval().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kv/kv_cache.h"
#include "model/layer_rows.h"
#include "model/model.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/transformer_ops.h"

namespace kvrt {
class ByteReader;
class ByteWriter;
}  // namespace kvrt

namespace kvrt::model {

// Most threads a session uses (its pool's threads are started when it is made; a failure to start
// them is a kvrt::Error of kind kResource).
constexpr int kMaxThreads = 256;

struct SessionOptions {
  int n_ctx = 0;      // positions; 0 = the model's context length
  int n_threads = 0;  // 0 = all cores (at most kMaxThreads); else 1..kMaxThreads
  // Threads shared with other sessions that run one after the other (validate's lanes, stepped
  // in lockstep), in place of n_threads of the session's own: one set of workers, not one each.
  std::shared_ptr<ThreadPool> pool;
  int n_batch = 256;  // tokens per forward chunk during prefill
  kv::KvConfig kv;
  ops::MatmulPrecision matmul =
      ops::MatmulPrecision::kF32;  // of prefill-sized products (ops/matmul.h)
  // Test harnesses only (validate's negative control): called after each layer's cache write of
  // positions [pos0, pos0 + n_tokens), before attention reads them, with the cache writable.
  // Empty in the product.
  std::function<void(kv::KvCache& cache, int layer, int pos0, int n_tokens)> after_cache_write;
};

class Session;

// A pool of n_threads threads (0 = all cores, at most kMaxThreads), refused out of that range.
std::shared_ptr<ThreadPool> make_thread_pool(int n_threads);

// A point a session can return to: its cache and the logits of its last position, in storage of
// their own made once (Session::save, Session::restore copy into it and out of it without
// allocating). Validation branches from a prompt this way instead of running it again.
struct SessionState {
  explicit SessionState(
      const Session& session);  // storage for `session`'s cache; holds nothing yet
  std::unique_ptr<kv::KvCache> kv;
  int n_past = 0;
  std::vector<int32_t> tokens;     // [n_past], capacity n_ctx
  std::vector<float> last_logits;  // [n_vocab]
};

class Session {
 public:
  Session(const Model& model, const SessionOptions& options);
  ~Session();

  // Runs tokens at positions [n_past, n_past + n). When `logits` is given, writes the logits
  // of every token there ([n][n_vocab]); the last token's logits are kept in last_logits().
  // A token id out of range or running past n_ctx is a kvrt::Error; the session is unchanged then.
  // Parallel loops run on the session's pool (common/thread_pool.h); the caller's OpenMP
  // settings stay as they were.
  void eval(const int32_t* tokens, int n, float* logits = nullptr);

  const float* last_logits() const { return last_logits_.data(); }  // [n_vocab]
  int n_past() const { return n_past_; }
  int n_ctx() const { return n_ctx_; }
  int n_threads() const { return n_threads_; }
  int n_batch() const { return n_batch_; }
  void reset();                          // forget every position
  void save(SessionState& state) const;  // state made for this session or one of the same options
  void restore(const SessionState& state);  // back to the positions and logits saved in `state`
  const int32_t* tokens() const { return tokens_.data(); }  // [n_past] the ids evaluated so far
  // Forgets positions [n_keep, n_past); returns the positions kept: n_keep, or 0 when the cache
  // cannot drop them exactly (kv::KvCache::truncate). last_logits() is stale until the next eval.
  int truncate(int n_keep);
  // State files (model/state_file.h): positions, token ids, last logits and the cache as bytes.
  // load_state refuses bytes that do not fit this session with kvrt::Error(kInput) and leaves it
  // empty.
  void save_state(ByteWriter& out) const;
  void load_state(ByteReader& in);

  const Model& model() const { return model_; }
  const kv::KvCache& kv_cache() const { return *kv_; }
  // Every buffer the session allocated: KV cache, attention and matmul scratch, RoPE table,
  // activations (oneDNN's own primitives aside). planned_bytes gives the same count without
  // allocating: the C API's memory cap.
  size_t bytes_allocated() const;
  static size_t planned_bytes(const Model& model, const SessionOptions& options);
  // The KV cache's shape for these options: a sliding-window layer keeps what a chunk of n_batch
  // tokens sees (kv::CacheShape::windows).
  static kv::CacheShape cache_shape(const Model& model, const SessionOptions& options);
  const char* matmul_implementation() const { return matmul_->implementation(); }
  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }
  ops::MatmulPrecision matmul_precision() const { return matmul_->precision(); }

 private:
  friend class Lockstep;  // steps several sessions at once: check_next, attend, n_past_,
                          // last_logits_
  // Throws unless n tokens fit after n_past_ and are all in the vocabulary.
  void check_next(const int32_t* tokens, int n) const;
  void forward_chunk(const int32_t* tokens, int n, float* logits);
  // Rotates the n rows of q [n][n_heads * head_dim] and k [n][n_kv_heads * head_dim] to the
  // positions from n_past_ on, writes k and v to the cache and attends: out [n][n_heads *
  // head_dim]. The part of a layer that reads this session's cache.
  void attend(int layer, int n, float* q, float* k, const float* v, float* out);

  const Model& model_;
  int n_ctx_, n_threads_, n_batch_;
  int n_past_ = 0;
  std::shared_ptr<ThreadPool> pool_;  // the threads of every parallel loop of eval()
  std::unique_ptr<kv::KvCache> kv_;
  std::function<void(kv::KvCache&, int, int, int)>
      after_cache_write_;  // SessionOptions::after_cache_write
  std::unique_ptr<ops::AttentionScratch> attn_scratch_;
  std::unique_ptr<ops::Matmul> matmul_;
  ops::RopeTable rope_;  // every layer's but the windowed ones of rope_window_
  std::optional<ops::RopeTable> rope_window_;  // the windowed layers' (ModelConfig::rope_window)
  Activations act_;                            // one chunk of up to n_batch tokens
  std::vector<float> last_logits_;             // [n_vocab]
  std::vector<int32_t> tokens_;                // [n_past_] of capacity n_ctx, reserved at creation
};

}  // namespace kvrt::model
