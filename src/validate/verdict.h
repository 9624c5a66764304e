// The decision: each limit of the thresholds becomes a check of one setting against one scope.
//  - Continuous metrics (KL, mismatch shares, ...): a percentile bootstrap of the mean over cases.
//  - Paired pass/fail metrics (recall_loss): the share of the cases the baseline got right that
//    the candidate loses, with a Wilson score interval; the exact McNemar test of lost against
//    gained answers is reported beside it.
// PASS when the upper bound at the configured confidence is within the limit; FAIL when the
// lower bound at the Bonferroni-corrected confidence (the error split over the setting's checks)
// is beyond it; INCONCLUSIVE otherwise, with too few cases, or when the set cannot resolve the
// limit at all. A setting passes only if every check passes: an intersection-union test, so its
// chance of passing a setting that breaks any one limit is at most that of one check. Only PASS is
// ever enabled.
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
  Interval interval;       // mean and bounds at the configured confidence; n_cases behind it
  double fail_lower = 0;   // lower bound at the corrected confidence (the FAIL side)
  // The smallest effect the set resolves at the configured confidence: for pass/fail metrics the
  // upper bound with no loss at all (a limit below it cannot PASS); for the others the distance
  // from the mean to the upper bound (the margin below the limit a PASS needs).
  double detectable = 0;
  int cases_needed = 0;    // pass/fail metrics whose limit is below `detectable`: cases that would do
  std::optional<PairedCounts> paired;  // pass/fail metrics: the 2x2 table
  double mcnemar_p = 1;                // pass/fail metrics: exact McNemar p of lost vs gained
  Verdict verdict = Verdict::kInconclusive;
};

struct SettingVerdict {
  Verdict verdict = Verdict::kInconclusive;
  int n_checks = 0;  // the Bonferroni divisor of the FAIL side
  std::vector<Check> checks;
};

// Per-case values of a metric over the cases that pass `keep` and measured it.
std::vector<double> metric_values(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                                  const std::function<bool(const Case&)>& keep);

// The 2x2 table of a pass/fail metric over the cases that pass `keep`.
PairedCounts paired_counts(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                           const std::function<bool(const Case&)>& keep);

Verdict decide(const Check& c, int min_cases);

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t);

// The smallest-memory setting whose verdict is PASS; -1 when none passed.
int recommend(const std::vector<SettingResult>& results, const std::vector<SettingVerdict>& verdicts);

}  // namespace kvrt::validate
