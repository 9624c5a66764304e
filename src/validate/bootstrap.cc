#include "validate/bootstrap.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace kvrt::validate {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) without modulo bias worth caring about for n << 2^64.
  size_t below(size_t n) { return size_t((unsigned __int128)next() * n >> 64); }

 private:
  uint64_t state_;
};

// Linear interpolation between order statistics (type 7, as numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double h = (double(sorted.size()) - 1.0) * q;
  const size_t lo = size_t(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Interval bootstrap_mean(const std::vector<double>& x, const BootstrapOptions& o) {
  KVRT_ASSERT(o.resamples > 0 && o.confidence > 0 && o.confidence < 1);
  Interval r;
  r.n_cases = int(x.size());
  if (x.empty()) return r;
  double sum = 0;
  for (double v : x) sum += v;
  r.mean = sum / double(x.size());
  SplitMix64 rng(o.seed);
  std::vector<double> means(size_t(o.resamples));
  for (auto& m : means) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) s += x[rng.below(x.size())];
    m = s / double(x.size());
  }
  std::sort(means.begin(), means.end());
  const double alpha = (1.0 - o.confidence) / 2.0;
  r.lower = quantile(means, alpha);
  r.upper = quantile(means, 1.0 - alpha);
  return r;
}

std::vector<size_t> shuffled_order(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  SplitMix64 rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace kvrt::validate
