#include "validate/noise_warning.h"

#include <algorithm>

namespace kvrt::validate {
namespace {

std::string check_name(const Check& c) {
  return std::string(metric_name(c.metric)) + " (" + c.scope + ")";
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// Why a check that did not PASS is held back by its number of cases, and what would fix it; "" when
// it has cases enough to be decided (then its limit is what keeps it from PASS).
std::string short_of_cases(const Check& c, int min_cases) {
  if (c.verdict != Verdict::kInconclusive) return "";
  const int n = c.interval.n_cases;
  if (n >= min_cases && c.cases_needed == 0) return "";
  const int needed = std::max(min_cases, c.cases_needed);
  const bool one = n == 1;
  std::string what = one ? "case" : "cases", fix = "add cases that it measures";
  if (c.metric == Metric::kRecallLoss) {
    what = one ? "answer the baseline recalls" : "answers the baseline recalls";
    fix = "add recall cases the model answers, or validate a model that recalls them";
  } else if (c.metric == Metric::kTaskLoss) {
    what = one ? "task case the baseline passes" : "task cases the baseline passes";
    fix = "add task cases the model passes";
  }
  std::string s = check_name(c) + " has " + std::to_string(n) + " " + what + " and needs " +
                  std::to_string(needed);
  if (c.cases_needed > 0) s += " to resolve its limit of " + format_number(c.limit);
  else s += " (min_cases)";
  if (c.paired && c.paired->lost > 0)
    s += " (the noise floor lost " + std::to_string(c.paired->lost) + ")";
  return s + ": " + fix;
}

}  // namespace

std::vector<std::string> noise_floor_warnings(const SettingVerdict& noise, int min_cases) {
  if (noise.verdict == Verdict::kPass) return {};
  if (noise.checks.empty())
    return {
        "the noise floor has no check: no limit of the thresholds file measures this "
        "acceptance set"};
  std::vector<std::string> few, beyond;
  const Check* kl = nullptr;
  for (const Check& c : noise.checks) {
    if (c.metric == Metric::kKl && c.scope == "all") kl = &c;
    if (c.verdict == Verdict::kPass) continue;
    if (std::string why = short_of_cases(c, min_cases); !why.empty()) {
      few.push_back(std::move(why));
    } else {
      beyond.push_back(check_name(c) + " " + verdict_name(c.verdict) + ", mean " +
                       format_number(c.interval.mean) + " against a limit of " +
                       format_number(c.limit));
    }
  }
  std::vector<std::string> out;
  if (!beyond.empty())
    out.push_back("the noise floor (FP32 against FP32) did not PASS " + join(beyond) +
                  ": the thresholds are below what FP32 itself reproduces");
  if (!few.empty())
    out.push_back(std::string(beyond.empty() ? "the noise floor (FP32 against FP32) is not PASS"
                                             : "besides, the noise floor is not PASS") +
                  " only because the acceptance set has too few cases for some checks, not "
                  "because of the thresholds" +
                  (kl ? " (its mean KL: " + format_number(kl->interval.mean) + ")" : "") + ": " +
                  join(few) + ". No setting can PASS these checks on this set");
  return out;
}

std::vector<std::string> noise_floor_warnings(const Report& r) {
  const SettingResult& s = r.run->noise_floor;
  // Judged as validation.cc judges it: on part of the set a check needs twice min_cases cases.
  const bool partial = s.look >= 0 || s.n_run < int(r.cases->size());
  return noise_floor_warnings(r.noise_verdict,
                              partial ? 2 * r.thresholds->min_cases : r.thresholds->min_cases);
}

}  // namespace kvrt::validate
