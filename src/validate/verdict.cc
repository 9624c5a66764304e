#include "validate/verdict.h"

#include <cmath>

namespace kvrt::validate {
namespace {

using Keep = std::function<bool(const Case&)>;

struct Scope {
  Metric metric;
  std::string name;
  double limit;
  Keep keep;
};

std::vector<Scope> scopes_of(const Thresholds& t) {
  std::vector<Scope> out;
  for (const auto& [m, lim] : t.limits) {
    if (lim.max) out.push_back({m, "all", *lim.max, [](const Case&) { return true; }});
    for (const auto& [cat, limit] : lim.by_category)  // a category, or a family of them
      out.push_back({m, "category=" + cat, limit,
                     [&cat = cat](const Case& c) { return category_covers(cat, c.category); }});
    for (const auto& [bucket, limit] : lim.by_bucket)
      out.push_back({m, "bucket=" + bucket, limit,
                     [&bucket = bucket](const Case& c) { return c.bucket == bucket; }});
  }
  return out;
}

// A check of scope s with nothing measured yet.
Check unmeasured(const Scope& s) {
  Check c;
  c.metric = s.metric;
  c.scope = s.name;
  c.limit = s.limit;
  return c;
}

// A pass/fail metric: the share of the baseline's right answers that the candidate loses.
Check paired_check(const Scope& s, const PairedCounts& p, double confidence, int n_checks) {
  Check c = unmeasured(s);
  c.paired = p;
  c.mcnemar_p = mcnemar_exact_p(p.lost, p.gained);
  const int n = p.baseline_right();
  const double z = z_for(confidence, 1);
  c.interval.n_cases = n;
  c.detectable = n > 0 ? wilson_resolution(n, z) : 1.0;
  if (c.detectable > s.limit && s.limit > 0 && s.limit < 1)
    c.cases_needed = cases_needed(s.limit, z);
  if (n == 0) {
    c.interval = {0, 0, 1, 0};
    return c;
  }
  const Proportion w = wilson(p.lost, n, z);
  c.interval = {w.estimate, w.lower, w.upper, n};
  c.fail_lower = wilson(p.lost, n, z_for(confidence, n_checks)).lower;
  return c;
}

// Bootstrap options for a bound at two-sided `confidence`: at least 10 resamples beyond it, so the
// small tails of interim looks and of the corrected FAIL side are not read off one or two
// resamples.
BootstrapOptions bootstrap_at(const BootstrapOptions& base, double confidence) {
  BootstrapOptions o = base;
  o.confidence = confidence;
  o.resamples = std::max(base.resamples, int(std::ceil(10.0 / ((1.0 - confidence) / 2.0))));
  return o;
}

Check bootstrap_check(const Scope& s, const std::vector<double>& values, const Thresholds& t,
                      double confidence, int n_checks) {
  Check c = unmeasured(s);
  c.interval = bootstrap_mean(values, bootstrap_at(t.bootstrap, confidence));
  // The FAIL side's lower bound is below the mean: it is resampled only when it can decide.
  c.fail_lower =
      c.interval.mean > s.limit
          ? bootstrap_mean(values, bootstrap_at(t.bootstrap, 1.0 - (1.0 - confidence) / n_checks))
                .lower
          : c.interval.lower;
  c.detectable = c.interval.upper - c.interval.mean;
  return c;
}

}  // namespace

Look interim_look(const Thresholds& t) {
  const double alpha = 1.0 - t.bootstrap.confidence;
  return {1.0 - alpha * t.sequential.interim_share / std::max(1, t.sequential.looks), true};
}

Look final_look(const Thresholds& t, bool partial) {
  const double alpha = 1.0 - t.bootstrap.confidence;
  const double spent = t.sequential.looks > 0 ? t.sequential.interim_share : 0.0;
  return {1.0 - alpha * (1.0 - spent), partial};
}

std::vector<int> look_points(int n_cases, const Thresholds& t) {
  std::vector<int> out;
  const int l = t.sequential.looks;
  for (int k = 1; k <= l; ++k) {
    const int at = int(std::lround(double(n_cases) * k / (l + 1)));
    if (at > 0 && at < n_cases && (out.empty() || at > out.back())) out.push_back(at);
  }
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

std::vector<double> metric_values(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                                  const Keep& keep) {
  std::vector<double> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!keep(cases[i])) continue;
    if (auto v = r.cases[i].value(m)) out.push_back(*v);
  }
  return out;
}

PairedCounts paired_counts(const SettingResult& r, const std::vector<Case>& cases, Metric m,
                           const Keep& keep) {
  PairedCounts p;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!keep(cases[i])) continue;
    const auto o = r.cases[i].outcomes(m);
    if (!o) continue;
    if (o->first) (o->second ? p.both : p.lost) += 1;
    else (o->second ? p.gained : p.neither) += 1;
  }
  return p;
}

Verdict decide(const Check& c, int min_cases) {
  // A pass/fail limit below what the set resolves cannot PASS (its upper bound is above the limit)
  // but can still FAIL.
  if (c.interval.n_cases < min_cases) return Verdict::kInconclusive;
  if (c.interval.upper <= c.limit) return Verdict::kPass;
  if (c.fail_lower > c.limit) return Verdict::kFail;
  return Verdict::kInconclusive;
}

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t,
                     const Look& look) {
  // Scopes nothing in the set measures make no check (on part of the set, every scope makes one);
  // the checks share the FAIL side's error.
  struct Measured {
    Scope scope;
    std::vector<double> values;          // continuous metrics
    std::optional<PairedCounts> paired;  // pass/fail metrics
  };
  std::vector<Measured> measured;
  for (const Scope& s : scopes_of(t)) {
    if (metric_is_paired(s.metric)) {
      const PairedCounts p = paired_counts(r, cases, s.metric, s.keep);
      if (p.n() > 0 || look.partial) measured.push_back({s, {}, p});
    } else if (std::vector<double> v = metric_values(r, cases, s.metric, s.keep);
               !v.empty() || look.partial) {
      measured.push_back({s, std::move(v), std::nullopt});
    }
  }
  // Percentile bootstrap bounds cannot reach past the extreme cases, however small the tail: on a
  // look at part of the set a check needs twice min_cases cases to decide.
  const int min_cases = look.partial ? 2 * t.min_cases : t.min_cases;
  SettingVerdict sv;
  sv.confidence = look.confidence;
  sv.n_checks = int(measured.size());
  bool any_fail = false, all_pass = !measured.empty();
  for (const Measured& m : measured) {
    Check c = m.paired ? paired_check(m.scope, *m.paired, look.confidence, sv.n_checks)
                       : bootstrap_check(m.scope, m.values, t, look.confidence, sv.n_checks);
    c.verdict = decide(c, min_cases);
    any_fail = any_fail || c.verdict == Verdict::kFail;
    all_pass = all_pass && c.verdict == Verdict::kPass;
    sv.checks.push_back(std::move(c));
  }
  sv.verdict = any_fail ? Verdict::kFail : all_pass ? Verdict::kPass : Verdict::kInconclusive;
  return sv;
}

SettingVerdict judge(const SettingResult& r, const std::vector<Case>& cases, const Thresholds& t) {
  return judge(r, cases, t, final_look(t, false));
}

}  // namespace kvrt::validate
