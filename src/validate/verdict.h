// The decision: each limit of the thresholds becomes a check on a bootstrap interval of the
// mean over cases. PASS when the upper bound is within the limit, FAIL when the lower bound is
// beyond it, INCONCLUSIVE otherwise or with too few cases. Only PASS is ever enabled.
#pragma once

#include <functional>
#include <string>
#include <vector>

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
  Interval interval;
  Verdict verdict = Verdict::kInconclusive;
};

struct SettingVerdict {
  Verdict verdict = Verdict::kInconclusive;
  std::vector<Check> checks;
};

// Per-case values of a metric over the cases that pass `keep` and measured it.
std::vector<double> metric_values(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                                  const std::function<bool(const Case&)>& keep);

Verdict decide(const Interval& i, double limit, int min_cases);

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t);

// The smallest-memory setting whose verdict is PASS; -1 when none passed.
int recommend(const std::vector<SettingResult>& results, const std::vector<SettingVerdict>& verdicts);

}  // namespace kvrt::validate
