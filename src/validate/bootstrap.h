// Confidence intervals by bootstrap over cases: the unit of resampling is a case (a document),
// never a token, so one long case cannot pass for many independent observations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvrt::validate {

struct BootstrapOptions {
  int resamples = 2000;
  double confidence = 0.95;  // two-sided
  uint64_t seed = 20240611;
};

struct Interval {
  double mean = 0;   // point estimate: mean over cases
  double lower = 0;  // percentile bootstrap bounds of the mean
  double upper = 0;
  int n_cases = 0;
};

// Percentile bootstrap of the mean of per-case values. Deterministic for a given seed
// (splitmix64, independent of the C++ library). Empty input gives n_cases = 0.
Interval bootstrap_mean(const std::vector<double>& per_case, const BootstrapOptions& options);

// A random order of n cases (Fisher-Yates on the same generator), deterministic for a seed: the
// order validate runs its cases in, so that the cases run by any point are a random sample.
std::vector<size_t> shuffled_order(size_t n, uint64_t seed);

}  // namespace kvrt::validate
