// Next-token sampling: greedy, or temperature with top-k and top-p, from a seeded generator
// whose sequence is the same on every platform (same seed and settings give the same tokens).
#pragma once

#include <cstdint>
#include <vector>

namespace kvrt::model {

struct SamplerOptions {
  float temperature = 0.0f;  // 0 = greedy (argmax)
  int top_k = 0;             // 0 = no limit
  float top_p = 1.0f;        // 1 = no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  Sampler(const SamplerOptions& options, int n_vocab);  // invalid options are kvrt::Error(kUsage)
  // logits: [n_logits]. n_logits other than the sampler's n_vocab (a sampler made for another
  // model) is a kvrt::Error(kUsage), raised before any logit is read.
  int32_t sample(const float* logits, int n_logits);
  int n_vocab() const { return int(order_.size()); }
  // The generator's position in its sequence: a saved session (model/state_file.h) carries it, so
  // a resumed generation draws what the uninterrupted one would have.
  uint64_t rng_state() const { return state_; }
  void set_rng_state(uint64_t state) { state_ = state; }

 private:
  double next_uniform();  // [0, 1)
  // Temperature alone (no top-k or top-p cut): a draw from the whole softmax, walking the ids in
  // order. The cuts need the candidates sorted by logit; the whole distribution does not.
  int32_t sample_all(const float* logits);

  SamplerOptions opt_;
  uint64_t state_;
  std::vector<int32_t> order_;  // [n_vocab] candidate ids
  std::vector<double> probs_;   // [n_vocab]
};

int32_t argmax(const float* x, int n);

}  // namespace kvrt::model
