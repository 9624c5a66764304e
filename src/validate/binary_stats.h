// Statistics of paired pass/fail outcomes: the baseline and a candidate answer the same cases, so
// what differs between them is carried by the discordant pairs (cases one got right and the other
// did not). Used for recall and the other pass/fail metrics instead of a bootstrap of 0/1 values,
// whose interval collapses to a point when no case is lost and so claims a precision it lacks.
#pragma once

namespace kvrt::validate {

// The 2x2 table of one candidate against the baseline.
struct PairedCounts {
  int both = 0;     // baseline right, candidate right
  int lost = 0;     // baseline right, candidate wrong (discordant)
  int gained = 0;   // baseline wrong, candidate right (discordant)
  int neither = 0;  // both wrong

  int n() const { return both + lost + gained + neither; }
  int baseline_right() const { return both + lost; }
};

// Inverse of the standard normal CDF, for p in (0, 1).
double normal_quantile(double p);

// The z of a two-sided interval at `confidence` whose error is split over n_checks checks
// (Bonferroni): Phi^-1(1 - (1 - confidence) / (2 n_checks)).
double z_for(double confidence, int n_checks);

struct Proportion {
  double estimate = 0, lower = 0, upper = 0;
};

// Wilson score interval for k successes in n trials (n > 0) at normal quantile z. Unlike the
// Wald interval it stays honest at k = 0: the upper bound is z^2 / (n + z^2), never 0.
Proportion wilson(int k, int n, double z);

// The smallest share of losses an n-case set can show to be below a limit: the Wilson upper bound
// with no loss at all. A limit below it cannot PASS however good the setting.
double wilson_resolution(int n, double z);
// The fewest cases with which wilson_resolution(n, z) <= limit (limit in (0, 1)).
int cases_needed(double limit, double z);

// Exact McNemar test: two-sided p-value of lost vs gained under H0 "a discordant pair is equally
// likely either way" (binomial(lost + gained, 1/2)); 1 when there is no discordant pair.
double mcnemar_exact_p(int lost, int gained);

}  // namespace kvrt::validate
