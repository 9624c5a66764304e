#include "model/session.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kv/cache_layout.h"

namespace kvrt::model {
namespace {

int resolve_ctx(const ModelConfig& c, int n_ctx) {
  if (n_ctx < 0) throw Error("context length must be positive", ErrorKind::kUsage);
  return n_ctx == 0 ? c.n_ctx_train : n_ctx;
}

int resolve_threads(int n_threads) {
  if (n_threads < 0 || n_threads > kMaxThreads)
    throw Error("thread count " + std::to_string(n_threads) +
                    " is out of range: 0 (all cores) or 1 to " + std::to_string(kMaxThreads),
                ErrorKind::kUsage);
  return n_threads > 0 ? n_threads : std::min(omp_get_num_procs(), kMaxThreads);
}

// The session's threads: the shared pool of the options, or a count checked and resolved.
int session_threads(const SessionOptions& o) {
  return o.pool ? o.pool->n_threads() : resolve_threads(o.n_threads);
}

}  // namespace

std::shared_ptr<ThreadPool> make_thread_pool(int n_threads) {
  return std::make_shared<ThreadPool>(resolve_threads(n_threads));
}

kv::CacheShape Session::cache_shape(const Model& model, const SessionOptions& o) {
  const ModelConfig& c = model.config();
  const int n_ctx = resolve_ctx(c, o.n_ctx);
  kv::CacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim, n_ctx};
  if (c.sliding_window == 0) return shape;
  for (int layer = 0; layer < c.n_layers; ++layer) shape.windows.push_back(c.window_of(layer));
  shape.n_chunk =
      std::clamp(o.n_batch, 1, n_ctx);  // eval writes a chunk of n_batch tokens, then attends
  return shape;
}

size_t Session::planned_bytes(const Model& model, const SessionOptions& o) {
  const ModelConfig& c = model.config();
  const int n_ctx = resolve_ctx(c, o.n_ctx), n_threads = session_threads(o);
  const int n_batch = std::clamp(o.n_batch, 1, n_ctx);
  const kv::CacheShape shape = cache_shape(model, o);
  return kv::plan_cache(o.kv, shape).bytes() +
         ops::AttentionScratch::bytes_for(shape, c.n_heads, n_threads,
                                          o.matmul == ops::MatmulPrecision::kBf16) +
         ops::Matmul::scratch_bytes(n_threads, o.matmul, products_plan(model, n_batch)) +
         ops::RopeTable::bytes_for(n_ctx, c.rope_dim) * (c.has_window_rope ? 2 : 1) +
         (Activations::floats(c, n_batch) + size_t(c.n_vocab)) * sizeof(float) +
         size_t(n_ctx) * sizeof(int32_t);
}

Session::Session(const Model& model, const SessionOptions& o)
    : model_(model),
      n_ctx_(resolve_ctx(model.config(), o.n_ctx)),
      n_threads_(session_threads(o)),
      n_batch_(std::clamp(o.n_batch, 1, n_ctx_)),
      rope_(n_ctx_, model.config().rope_dim, model.config().rope,
            model.weights().rope_factors(n_ctx_, model.config().rope.orig_ctx)),
      act_(model.config(), n_batch_) {
  const ModelConfig& c = model.config();
  if (c.has_window_rope) rope_window_.emplace(n_ctx_, c.rope_dim, c.rope_window);
  const kv::CacheShape shape = cache_shape(model, o);
  kv_ = std::make_unique<kv::KvCache>(o.kv, shape);
  after_cache_write_ = o.after_cache_write;
  pool_ = o.pool ? o.pool : std::make_shared<ThreadPool>(n_threads_);
  attn_scratch_ = std::make_unique<ops::AttentionScratch>(shape, c.n_heads, n_batch_, pool_,
                                                          o.matmul == ops::MatmulPrecision::kBf16);
  matmul_ = std::make_unique<ops::Matmul>(pool_, o.matmul);
  matmul_->reserve(products_plan(model, n_batch_));
  last_logits_.resize(size_t(c.n_vocab));
  tokens_.reserve(size_t(n_ctx_));
}

Session::~Session() = default;

size_t Session::bytes_allocated() const {
  return kv_->bytes_allocated() + attn_scratch_->bytes_allocated() + matmul_->bytes_allocated() +
         rope_.bytes_allocated() + (rope_window_ ? rope_window_->bytes_allocated() : 0) +
         act_.bytes_allocated() + last_logits_.size() * sizeof(float) +
         tokens_.capacity() * sizeof(int32_t);
}

void Session::reset() {
  kv_->clear();
  n_past_ = 0;
  tokens_.clear();
}

SessionState::SessionState(const Session& session)
    : kv(std::make_unique<kv::KvCache>(session.kv_cache().config(), session.kv_cache().shape())),
      last_logits(size_t(session.model().config().n_vocab)) {
  tokens.reserve(size_t(session.n_ctx()));
}

void Session::save(SessionState& state) const {
  state.kv->copy_from(*kv_);
  state.n_past = n_past_;
  state.tokens.assign(tokens_.begin(), tokens_.end());
  std::copy(last_logits_.begin(), last_logits_.end(), state.last_logits.begin());
}

void Session::restore(const SessionState& state) {
  kv_->copy_from(*state.kv);
  n_past_ = state.n_past;
  tokens_.assign(state.tokens.begin(), state.tokens.end());
  std::copy(state.last_logits.begin(), state.last_logits.end(), last_logits_.begin());
}

void Session::check_next(const int32_t* tokens, int n) const {
  const int n_vocab = model_.config().n_vocab;
  if (n <= 0) throw Error("nothing to evaluate: the token list is empty", ErrorKind::kUsage);
  if (n > n_ctx_ - n_past_)
    throw Error("context full: " + std::to_string(n_past_) + " positions used, " +
                    std::to_string(n) + " more do not fit in the context of " +
                    std::to_string(n_ctx_) + " (raise -c)",
                ErrorKind::kResource);
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      throw Error("token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
                      std::to_string(n_vocab),
                  ErrorKind::kUsage);
}

void Session::eval(const int32_t* tokens, int n, float* logits) {
  check_next(tokens, n);
  for (int done = 0; done < n; done += n_batch_) {
    const int chunk = std::min(n_batch_, n - done);
    forward_chunk(tokens + done, chunk,
                  logits ? logits + size_t(done) * model_.config().n_vocab : nullptr);
  }
}

void Session::forward_chunk(const int32_t* tokens, int n, float* logits) {
  const ModelConfig& c = model_.config();
  embed_rows(model_, tokens, n, act_);
  for (int layer = 0; layer < c.n_layers; ++layer) {
    qkv_rows(model_, layer, n, *matmul_, act_);
    attend(layer, n, act_.q.data(), act_.k.data(), act_.v.data(), act_.attn.data());
    attention_out_rows(model_, layer, n, *matmul_, act_);
    ffn_rows(model_, layer, n, *matmul_, act_);
  }
  n_past_ += n;
  tokens_.insert(tokens_.end(), tokens, tokens + n);
  if (logits) {
    logits_rows(model_, act_.x.data(), n, *matmul_, act_.xn.data(), logits);
    std::memcpy(last_logits_.data(), logits + size_t(n - 1) * c.n_vocab, sizeof(float) * c.n_vocab);
  } else {
    logits_rows(model_, &act_.x[size_t(n - 1) * c.d_model], 1, *matmul_, act_.xn.data(),
                last_logits_.data());
  }
}

void Session::attend(int layer, int n, float* q, float* k, const float* v, float* out) {
  const ModelConfig& c = model_.config();
  const int pos0 = n_past_;
  if (c.rope_at(layer)) {
    const ops::RopeTable& table = c.uses_window_rope(layer) ? *rope_window_ : rope_;
    const bool neox = c.rope_pairing == RopePairing::kNeox;
    ops::rope(table, {q, n, c.n_heads, c.head_dim, pos0, neox}, matmul_->pool());
    ops::rope(table, {k, n, c.n_kv_heads, c.head_dim, pos0, neox}, matmul_->pool());
  }
  if (c.attn_temp_scale > 0.0f)
    ops::attention_temperature(q, n, c.n_heads * c.head_dim, pos0, c.attn_temp_scale,
                               c.attn_temp_floor);
  kv_->write(layer, pos0, n, k, v);
  if (after_cache_write_) after_cache_write_(*kv_, layer, pos0, n);
  ops::AttentionArgs args;
  args.layer = layer;
  args.q = q;
  args.n_tokens = n;
  args.pos0 = pos0;
  args.n_heads = c.n_heads;
  args.q_scale = c.query_scale;
  args.softcap = c.attn_softcap;
  args.window = c.window_of(layer);
  args.out = out;
  args.bf16 = matmul_->precision() == ops::MatmulPrecision::kBf16;
  ops::attention(*kv_, args, *attn_scratch_);
}

}  // namespace kvrt::model
