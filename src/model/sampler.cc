#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"

namespace kvrt::model {

int32_t argmax(const float* x, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplerOptions& o, int n_vocab)
    : opt_(o), state_(o.seed), order_(size_t(n_vocab)), probs_(size_t(n_vocab)) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature))
    throw Error("temperature must be 0 (greedy) or positive", ErrorKind::kUsage);
  if (o.top_k < 0) throw Error("top-k must be 0 (off) or positive", ErrorKind::kUsage);
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw Error("top-p must be in (0, 1]", ErrorKind::kUsage);
}

// splitmix64: a fully specified generator, so results do not depend on the C++ library.
double Sampler::next_uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(const float* logits, int n_logits) {
  const int n = int(order_.size());
  if (n_logits != n)
    throw Error("the sampler was made for a vocabulary of " + std::to_string(n) +
                    " tokens, the logits have " + std::to_string(n_logits),
                ErrorKind::kUsage);
  if (opt_.temperature == 0.0f) return argmax(logits, n);
  if ((opt_.top_k == 0 || opt_.top_k >= n) && opt_.top_p >= 1.0f) return sample_all(logits);
  std::iota(order_.begin(), order_.end(), 0);
  // Candidates sorted by logit, highest first (ties by id, so the order is deterministic).
  const int k = (opt_.top_k > 0 && opt_.top_k < n) ? opt_.top_k : n;
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), by_logit);
  const double max_logit = logits[order_[0]];
  double sum = 0.0;
  for (int i = 0; i < k; ++i) {
    probs_[size_t(i)] =
        std::exp((double(logits[order_[size_t(i)]]) - max_logit) / opt_.temperature);
    sum += probs_[size_t(i)];
  }
  // Nucleus: keep the smallest prefix whose mass reaches top_p.
  int kept = k;
  if (opt_.top_p < 1.0f) {
    double mass = 0.0;
    for (int i = 0; i < k; ++i) {
      mass += probs_[size_t(i)] / sum;
      if (mass >= opt_.top_p) {
        kept = i + 1;
        break;
      }
    }
  }
  double kept_sum = 0.0;
  for (int i = 0; i < kept; ++i) kept_sum += probs_[size_t(i)];
  double r = next_uniform() * kept_sum;
  for (int i = 0; i < kept; ++i) {
    r -= probs_[size_t(i)];
    if (r < 0.0) return order_[size_t(i)];
  }
  return order_[size_t(kept - 1)];
}

int32_t Sampler::sample_all(const float* logits) {
  const int n = int(order_.size());
  const double max_logit = logits[argmax(logits, n)];
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    probs_[size_t(i)] = std::exp((double(logits[i]) - max_logit) / opt_.temperature);
    sum += probs_[size_t(i)];
  }
  double r = next_uniform() * sum;
  int32_t last = 0;  // the last id of non-zero probability: where rounding may leave r
  for (int i = 0; i < n; ++i) {
    if (probs_[size_t(i)] == 0.0) continue;
    r -= probs_[size_t(i)];
    if (r < 0.0) return i;
    last = i;
  }
  return last;
}

}  // namespace kvrt::model
