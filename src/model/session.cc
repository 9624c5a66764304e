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
    throw Error("thread count " + std::to_string(n_threads) + " is out of range: 0 (all cores) or 1 to " +
                    std::to_string(kMaxThreads), ErrorKind::kUsage);
  return n_threads > 0 ? n_threads : std::min(omp_get_num_procs(), kMaxThreads);
}

// The products of one chunk of n_batch tokens: the longest W row, and the longest one widened to
// FP32 (stored in another type).
ops::MatmulPlan matmul_plan(const Weights& w, int n_batch) {
  ops::MatmulPlan p;
  p.n_rows = n_batch;
  const auto take = [&](const ops::WeightMatrix& m) {
    p.n_in = std::max(p.n_in, m.n_in);
    if (m.type != simd::WeightType::kF32) p.n_in_widened = std::max(p.n_in_widened, m.n_in);
  };
  for (const LayerWeights& l : w.layers)
    for (const ops::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) take(*m);
  take(w.output);
  return p;
}

// Floats of the per-chunk activations of n_batch tokens (x_ .. up_) and last_logits_.
size_t activation_floats(const ModelConfig& c, int n_batch) {
  const size_t q = size_t(c.n_heads) * c.head_dim, kv = size_t(c.n_kv_heads) * c.head_dim;
  return size_t(n_batch) * (2 * size_t(c.d_model) + 2 * q + 2 * kv + 2 * size_t(c.d_ff)) + size_t(c.n_vocab);
}

}  // namespace

kv::CacheShape Session::cache_shape(const Model& model, const SessionOptions& o) {
  const ModelConfig& c = model.config();
  const int n_ctx = resolve_ctx(c, o.n_ctx);
  kv::CacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim, n_ctx};
  if (c.sliding_window == 0) return shape;
  for (int layer = 0; layer < c.n_layers; ++layer) shape.windows.push_back(c.window_of(layer));
  shape.n_chunk = std::clamp(o.n_batch, 1, n_ctx);  // eval writes a chunk of n_batch tokens, then attends
  return shape;
}

size_t Session::planned_bytes(const Model& model, const SessionOptions& o) {
  const ModelConfig& c = model.config();
  const int n_ctx = resolve_ctx(c, o.n_ctx), n_threads = resolve_threads(o.n_threads);
  const int n_batch = std::clamp(o.n_batch, 1, n_ctx);
  const kv::CacheShape shape = cache_shape(model, o);
  return kv::plan_cache(o.kv, shape).bytes() + ops::AttentionScratch::bytes_for(shape, c.n_heads, n_threads) +
         ops::Matmul::scratch_bytes(n_threads, o.matmul, matmul_plan(model.weights(), n_batch)) +
         ops::RopeTable::bytes_for(n_ctx, c.rope_dim) + activation_floats(c, n_batch) * sizeof(float);
}

Session::Session(const Model& model, const SessionOptions& o)
    : model_(model),
      n_ctx_(resolve_ctx(model.config(), o.n_ctx)),
      n_threads_(resolve_threads(o.n_threads)),
      n_batch_(std::clamp(o.n_batch, 1, n_ctx_)),
      rope_(n_ctx_, model.config().rope_dim, model.config().rope_base, model.weights().rope_freqs) {
  const ModelConfig& c = model.config();
  const kv::CacheShape shape = cache_shape(model, o);
  kv_ = std::make_unique<kv::KvCache>(o.kv, shape);
  after_cache_write_ = o.after_cache_write;
  attn_scratch_ = std::make_unique<ops::AttentionScratch>(shape, c.n_heads, n_batch_, n_threads_);
  matmul_ = std::make_unique<ops::Matmul>(n_threads_, o.matmul);
  matmul_->reserve(matmul_plan(model.weights(), n_batch_));
  const size_t b = size_t(n_batch_);
  x_.resize(b * c.d_model);
  xn_.resize(b * c.d_model);
  q_.resize(b * c.n_heads * c.head_dim);
  attn_.resize(q_.size());
  k_.resize(b * c.n_kv_heads * c.head_dim);
  v_.resize(k_.size());
  gate_.resize(b * c.d_ff);
  up_.resize(b * c.d_ff);
  last_logits_.resize(size_t(c.n_vocab));
}

Session::~Session() = default;

size_t Session::bytes_allocated() const {
  const size_t floats = x_.size() + xn_.size() + q_.size() + attn_.size() + k_.size() + v_.size() +
                        gate_.size() + up_.size() + last_logits_.size();
  return kv_->bytes_allocated() + attn_scratch_->bytes_allocated() + matmul_->bytes_allocated() +
         rope_.bytes_allocated() + floats * sizeof(float);
}

void Session::reset() {
  kv_->clear();
  n_past_ = 0;
}

SessionState::SessionState(const Session& session)
    : kv(std::make_unique<kv::KvCache>(session.kv_cache().config(), session.kv_cache().shape())),
      last_logits(size_t(session.model().config().n_vocab)) {}

void Session::save(SessionState& state) const {
  state.kv->copy_from(*kv_);
  state.n_past = n_past_;
  std::copy(last_logits_.begin(), last_logits_.end(), state.last_logits.begin());
}

void Session::restore(const SessionState& state) {
  kv_->copy_from(*state.kv);
  n_past_ = state.n_past;
  std::copy(state.last_logits.begin(), state.last_logits.end(), last_logits_.begin());
}

void Session::eval(const int32_t* tokens, int n, float* logits) {
  const ModelConfig& c = model_.config();
  if (n <= 0) throw Error("nothing to evaluate: the token list is empty", ErrorKind::kUsage);
  if (n > n_ctx_ - n_past_)
    throw Error("context full: " + std::to_string(n_past_) + " positions used, " +
                    std::to_string(n) + " more do not fit in the context of " +
                    std::to_string(n_ctx_) + " (raise -c)",
                ErrorKind::kResource);
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= c.n_vocab)
      throw Error("token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
                      std::to_string(c.n_vocab),
                  ErrorKind::kUsage);
  for (int done = 0; done < n; done += n_batch_) {
    const int chunk = std::min(n_batch_, n - done);
    forward_chunk(tokens + done, chunk, logits ? logits + size_t(done) * c.n_vocab : nullptr);
  }
}

void Session::forward_chunk(const int32_t* tokens, int n, float* logits) {
  const ModelConfig& c = model_.config();
  const Weights& w = model_.weights();
  for (int t = 0; t < n; ++t) w.embedding(tokens[t], &x_[size_t(t) * c.d_model]);
  ops::scale(x_.data(), int64_t(n) * c.d_model, c.embedding_scale);
  for (int layer = 0; layer < c.n_layers; ++layer) {
    attention_block(layer, n);
    ffn_block(layer, n);
  }
  n_past_ += n;
  if (logits) {
    ops::rms_norm(x_.data(), w.output_norm, n, c.d_model, c.rms_eps, xn_.data());
    matmul_->run(xn_.data(), n, w.output, logits);
    if (c.final_softcap > 0.0f) ops::softcap(logits, int64_t(n) * c.n_vocab, c.final_softcap);
    std::memcpy(last_logits_.data(), logits + size_t(n - 1) * c.n_vocab,
                sizeof(float) * c.n_vocab);
  } else {
    const float* last = &x_[size_t(n - 1) * c.d_model];
    ops::rms_norm(last, w.output_norm, 1, c.d_model, c.rms_eps, xn_.data());
    matmul_->run(xn_.data(), 1, w.output, last_logits_.data());
    if (c.final_softcap > 0.0f) ops::softcap(last_logits_.data(), c.n_vocab, c.final_softcap);
  }
}

// y[n][w.n_out] = xn · Wᵀ (+ bias, where the layer has one).
void Session::project(const ops::WeightMatrix& w, const float* bias, int n, float* y) {
  matmul_->run(xn_.data(), n, w, y);
  if (bias) ops::add_bias(y, bias, n, int(w.n_out));
}

// x += Wo · attention(rope(Wq·xn + bq), rope(Wk·xn + bk), Wv·xn + bv) for the n tokens of the chunk,
// post-normed where the layer says.
void Session::attention_block(int layer, int n) {
  const ModelConfig& c = model_.config();
  const LayerWeights& lw = model_.weights().layers[size_t(layer)];
  const int pos0 = n_past_;
  ops::rms_norm(x_.data(), lw.attn_norm, n, c.d_model, c.rms_eps, xn_.data());
  project(lw.wq, lw.bq, n, q_.data());
  project(lw.wk, lw.bk, n, k_.data());
  project(lw.wv, lw.bv, n, v_.data());
  const bool neox = c.rope_pairing == RopePairing::kNeox;
  ops::rope(rope_, {q_.data(), n, c.n_heads, c.head_dim, pos0, neox});
  ops::rope(rope_, {k_.data(), n, c.n_kv_heads, c.head_dim, pos0, neox});
  kv_->write(layer, pos0, n, k_.data(), v_.data());
  if (after_cache_write_) after_cache_write_(*kv_, layer, pos0, n);
  ops::AttentionArgs args;
  args.layer = layer;
  args.q = q_.data();
  args.n_tokens = n;
  args.pos0 = pos0;
  args.n_heads = c.n_heads;
  args.q_scale = c.query_scale;
  args.softcap = c.attn_softcap;
  args.window = c.window_of(layer);
  args.out = attn_.data();
  args.bf16 = matmul_->precision() == ops::MatmulPrecision::kBf16;
  ops::attention(*kv_, args, *attn_scratch_);
  matmul_->run(attn_.data(), n, lw.wo, xn_.data());
  if (lw.post_attn_norm) ops::rms_norm(xn_.data(), lw.post_attn_norm, n, c.d_model, c.rms_eps, xn_.data());
  ops::add_inplace(x_.data(), xn_.data(), int64_t(n) * c.d_model);
}

// x += W_down · (act(W_gate·xn) ⊙ W_up·xn), act = silu or tanh-GELU, post-normed where the layer says.
void Session::ffn_block(int layer, int n) {
  const ModelConfig& c = model_.config();
  const LayerWeights& lw = model_.weights().layers[size_t(layer)];
  ops::rms_norm(x_.data(), lw.ffn_norm, n, c.d_model, c.rms_eps, xn_.data());
  matmul_->run(xn_.data(), n, lw.w_gate, gate_.data());
  matmul_->run(xn_.data(), n, lw.w_up, up_.data());
  switch (c.architecture->activation) {
    case Activation::kSilu: ops::swiglu(gate_.data(), up_.data(), int64_t(n) * c.d_ff); break;
    case Activation::kGeluTanh: ops::geglu(gate_.data(), up_.data(), int64_t(n) * c.d_ff); break;
  }
  matmul_->run(gate_.data(), n, lw.w_down, xn_.data());
  if (lw.post_ffn_norm) ops::rms_norm(xn_.data(), lw.post_ffn_norm, n, c.d_model, c.rms_eps, xn_.data());
  ops::add_inplace(x_.data(), xn_.data(), int64_t(n) * c.d_model);
}

}  // namespace kvrt::model
