#include "model/lockstep.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"

namespace kvrt::model {

Lockstep::Lockstep(const Model& model, int max_sessions, int n_threads)
    : Lockstep(model, max_sessions, std::make_shared<ThreadPool>(std::max(1, n_threads))) {}

Lockstep::Lockstep(const Model& model, int max_sessions, std::shared_ptr<ThreadPool> pool)
    : model_(model),
      matmul_(std::move(pool), ops::MatmulPrecision::kF32, ops::MatmulRows::kEachAlone),
      act_(model.config(), std::max(1, max_sessions)),
      logits_(size_t(act_.rows) * size_t(model.config().n_vocab)) {
  matmul_.reserve(products_plan(model, act_.rows));
}

void Lockstep::step(Session* const* sessions, const int32_t* tokens, int n) {
  const ModelConfig& c = model_.config();
  if (n < 1 || n > act_.rows)
    throw Error("a lockstep decode takes 1 to " + std::to_string(act_.rows) + " sessions, not " +
                    std::to_string(n),
                ErrorKind::kUsage);
  for (int i = 0; i < n; ++i) {
    KVRT_ASSERT(&sessions[i]->model() == &model_);
    KVRT_ASSERT(std::find(sessions, sessions + i, sessions[i]) == sessions + i);
    sessions[i]->check_next(&tokens[i], 1);
  }
  const size_t q_row = size_t(c.n_heads) * c.head_dim, kv_row = size_t(c.n_kv_heads) * c.head_dim;
  embed_rows(model_, tokens, n, act_);
  for (int layer = 0; layer < c.n_layers; ++layer) {
    qkv_rows(model_, layer, n, matmul_, act_);
    for (int i = 0; i < n; ++i)
      sessions[i]->attend(layer, 1, &act_.q[i * q_row], &act_.k[i * kv_row], &act_.v[i * kv_row],
                          &act_.attn[i * q_row]);
    attention_out_rows(model_, layer, n, matmul_, act_);
    ffn_rows(model_, layer, n, matmul_, act_);
  }
  logits_rows(model_, act_.x.data(), n, matmul_, act_.xn.data(), logits_.data());
  for (int i = 0; i < n; ++i) {
    Session& s = *sessions[i];
    s.n_past_ += 1;
    s.tokens_.push_back(tokens[i]);
    std::memcpy(s.last_logits_.data(), &logits_[size_t(i) * c.n_vocab], sizeof(float) * c.n_vocab);
  }
}

}  // namespace kvrt::model
