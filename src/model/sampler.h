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
  int32_t sample(const float* logits);  // logits: [n_vocab]

 private:
  double next_uniform();  // [0, 1)

  SamplerOptions opt_;
  uint64_t state_;
  std::vector<int32_t> order_;  // [n_vocab] candidate ids
  std::vector<double> probs_;   // [n_vocab]
};

int32_t argmax(const float* x, int n);

}  // namespace kvrt::model
