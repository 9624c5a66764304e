// One decode step for several sessions of one model at once. Each session runs its own token at
// its own next position on its own cache, with the same numbers, bit for bit, as that session's
// eval of the one token; but the weight products take one row per session in a single call, so
// every weight matrix is read from memory once per step, not once per session (validation steps
// the baseline and every candidate setting together this way). Attention stays per session:
// each reads its own cache.
#pragma once

#include <cstdint>
#include <vector>

#include "model/layer_rows.h"
#include "model/session.h"
#include "ops/matmul.h"

namespace kvrt::model {

class Lockstep {
 public:
  // Steps up to max_sessions sessions of `model` at a time, the products on n_threads threads of
  // its own, or on `pool` (best the sessions' own: their attention runs on theirs).
  Lockstep(const Model& model, int max_sessions, int n_threads);
  Lockstep(const Model& model, int max_sessions, std::shared_ptr<ThreadPool> pool);

  // sessions[i] runs tokens[i] at its next position, for i < n (distinct sessions of this
  // model): as sessions[i]->eval(&tokens[i], 1) does. A token out of the vocabulary or a full
  // context is a kvrt::Error before any session changes.
  void step(Session* const* sessions, const int32_t* tokens, int n);

 private:
  const Model& model_;
  ops::Matmul matmul_;         // MatmulRows::kEachAlone: each row as the session's own one-row call
  Activations act_;            // [max_sessions] rows
  std::vector<float> logits_;  // [max_sessions][n_vocab]
};

}  // namespace kvrt::model
