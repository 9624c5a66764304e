#include "validate/verdict.h"

namespace kvrt::validate {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

std::vector<double> metric_values(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                                  const std::function<bool(const Case&)>& keep) {
  std::vector<double> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!keep(cases[i])) continue;
    if (auto v = r.cases[i].value(m)) out.push_back(*v);
  }
  return out;
}

Verdict decide(const Interval& i, double limit, int min_cases) {
  if (i.n_cases < min_cases) return Verdict::kInconclusive;
  if (i.upper <= limit) return Verdict::kPass;
  if (i.lower > limit) return Verdict::kFail;
  return Verdict::kInconclusive;
}

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t) {
  SettingVerdict sv;
  auto add = [&](Metric m, const std::string& scope, double limit, const std::function<bool(const Case&)>& keep) {
    const std::vector<double> values = metric_values(r, cases, m, keep);
    if (values.empty()) return;  // nothing in the set measures this: no check
    Check c{m, scope, limit, bootstrap_mean(values, t.bootstrap), Verdict::kInconclusive};
    c.verdict = decide(c.interval, limit, t.min_cases);
    sv.checks.push_back(c);
  };
  for (const auto& [m, lim] : t.limits) {
    if (lim.max) add(m, "all", *lim.max, [](const Case&) { return true; });
    for (const auto& [cat, limit] : lim.by_category)
      add(m, "category=" + cat, limit, [&cat = cat](const Case& c) { return c.category == cat; });
    for (const auto& [bucket, limit] : lim.by_bucket)
      add(m, "bucket=" + bucket, limit, [&bucket = bucket](const Case& c) { return c.bucket == bucket; });
  }
  bool any_fail = false, all_pass = !sv.checks.empty();
  for (const Check& c : sv.checks) {
    any_fail = any_fail || c.verdict == Verdict::kFail;
    all_pass = all_pass && c.verdict == Verdict::kPass;
  }
  sv.verdict = any_fail ? Verdict::kFail : all_pass ? Verdict::kPass : Verdict::kInconclusive;
  return sv;
}

// Ties keep the earlier setting: settings files list the more precise formats first.
int recommend(const std::vector<SettingResult>& results, const std::vector<SettingVerdict>& verdicts) {
  int best = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    if (verdicts[i].verdict != Verdict::kPass) continue;
    if (best < 0 || results[i].bytes_per_token < results[size_t(best)].bytes_per_token) best = int(i);
  }
  return best;
}

}  // namespace kvrt::validate
