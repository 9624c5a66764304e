#include "validate/binary_stats.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace kvrt::validate {

double normal_quantile(double p) {
  KVRT_ASSERT(p > 0 && p < 1);
  // Bisection on Phi(z) = erfc(-z / sqrt 2) / 2: 200 halvings of [-40, 40] reach double precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

double z_for(double confidence, int n_checks) {
  KVRT_ASSERT(confidence > 0 && confidence < 1 && n_checks >= 1);
  return normal_quantile(1.0 - (1.0 - confidence) / (2.0 * n_checks));
}

Proportion wilson(int k, int n, double z) {
  KVRT_ASSERT(n > 0 && k >= 0 && k <= n);
  const double p = double(k) / n, z2 = z * z;
  const double centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
  const double half = z / (1.0 + z2 / n) * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n));
  // At k = 0 (k = n) the bound is 0 (1) exactly; the formula leaves a rounding residue.
  return {p, k == 0 ? 0.0 : std::max(0.0, centre - half),
          k == n ? 1.0 : std::min(1.0, centre + half)};
}

double wilson_resolution(int n, double z) { return z * z / (n + z * z); }

int cases_needed(double limit, double z) {
  KVRT_ASSERT(limit > 0 && limit < 1);
  // z^2 / (n + z^2) <= limit  <=>  n >= z^2 (1 - limit) / limit
  return int(std::ceil(z * z * (1.0 - limit) / limit - 1e-9));
}

double mcnemar_exact_p(int lost, int gained) {
  KVRT_ASSERT(lost >= 0 && gained >= 0);
  const int n = lost + gained, k = std::min(lost, gained);
  if (n == 0) return 1.0;
  // 2 P(X <= k), X ~ binomial(n, 1/2), summed in the log domain so large n does not overflow.
  double tail = 0;
  for (int i = 0; i <= k; ++i)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                     n * std::log(2.0));
  return std::min(1.0, 2.0 * tail);
}

}  // namespace kvrt::validate
