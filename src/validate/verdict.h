// The decision: each limit of the thresholds becomes a check of one setting against one scope.
//  - Continuous metrics (KL, mismatch shares, ...): a percentile bootstrap of the mean over cases.
//  - Paired pass/fail metrics (recall_loss, task_loss): the share of the cases the baseline got
//    right that the candidate loses, with a Wilson score interval; the exact McNemar test of lost
//    against gained answers is reported beside it.
// PASS when the upper bound at the configured confidence is within the limit; FAIL when the
// lower bound at the Bonferroni-corrected confidence (the error split over the setting's checks)
// is beyond it; INCONCLUSIVE otherwise, with too few cases, or when the set cannot resolve the
// limit at all. A setting passes only if every check passes: an intersection-union test, so its
// chance of passing a setting that breaks any one limit is at most that of one check. Only PASS is
// ever enabled.
//
// Sequential stopping (alpha spending with a union bound). The cases run in a random order
// (seeded), so the cases run by any point are a random sample of the set. After 1/(L+1),
// 2/(L+1), ... L/(L+1) of them (L = [sequential] looks) every setting still running is judged; one
// already PASS or FAIL stops there. Each check's error alpha = 1 - confidence is spent over the
// looks: each interim look at alpha * interim_share / L, the final look at alpha * (1 -
// interim_share). Whatever the looks decide, the chance that a check is ever wrong is at most the
// sum, alpha, so looking early does not raise the error rate; it costs the final look a slightly
// higher confidence (95.5% instead of 95% with the shipped 0.1). A look that sees part of the set
// (interim, or the last one of a run the budget ended) counts every limit of the thresholds, and a
// limit it has not measured on twice min_cases cases is INCONCLUSIVE there: a percentile bootstrap
// bound never reaches past the most extreme of a few cases, whatever its confidence.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "validate/binary_stats.h"
#include "validate/bootstrap.h"
#include "validate/case_set.h"
#include "validate/runner.h"
#include "validate/thresholds.h"

namespace kvrt::validate {

enum class Verdict { kPass, kFail, kInconclusive };
const char* verdict_name(Verdict v);  // "PASS", "FAIL", "INCONCLUSIVE"

struct Check {
  Metric metric;
  std::string scope;  // "all", "category=recall", "bucket=long"
  double limit = 0;
  Interval interval;      // mean and bounds at the configured confidence; n_cases behind it
  double fail_lower = 0;  // lower bound at the corrected confidence (the FAIL side); where the mean
                          // is within the limit, so it cannot FAIL, the interval's lower bound
  // The smallest effect the set resolves at the configured confidence: for pass/fail metrics the
  // upper bound with no loss at all (a limit below it cannot PASS); for the others the distance
  // from the mean to the upper bound (the margin below the limit a PASS needs).
  double detectable = 0;
  int cases_needed = 0;  // pass/fail metrics whose limit is below `detectable`: cases that would do
  std::optional<PairedCounts> paired;  // pass/fail metrics: the 2x2 table
  double mcnemar_p = 1;                // pass/fail metrics: exact McNemar p of lost vs gained
  Verdict verdict = Verdict::kInconclusive;
};

// One look at the results (see the top of this file).
struct Look {
  double confidence = 0.95;  // of each check at this look, two-sided
  bool partial = false;      // cases of the set are not run: every limit of the thresholds counts
};
Look interim_look(const Thresholds& t);
Look final_look(const Thresholds& t, bool partial);
// The interim looks for n cases: after round(n k / (L + 1)) cases, k = 1..L, distinct and below n.
std::vector<int> look_points(int n_cases, const Thresholds& t);

struct SettingVerdict {
  Verdict verdict = Verdict::kInconclusive;
  double confidence = 0;  // per check, at the look that gave the verdict
  int n_checks = 0;       // the Bonferroni divisor of the FAIL side
  std::vector<Check> checks;
};

// Per-case values of a metric over the cases that pass `keep` and measured it.
std::vector<double> metric_values(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                                  const std::function<bool(const Case&)>& keep);

// The 2x2 table of a pass/fail metric over the cases that pass `keep`.
PairedCounts paired_counts(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                           const std::function<bool(const Case&)>& keep);

Verdict decide(const Check& c, int min_cases);

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t,
                     const Look& look);
// The final look of a run of the whole set.
SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t);

}  // namespace kvrt::validate
