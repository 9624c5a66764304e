#include "validate/speed.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>
#include <vector>

namespace kvrt::validate {
namespace {

// The state of `session` after positions [0, n_past) holding synthetic keys and values, written
// through the cache as a forward pass writes them (so quantized, windowed and rotated alike).
void fill(model::SessionState& state, const model::ModelConfig& c, int n_past) {
  constexpr int kChunk = 64;
  const size_t row = size_t(c.n_kv_heads) * size_t(c.head_dim);
  std::vector<float> k(kChunk * row), v(kChunk * row);  // [kChunk][n_kv_heads][head_dim]
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  state.kv->clear();
  for (int pos = 0; pos < n_past; pos += kChunk) {
    const int n = std::min(kChunk, n_past - pos);
    for (int layer = 0; layer < c.n_layers; ++layer) {
      for (size_t i = 0; i < size_t(n) * row; ++i) k[i] = normal(rng), v[i] = normal(rng);
      state.kv->write(layer, pos, n, k.data(), v.data());
    }
  }
  state.n_past = n_past;
  std::fill(state.last_logits.begin(), state.last_logits.end(), 0.0f);
}

// The shortest run of `tokens` from `state` (SpeedOptions says how many): one eval for all (a
// prefill chunk), or one per token (decode steps).
double best_seconds(model::Session& s, const model::SessionState& state, const std::vector<int32_t>& tokens,
                    bool one_by_one, const SpeedOptions& o) {
  constexpr int kMaxRepeats = 64;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int r = 0; r < o.repeats || (total < o.min_seconds && r < kMaxRepeats); ++r) {
    s.restore(state);
    const auto t0 = std::chrono::steady_clock::now();
    if (one_by_one) {
      for (const int32_t& t : tokens) s.eval(&t, 1);
    } else {
      s.eval(tokens.data(), int(tokens.size()));
    }
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, t);
    total += t;
  }
  return std::max(best, 1e-9);
}

std::vector<int32_t> some_tokens(int n, int n_vocab) {
  std::vector<int32_t> t(size_t(n), 0);
  for (int i = 0; i < n; ++i) t[size_t(i)] = int32_t((int64_t(i) * 7919 + 13) % n_vocab);
  return t;
}

}  // namespace

Speed measure_speed(model::Session& session, model::SessionState& scratch, int n_ctx, const SpeedOptions& o) {
  Speed s;
  n_ctx = std::min(n_ctx, session.n_ctx());
  if (o.repeats <= 0 || n_ctx < 4) return s;
  const model::ModelConfig& c = session.model().config();
  const int n_prefill = std::max(1, std::min(o.prefill_tokens, n_ctx / 4));
  const int n_decode = std::max(1, std::min(o.decode_tokens, n_ctx / 4));
  fill(scratch, c, n_ctx / 2 - n_prefill / 2);
  s.prefill_tok_s = n_prefill / best_seconds(session, scratch, some_tokens(n_prefill, c.n_vocab), false, o);
  fill(scratch, c, n_ctx - n_decode);
  s.decode_tok_s = n_decode / best_seconds(session, scratch, some_tokens(n_decode, c.n_vocab), true, o);
  session.reset();
  return s;
}

}  // namespace kvrt::validate
