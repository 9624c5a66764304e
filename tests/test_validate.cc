// Validation pieces that need no model: statistics, metrics, thresholds files, records, gate
// decisions and the acceptance-set format.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "common/error.h"
#include "common/sha256.h"
#include "test_util.h"
#include "validate/binary_stats.h"
#include "validate/bootstrap.h"
#include "validate/case_set.h"
#include "validate/gate.h"
#include "validate/metrics.h"
#include "validate/noise_warning.h"
#include "validate/pace.h"
#include "validate/recommend.h"
#include "validate/report.h"
#include "validate/record.h"
#include "validate/settings.h"
#include "validate/thresholds.h"
#include "validate/tune.h"
#include "validate/verdict.h"

using namespace kvrt;
using namespace kvrt::validate;
using kvrt::test::error_of;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

SettingVerdict verdict(Verdict v) {
  SettingVerdict s;
  s.verdict = v;
  return s;
}

}  // namespace

TEST_CASE(
    "bootstrap interval is deterministic for a seed, brackets the mean and narrows with more "
    "cases") {
  std::vector<double> x;
  for (int i = 0; i < 40; ++i) x.push_back(std::sin(i * 1.7) + 2.0);
  BootstrapOptions o;
  const Interval a = bootstrap_mean(x, o), b = bootstrap_mean(x, o);
  CHECK(a.lower == b.lower);
  CHECK(a.upper == b.upper);
  CHECK(a.lower < a.mean);
  CHECK(a.mean < a.upper);
  o.seed += 1;
  CHECK(bootstrap_mean(x, o).upper != a.upper);
  std::vector<double> x4(x.begin(), x.begin() + 4);
  const Interval small = bootstrap_mean(x4, o);
  CHECK(small.upper - small.lower > a.upper - a.lower);
  CHECK(bootstrap_mean({}, o).n_cases == 0);
  const Interval flat = bootstrap_mean(std::vector<double>(10, 0.25), o);
  CHECK(flat.lower == doctest::Approx(0.25));
  CHECK(flat.upper == doctest::Approx(0.25));
}

TEST_CASE(
    "decide: PASS on the upper bound, FAIL on the corrected lower bound, INCONCLUSIVE between or "
    "when few") {
  Check c;
  c.metric = Metric::kKl;
  c.scope = "all";
  c.limit = 0.7;
  c.interval = Interval{0.5, 0.4, 0.6, 20};
  c.fail_lower = 0.35;
  CHECK(decide(c, 5) == Verdict::kPass);
  c.limit = 0.3;
  CHECK(decide(c, 5) == Verdict::kFail);
  c.limit = 0.38;  // beyond the uncorrected lower bound, not the corrected one
  CHECK(decide(c, 5) == Verdict::kInconclusive);
  c.limit = 0.5;
  CHECK(decide(c, 5) == Verdict::kInconclusive);
  c.limit = 0.7;
  CHECK(decide(c, 21) == Verdict::kInconclusive);
}

namespace {

// A synthetic paired outcome table: how many cases the baseline and the candidate both pass, the
// candidate loses, gains, or neither passes.
struct Table {
  int both = 0, lost = 0, gained = 0, neither = 0;
};

// Appends t's cases to r and cases, each a copy of `like` with id "<like.id>-<index>" and its
// outcomes in the recall or task fields, by like.mode; `categories` > 0 spreads them over that
// many categories c0, c1, ...
void add_table(const Table& t, const Case& like, SettingResult& r, std::vector<Case>& cases,
               int categories = 0) {
  const struct {
    int n;
    bool base, cand;
  } cells[] = {{t.both, true, true},
               {t.lost, true, false},
               {t.gained, false, true},
               {t.neither, false, false}};
  for (const auto& cell : cells)
    for (int i = 0; i < cell.n; ++i) {
      Case c = like;
      c.id = like.id + "-" + std::to_string(cases.size());
      if (categories > 0) c.category = "c" + std::to_string(cases.size() % size_t(categories));
      cases.push_back(c);
      CaseScore s;
      const bool task = like.mode == Mode::kTask;
      (task ? s.task_baseline : s.recall_baseline) = cell.base;
      (task ? s.task_candidate : s.recall_candidate) = cell.cand;
      r.cases.push_back(s);
    }
}

// A synthetic table of recall cases, in category "recall" unless `categories` > 0 spreads them.
std::pair<SettingResult, std::vector<Case>> outcomes(const Table& t, int categories = 0) {
  Case like;
  like.id = "case";
  like.category = "recall";
  like.bucket = "long";
  like.mode = Mode::kRecall;
  SettingResult r;
  std::vector<Case> cases;
  add_table(t, like, r, cases, categories);
  return {r, cases};
}

// A synthetic table of task cases checked by `kind`, appended to r and cases.
void add_tasks(const Table& t, CheckKind kind, SettingResult& r, std::vector<Case>& cases) {
  Case like;
  like.id = check_name(kind);
  like.category = "task";
  like.bucket = "short";
  like.mode = Mode::kTask;
  like.check = TaskCheck{};
  like.check->kind = kind;
  add_table(t, like, r, cases);
}

// One recall limit; no sequential looks, so the whole set is judged at the configured 95%.
Thresholds recall_limit(double limit) {
  Thresholds t;
  t.sequential.looks = 0;
  t.limits[Metric::kRecallLoss].max = limit;
  return t;
}

}  // namespace

TEST_CASE("binary statistics: Wilson, exact McNemar and normal quantiles match known values") {
  CHECK(normal_quantile(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
  CHECK(normal_quantile(0.5) == doctest::Approx(0).epsilon(1e-12));
  CHECK(z_for(0.95, 10) == doctest::Approx(2.807034).epsilon(1e-6));  // Phi^-1(1 - 0.05 / 20)
  const double z = normal_quantile(0.975);
  const Proportion half = wilson(5, 10, z);
  CHECK(half.lower == doctest::Approx(0.236593).epsilon(1e-5));
  CHECK(half.upper == doctest::Approx(0.763407).epsilon(1e-5));
  const Proportion none = wilson(0, 10, z);
  CHECK(none.lower == doctest::Approx(0).epsilon(1e-12));
  CHECK(none.upper == doctest::Approx(0.277533).epsilon(1e-5));  // z^2 / (10 + z^2), not 0
  CHECK(wilson_resolution(10, z) == doctest::Approx(none.upper));
  CHECK(cases_needed(0.2, z) == 16);
  CHECK(wilson_resolution(16, z) <= 0.2);
  CHECK(wilson_resolution(15, z) > 0.2);
  CHECK(mcnemar_exact_p(3, 0) == doctest::Approx(0.25));  // 2 / 2^3
  CHECK(mcnemar_exact_p(0, 10) == doctest::Approx(2.0 / 1024));
  CHECK(mcnemar_exact_p(11, 2) == doctest::Approx(0.0224609375));  // 2 (1 + 13 + 78) / 2^13
  CHECK(mcnemar_exact_p(5, 5) == 1.0);
  CHECK(mcnemar_exact_p(0, 0) == 1.0);
  CHECK(mcnemar_exact_p(600, 400) < 1e-9);  // large counts stay finite
}

TEST_CASE("recall: 10 answers kept out of 10 cannot PASS a 0.2 limit; 40 out of 40 can") {
  // stories260K's baseline recalls about 10 answers: even losing none, the share lost could be
  // up to 0.28 at 95%, so a 0.2 limit is INCONCLUSIVE (a bootstrap of ten zeros said [0, 0]).
  auto [r10, c10] = outcomes({10, 0, 0, 9});
  const SettingVerdict v10 = judge(r10, c10, recall_limit(0.2));
  REQUIRE(v10.checks.size() == 1);
  const Check& c = v10.checks[0];
  CHECK(c.interval.n_cases == 10);  // only the cases the baseline got right
  CHECK(c.interval.upper == doctest::Approx(0.277533).epsilon(1e-5));
  CHECK(c.detectable == doctest::Approx(0.277533).epsilon(1e-5));
  CHECK(c.cases_needed == 16);
  CHECK(c.verdict == Verdict::kInconclusive);
  CHECK(v10.verdict == Verdict::kInconclusive);

  auto [r40, c40] = outcomes({40, 0, 0, 0});
  const SettingVerdict v40 = judge(r40, c40, recall_limit(0.2));
  CHECK(v40.checks[0].interval.upper == doctest::Approx(0.087622).epsilon(1e-5));
  CHECK(v40.checks[0].cases_needed == 0);
  CHECK(v40.verdict == Verdict::kPass);
}

TEST_CASE(
    "recall: answers the baseline missed do not dilute the share lost; McNemar sees the gains") {
  // 3 of 10 baseline answers lost is 0.3 of them, whatever the 30 cases both missed.
  auto [r, c] = outcomes({7, 3, 0, 30});
  const SettingVerdict v = judge(r, c, recall_limit(0.2));
  CHECK(v.checks[0].interval.mean == doctest::Approx(0.3));
  CHECK(v.checks[0].interval.n_cases == 10);
  CHECK(v.checks[0].mcnemar_p == doctest::Approx(0.25));
  CHECK(v.checks[0].verdict == Verdict::kInconclusive);
  auto [rg, cg] = outcomes({40, 0, 12, 3});
  const SettingVerdict g = judge(rg, cg, recall_limit(0.2));
  REQUIRE(g.checks[0].paired);
  CHECK(g.checks[0].paired->gained == 12);
  CHECK(g.checks[0].mcnemar_p == doctest::Approx(2.0 / 4096));
  CHECK(g.checks[0].interval.n_cases == 40);
  CHECK(g.verdict == Verdict::kPass);
}

TEST_CASE(
    "recall: a clear loss FAILs with one check, and is INCONCLUSIVE once the error is split over "
    "ten") {
  // 9 of 20 answers lost: the 95% Wilson lower bound 0.258 is beyond 0.2; with ten checks the
  // Bonferroni-corrected (99.5%) lower bound is 0.199, not beyond it.
  auto [r1, c1] = outcomes({11, 9, 0, 0});
  const SettingVerdict one = judge(r1, c1, recall_limit(0.2));
  CHECK(one.n_checks == 1);
  CHECK(one.checks[0].fail_lower == doctest::Approx(0.258198).epsilon(1e-5));
  CHECK(one.verdict == Verdict::kFail);

  Thresholds ten = recall_limit(0.2);
  for (int i = 0; i < 9; ++i)
    ten.limits[Metric::kRecallLoss].by_category["c" + std::to_string(i)] = 0.9;
  auto [r10, c10] = outcomes({11, 9, 0, 0}, 9);
  const SettingVerdict split = judge(r10, c10, ten);
  CHECK(split.n_checks == 10);
  CHECK(split.checks[0].scope == "all");
  CHECK(split.checks[0].fail_lower == doctest::Approx(0.199274).epsilon(1e-5));
  CHECK(split.checks[0].verdict == Verdict::kInconclusive);
  CHECK(split.verdict == Verdict::kInconclusive);
  // 10 of 20 lost stays a FAIL after the correction (lower bound 0.234).
  auto [r11, c11] = outcomes({10, 10, 0, 0}, 9);
  CHECK(judge(r11, c11, ten).verdict == Verdict::kFail);
}

TEST_CASE(
    "task checks: the share of the baseline's passes lost, Wilson-bounded, with McNemar beside "
    "it") {
  Thresholds t;
  t.sequential.looks = 0;
  t.limits[Metric::kTaskLoss].max = 0.3;
  // 1 of 24 passes lost: upper bound 0.202, PASS; 3 gained beside it: McNemar 2 (1 + 4) / 16.
  SettingResult r;
  std::vector<Case> cases;
  add_tasks({23, 1, 3, 5}, CheckKind::kExact, r, cases);
  SettingVerdict v = judge(r, cases, t);
  REQUIRE(v.checks.size() == 1);
  CHECK(v.checks[0].metric == Metric::kTaskLoss);
  CHECK(v.checks[0].interval.n_cases == 24);
  CHECK(v.checks[0].interval.upper == doctest::Approx(0.202418).epsilon(1e-5));
  CHECK(v.checks[0].mcnemar_p == doctest::Approx(0.625));
  CHECK(v.verdict == Verdict::kPass);
  // 9 passes kept of 9 can PASS 0.3 (upper 0.299); 8 of 8 cannot (0.324) and say 9 are needed.
  SettingResult r9, r8;
  std::vector<Case> c9, c8;
  add_tasks({9, 0, 0, 3}, CheckKind::kRegex, r9, c9);
  add_tasks({8, 0, 0, 3}, CheckKind::kRegex, r8, c8);
  CHECK(judge(r9, c9, t).verdict == Verdict::kPass);
  const SettingVerdict v8 = judge(r8, c8, t);
  CHECK(v8.verdict == Verdict::kInconclusive);
  CHECK(v8.checks[0].detectable == doctest::Approx(0.324408).epsilon(1e-5));
  CHECK(v8.checks[0].cases_needed == 9);
}

TEST_CASE("task checks beside recall: separate tables, one Bonferroni correction over both") {
  Thresholds t = recall_limit(0.2);
  t.limits[Metric::kTaskLoss].max = 0.3;
  auto [r, cases] = outcomes({11, 9, 0, 0});
  add_tasks({12, 8, 0, 0}, CheckKind::kConstraint, r, cases);
  const SettingVerdict v = judge(r, cases, t);
  REQUIRE(v.checks.size() == 2);
  CHECK(v.n_checks == 2);
  for (const Check& c : v.checks) {
    REQUIRE(c.paired);
    CHECK(c.interval.n_cases == 20);
    CHECK(c.paired->n() == 20);  // recall cases are not task cases and the other way round
  }
  // Recall 9 of 20 lost: the lower bound at 1 - 0.05 / 2 is 0.237 > 0.2, FAIL. Tasks 8 of 20
  // lost: 0.400 measured but the corrected lower bound 0.200 is not beyond 0.3, INCONCLUSIVE.
  const Check& recall = v.checks[0].metric == Metric::kRecallLoss ? v.checks[0] : v.checks[1];
  const Check& task = v.checks[0].metric == Metric::kTaskLoss ? v.checks[0] : v.checks[1];
  CHECK(recall.fail_lower == doctest::Approx(0.236902).epsilon(1e-5));
  CHECK(recall.verdict == Verdict::kFail);
  CHECK(task.interval.mean == doctest::Approx(0.4));
  CHECK(task.fail_lower == doctest::Approx(0.199653).epsilon(1e-5));
  CHECK(task.verdict == Verdict::kInconclusive);
  CHECK(v.verdict == Verdict::kFail);
}

TEST_CASE("task rows: pass rates of baseline and setting per check, points and McNemar") {
  SettingResult r;
  std::vector<Case> cases;
  add_tasks({6, 3, 0, 1}, CheckKind::kExact, r, cases);  // 9/10 -> 6/10: -30 points
  add_tasks({4, 0, 1, 0}, CheckKind::kRegex, r, cases);  // 4/5 -> 5/5: +20 points
  Thresholds t;
  Report rep;
  rep.cases = &cases;
  rep.thresholds = &t;
  const std::vector<TaskRow> rows = task_rows(rep, r);
  REQUIRE(rows.size() == 3);  // all, exact, regex; no json_valid or constraint case
  CHECK(rows[0].check == "all");
  CHECK(rows[0].counts.n() == 15);
  CHECK(rows[0].baseline_rate() == doctest::Approx(13.0 / 15));
  CHECK(rows[0].setting_rate() == doctest::Approx(11.0 / 15));
  CHECK(rows[0].points() == doctest::Approx(-200.0 / 15));
  CHECK(rows[0].mcnemar_p == doctest::Approx(0.625));  // 3 lost, 1 gained: 2 (1 + 4) / 16
  CHECK(rows[1].check == "exact");
  CHECK(rows[1].points() == doctest::Approx(-30));
  CHECK(rows[1].mcnemar_p == doctest::Approx(0.25));
  CHECK(rows[1].lost == " exact-6 exact-7 exact-8");
  CHECK(rows[2].check == "regex");
  CHECK(rows[2].points() == doctest::Approx(20));
  CHECK(rows[2].gained == " regex-14");
  CHECK(rows[2].mcnemar_p == 1.0);
}

TEST_CASE("a model whose baseline recalls nothing cannot pass a recall limit") {
  auto [r, c] = outcomes({0, 0, 2, 18});
  const SettingVerdict v = judge(r, c, recall_limit(0.2));
  REQUIRE(v.checks.size() == 1);
  CHECK(v.checks[0].interval.n_cases == 0);
  CHECK(v.verdict == Verdict::kInconclusive);
}

TEST_CASE(
    "continuous checks: the FAIL side is corrected too, and 'detectable' is the interval's "
    "margin") {
  std::vector<double> x;
  for (int i = 0; i < 30; ++i) x.push_back(0.1 + 0.01 * std::sin(i * 1.3));
  SettingResult r;
  std::vector<Case> cases;
  for (double v : x) {
    Case c;
    c.category = "prose";
    c.bucket = "short";
    cases.push_back(c);
    CaseScore s;
    s.tokens.n_positions = 1;
    s.tokens.kl = v;
    r.cases.push_back(s);
  }
  Thresholds t;
  t.limits[Metric::kKl].max = 0.05;
  const SettingVerdict v = judge(r, cases, t);
  REQUIRE(v.checks.size() == 1);
  const Check& c = v.checks[0];
  CHECK(c.detectable == doctest::Approx(c.interval.upper - c.interval.mean));
  CHECK(c.fail_lower == doctest::Approx(c.interval.lower));  // one check: nothing to split
  CHECK(v.verdict == Verdict::kFail);
}

namespace {

// n teacher-forced cases whose per-case KL is `mean` plus a spread of +-`spread`; cases from
// `n_run` on are left unrun (empty scores), as a look part-way through a run sees them.
std::pair<SettingResult, std::vector<Case>> kl_cases(int n, double mean, double spread, int n_run) {
  SettingResult r;
  std::vector<Case> cases;
  for (int i = 0; i < n; ++i) {
    Case c;
    c.category = "prose";
    c.bucket = "short";
    cases.push_back(c);
    CaseScore s;
    if (i < n_run) {
      s.tokens.n_positions = 1;
      s.tokens.kl = mean + spread * std::sin(i * 2.3);
    }
    r.cases.push_back(s);
  }
  r.n_run = n_run;
  return {r, cases};
}

}  // namespace

TEST_CASE(
    "sequential looks: a clear PASS and a clear FAIL stop at the first look, a borderline setting "
    "does not") {
  Thresholds t;
  t.limits[Metric::kKl].max = 0.01;
  REQUIRE(look_points(60, t) == std::vector<int>{15, 30, 45});
  const Look interim = interim_look(t);
  const auto verdict_at = [&](double mean, double spread, int n_run, const Look& look) {
    auto [r, cases] = kl_cases(60, mean, spread, n_run);
    return judge(r, cases, t, look).verdict;
  };
  CHECK(verdict_at(0.002, 0.001, 15, interim) == Verdict::kPass);
  CHECK(verdict_at(0.05, 0.01, 15, interim) == Verdict::kFail);
  // Near the limit: undecided at every interim look, and the final look on all 60 too.
  for (int n_run : look_points(60, t))
    CHECK(verdict_at(0.0095, 0.004, n_run, interim) == Verdict::kInconclusive);
  CHECK(verdict_at(0.0095, 0.004, 60, final_look(t, false)) == Verdict::kInconclusive);
  // A margin the whole set resolves but 15 cases at the interim confidence do not.
  CHECK(verdict_at(0.0085, 0.004, 15, interim) == Verdict::kInconclusive);
  CHECK(verdict_at(0.0085, 0.004, 60, final_look(t, false)) == Verdict::kPass);
}

TEST_CASE(
    "sequential looks spend the error instead of adding to it; a partial look counts every limit") {
  Thresholds t;
  t.limits[Metric::kKl].max = 0.01;
  const double alpha = 1.0 - t.bootstrap.confidence;
  const double spent = t.sequential.looks * (1.0 - interim_look(t).confidence) +
                       (1.0 - final_look(t, false).confidence);
  CHECK(spent == doctest::Approx(alpha));
  CHECK(final_look(t, false).confidence > t.bootstrap.confidence);
  t.sequential.looks = 0;
  CHECK(look_points(60, t).empty());
  CHECK(final_look(t, false).confidence == doctest::Approx(t.bootstrap.confidence));
  t.sequential.looks = 3;

  // A recall limit the set never measures makes no check on the whole set, but on part of it the
  // unmeasured limit is INCONCLUSIVE: the cases still to run might have measured it.
  t.limits[Metric::kRecallLoss].max = 0.2;
  auto [r, cases] = kl_cases(60, 0.002, 0.001, 60);
  CHECK(judge(r, cases, t).verdict == Verdict::kPass);
  const SettingVerdict partial = judge(r, cases, t, final_look(t, true));
  CHECK(partial.verdict == Verdict::kInconclusive);
  CHECK(partial.n_checks == 2);
  // On part of the set a check needs twice min_cases cases.
  t.limits.erase(Metric::kRecallLoss);
  auto [few, few_cases] = kl_cases(60, 0.002, 0.001, 2 * t.min_cases - 1);
  CHECK(judge(few, few_cases, t, final_look(t, true)).verdict == Verdict::kInconclusive);
  auto [enough, enough_cases] = kl_cases(60, 0.002, 0.001, 2 * t.min_cases);
  CHECK(judge(enough, enough_cases, t, final_look(t, true)).verdict == Verdict::kPass);
}

TEST_CASE("--prefer: the least memory or the fastest decode, among the PASSing settings only") {
  struct Row {
    double kv_bytes, decode;
    Verdict verdict;
  };
  auto table = [](const std::vector<Row>& rows) {
    std::pair<std::vector<SettingResult>, std::vector<SettingVerdict>> t;
    for (const Row& r : rows) {
      SettingResult s;
      s.kv.at_context = r.kv_bytes;
      s.speed.decode_tok_s = r.decode;
      s.speed.prefill_tok_s = 100;
      s.speed.prefill_undisturbed = s.speed.decode_undisturbed = kMinUndisturbed;
      t.first.push_back(s);
      t.second.push_back(verdict(r.verdict));
    }
    return t;
  };
  // 0: big and fast; 1: small and slow; 2: smallest, fastest, but FAIL; 3: mid, INCONCLUSIVE.
  auto [rs, vs] = table({{800, 50, Verdict::kPass},
                         {300, 40, Verdict::kPass},
                         {100, 90, Verdict::kFail},
                         {200, 60, Verdict::kInconclusive}});
  CHECK(recommend(rs, vs, Prefer::kMemory) == 1);
  CHECK(recommend(rs, vs, Prefer::kSpeed) == 0);
  // Equal speed: the smaller one; equal memory: the earlier one (not the faster clock reading).
  auto [rs2, vs2] =
      table({{800, 50, Verdict::kPass}, {300, 50, Verdict::kPass}, {300, 55, Verdict::kPass}});
  CHECK(recommend(rs2, vs2, Prefer::kSpeed) == 2);
  CHECK(recommend(rs2, vs2, Prefer::kMemory) == 1);
  auto [rs3, vs3] = table({{800, 50, Verdict::kPass}, {300, 50, Verdict::kPass}});
  CHECK(recommend(rs3, vs3, Prefer::kSpeed) == 1);
  // --prefer speed never picks on a difference the timing cannot resolve: 55 against 50 tok/s with
  // spreads of 5% each is a tie (memory decides, then the order); one rate UNRELIABLE (spread above
  // kUnreliableSpread), whatever the numbers, is too; 8.6x apart but one of them timed on a busy
  // machine, also.
  rs2[1].speed.decode_spread = rs2[2].speed.decode_spread = 0.05;
  CHECK(recommend(rs2, vs2, Prefer::kSpeed) == 1);
  rs2[1].speed.decode_spread = rs2[2].speed.decode_spread = 0.04;
  CHECK(recommend(rs2, vs2, Prefer::kSpeed) == 2);
  rs[1].speed.decode_tok_s = 646;
  rs[0].speed.decode_tok_s = 5532;
  CHECK(recommend(rs, vs, Prefer::kSpeed) == 0);
  rs[1].speed.decode_spread = kUnreliableSpread * 1.5;
  CHECK(!rs[1].speed.decode_reliable());
  CHECK(recommend(rs, vs, Prefer::kSpeed) == 1);
  CHECK(recommend(rs, vs, Prefer::kMemory) == 1);
  // So is a rate without kMinUndisturbed segments that kept their cores, however tight its spread.
  rs[1].speed.decode_spread = 0;
  CHECK(recommend(rs, vs, Prefer::kSpeed) == 0);
  rs[1].speed.decode_undisturbed = kMinUndisturbed - 1;
  CHECK(!rs[1].speed.decode_reliable());
  CHECK(recommend(rs, vs, Prefer::kSpeed) == 1);
  CHECK(time_spread({0.010, 0.030, 0.0105, 0.0103}) ==
        doctest::Approx(0.05));  // the third-fastest against the fastest
  CHECK(time_spread({0.010, 0.012}) == doctest::Approx(0.2));
  CHECK(time_spread({0.010}) == 0);
  // Nothing passed: no recommendation, whatever the preference.
  auto [rs4, vs4] = table({{100, 90, Verdict::kFail}, {200, 60, Verdict::kInconclusive}});
  CHECK(recommend(rs4, vs4, Prefer::kMemory) == -1);
  CHECK(recommend(rs4, vs4, Prefer::kSpeed) == -1);
  CHECK(parse_prefer("speed") == Prefer::kSpeed);
  CHECK(parse_prefer("memory") == Prefer::kMemory);
  CHECK(!parse_prefer("size"));
  CHECK(std::string(prefer_name(Prefer::kSpeed)) == "speed");
}

TEST_CASE(
    "the damage: a failing setting's worst cases, continuations side by side with the divergence "
    "marked, escaped") {
  std::vector<Case> cases(4);
  const char* ids[] = {"long-<prose>", "recall-1", "calm", "calm-2"};
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].id = ids[i];
    cases[i].category = i == 1 ? "recall" : "prose";
    cases[i].bucket = i == 0 ? "long" : "short";
    cases[i].mode = i == 1 ? Mode::kRecall : Mode::kTeacherForced;
    cases[i].turns = {std::vector<int32_t>(i == 0 ? 100 : 10, 1)};
  }
  auto scored = [](int n, double kl) {
    CaseScore c;
    c.tokens.n_positions = n;
    c.tokens.kl = kl * n;
    c.kl_by_pos.assign(size_t(n), float(kl));
    return c;
  };
  RunResult run;
  run.kl_bin_width = 32;
  SettingResult noise, bad;
  noise.setting.label = "noise floor";
  bad.setting.label = "q4<'x'>";
  bad.name = "k=q4,v=q4";
  for (SettingResult* s : {&noise, &bad}) {
    s->cases = {scored(100, 1e-12), scored(10, 1e-12), scored(10, 1e-12), scored(10, 1e-12)};
    s->n_run = 4;
    s->kl_by_pos.assign(4, 1e-12);
    s->kl_by_pos_count.assign(4, 1);
  }
  // The long case has the largest KL; the recall case lost its answer; "calm" and "calm-2" barely
  // moved.
  bad.cases = {scored(100, 0.5), scored(10, 0.05), scored(10, 0.002), scored(10, 0.001)};
  for (int p = 0; p < 100; ++p) bad.cases[0].kl_by_pos[size_t(p)] = float(0.01 * (p + 1));
  bad.cases[1].recall_baseline = true;
  bad.cases[1].recall_candidate = false;
  bad.cases[1].continuation = {{" The", " cat", " sat"}, {" The", " <dog>", " \xff&"}, 1, true};
  run.noise_floor = noise;
  run.settings = {bad};
  Thresholds t;
  Report r;
  r.cases = &cases;
  r.run = &run;
  r.thresholds = &t;
  r.verdicts = {verdict(Verdict::kFail)};
  r.noise_verdict = verdict(Verdict::kPass);
  r.model_path = "m.gguf";
  r.model_sha256 = std::string(64, '0');
  r.acceptance_sha256 = std::string(64, '0');

  CHECK(worst_cases(r, run.settings[0], kWorstCases) ==
        std::vector<size_t>{1, 0, 2});  // lost first, then by KL
  const std::string text = report_text(r);
  CHECK(text.find(
            "worst cases: recall-1 (kl 0.05, answer lost) long-<prose> (kl 0.5) calm (kl 0.002)") !=
        std::string::npos);

  const std::string html = report_html(r);
  const size_t damage = html.find("<h2>The damage");
  REQUIRE(damage != std::string::npos);
  const std::string d = html.substr(damage, html.find("<h2>Full table") - damage);
  // Side by side: the first divergent token marked in both columns, the candidate's text escaped,
  // a byte that is not UTF-8 shown as U+FFFD.
  CHECK(d.find("<td> The<mark> cat</mark><span class='after'> sat</span></td>") !=
        std::string::npos);
  CHECK(
      d.find(
          "<td> The<mark> &lt;dog&gt;</mark><span class='after'> \xEF\xBF\xBD&amp;</span></td>") !=
      std::string::npos);
  CHECK(d.find("(its own continuation)") != std::string::npos);
  CHECK(d.find("q4&lt;&#39;x&#39;&gt;") != std::string::npos);
  CHECK(d.find("<dog>") == std::string::npos);
  CHECK(html.find("<h4>long-&lt;prose&gt;</h4>") < html.find("<h4>calm</h4>"));
  CHECK(html.find("<h4>recall-1</h4>") < html.find("<h4>long-&lt;prose&gt;</h4>"));
  CHECK(d.find("<h4>calm-2</h4>") == std::string::npos);  // only the worst three
  // KL by position of the long case: one line, rising.
  const size_t plot = d.find("KL by position of the long cases");
  REQUIRE(plot != std::string::npos);
  CHECK(d.find("<polyline", plot) != std::string::npos);
  CHECK(d.find(">long-&lt;prose&gt;</text>", plot) != std::string::npos);
  // A setting that passes shows no damage section.
  r.verdicts = {verdict(Verdict::kPass)};
  CHECK(report_html(r).find("<h2>The damage") == std::string::npos);
}

TEST_CASE("the budget's pace: prefilled positions and generated tokens at their own rates") {
  // Cases timed at 1 ms a position and 20 ms a generated token: the fit recovers both, and a
  // long prompt is not priced at the rate of the generation-heavy cases seen first.
  Pace pace;
  CHECK(pace.estimate({100, 10}) == 0);  // nothing seen yet
  pace.add({20, 40}, 0.02 + 0.8);
  // One case cannot separate the rates: one rate for both, 0.82 s for 60 units.
  CHECK(pace.estimate({600, 0}) == doctest::Approx(600 * 0.82 / 60));
  pace.add({30, 20}, 0.03 + 0.4);
  pace.add({10, 60}, 0.01 + 1.2);
  CHECK(pace.estimate({2000, 0}) == doctest::Approx(2.0));
  CHECK(pace.estimate({1000, 12}) == doctest::Approx(1.0 + 0.24));
  // Cases in the same proportion cannot tell the rates apart either.
  Pace same;
  same.add({10, 10}, 1);
  same.add({20, 20}, 2);
  CHECK(same.estimate({40, 0}) == doctest::Approx(2.0));
  // A fit that would give a negative rate (times that fall as generation grows) is not trusted.
  Pace odd;
  odd.add({10, 1}, 2);
  odd.add({10, 50}, 1);
  CHECK(odd.estimate({10, 10}) == doctest::Approx(20 * 3.0 / 71));
}

TEST_CASE("the run order is a permutation, fixed by the seed") {
  const std::vector<size_t> a = shuffled_order(54, 7), b = shuffled_order(54, 7);
  CHECK(a == b);
  CHECK(shuffled_order(54, 8) != a);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) CHECK(sorted[i] == i);
}

TEST_CASE("per-token metrics: identical logits score zero, a shifted distribution scores its KL") {
  const float base[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  const float same[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  TokenSums s;
  CHECK(score_position(reference_of(base, 4), same, 4, 1, s) == doctest::Approx(0.0));
  CHECK(*token_metric_value(Metric::kPplRatio, s) == doctest::Approx(1.0));
  const float other[4] = {2.5f, 1.0f, 0.5f, -1.0f};
  TokenSums t;
  // Reference KL computed in double: sum p_b (log p_b - log p_c).
  double zb = 0, zc = 0, kl = 0;
  for (int i = 0; i < 4; ++i) zb += std::exp(double(base[i])), zc += std::exp(double(other[i]));
  for (int i = 0; i < 4; ++i)
    kl += std::exp(double(base[i])) / zb * ((base[i] - std::log(zb)) - (other[i] - std::log(zc)));
  CHECK(score_position(reference_of(base, 4), other, 4, 1, t) == doctest::Approx(kl).epsilon(1e-9));
  CHECK(*token_metric_value(Metric::kTop1Mismatch, t) == 1.0);
  CHECK(*token_metric_value(Metric::kPplRatio, t) > 1.0);
  CHECK(spread({{1, 2, 3}, {1, 2, 3}}) == 0.0);
  CHECK(spread({{1, 2, 3, 4}, {1, 2, 0, 0}}) == doctest::Approx(0.5));
}

TEST_CASE("the shipped thresholds, settings and acceptance set parse") {
  const std::string dir = default_validation_dir();
  const Thresholds t = read_thresholds(dir + "/thresholds.toml");
  CHECK(t.limits.count(Metric::kKl) == 1);
  CHECK(t.sha256.size() == 64);
  CHECK(read_settings(dir + "/settings.toml").size() >= 5);
  const CaseSet set = load_case_set({dir + "/cases"});
  CHECK(set.cases.size() >= 10);
  CHECK(!set.templates.empty());
  CHECK(load_case_set({dir + "/cases"}).sha256 == set.sha256);
}

TEST_CASE(
    "the canary's acceptance set: 100 held-out recall cases in each distance bucket, beside the "
    "bundled set") {
  const std::string dir = default_validation_dir();
  const CaseSet canary = load_case_set({dir + "/canary"});
  std::map<std::string, int> per_bucket;
  for (const CaseDef& c : canary.cases) {
    CHECK(c.mode == Mode::kRecall);
    CHECK(c.answer.size() > 1);
    CHECK(c.answer[0] == ' ');
    ++per_bucket[c.category];
  }
  CHECK(per_bucket == std::map<std::string, int>{{"recall-8-128", 100},
                                                 {"recall-128-256", 100},
                                                 {"recall-256-512", 100},
                                                 {"recall-512-900", 100}});
  // --cases adds it to the bundled set: no id of one is in the other.
  CHECK(load_case_set({dir + "/cases", dir + "/canary"}).cases.size() ==
        load_case_set({dir + "/cases"}).cases.size() + canary.cases.size());
}

TEST_CASE("a bad thresholds file is an error naming the file and the line") {
  test::TempDir tmp;
  const std::string path = tmp / "t.toml";
  write(path, "[bootstrap]\nseed = 1\n\n[metric.kl]\nmax = 0.01\nmaximum = 3\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":6: ") == 0);
  CHECK(error_of([&] { read_thresholds(path); }).find("unknown key 'maximum'") !=
        std::string::npos);
  write(path, "[metric.kl]\nmax = \"small\"\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":2: ") == 0);
  write(path, "[metric.klx]\nmax = 1\n");
  CHECK(error_of([&] { read_thresholds(path); }).find("unknown metric 'klx'") != std::string::npos);
  write(path, "[metric.kl\nmax = 1\n");
  CHECK(error_of([&] { read_thresholds(path); }).find(path + ":1:") == 0);
  CHECK(error_of([&] { read_thresholds(tmp / "missing.toml"); }).find("missing.toml") !=
        std::string::npos);
}

TEST_CASE("a thresholds typo or a limit that checks nothing is an error, never a dropped limit") {
  test::TempDir tmp;
  const std::string path = tmp / "t.toml";
  // A misspelt bucket used to be read as a bucket no case has: its limit silently checked nothing.
  write(path, "[metric.kl]\nmax = 0.01\n\n[metric.kl.bucket]\nlong = 0.015\nlnog = 1e-7\n");
  const std::string bucket = error_of([&] { read_thresholds(path); });
  INFO(bucket);
  CHECK(bucket.find(
            path +
            ":6: metric.kl.bucket: unknown key 'lnog' (expected one of: short, medium, long)") ==
        0);
  for (const char* bad : {"nan", "inf", "+inf", "-inf"}) {
    write(path, std::string("[metric.kl]\nmax = ") + bad + "\n");
    const std::string e = error_of([&] { read_thresholds(path); });
    INFO(bad, e);
    CHECK(e.find(path + ":2: metric.kl: 'max'") == 0);
  }
  write(path, "[metric.kl]\nmax = 0.01\n[metric.kl.category]\nrecall = nan\n");
  CHECK(error_of([&] {
          read_thresholds(path);
        }).find(":4: metric.kl.category: 'recall' must be a finite number") != std::string::npos);
  // A category is any name a manifest gives, so it is fitted to the acceptance set: a key one edit
  // from a category of the set is a misspelling of it, and an error.
  write(path, "[metric.kl]\nmax = 0.01\n\n[metric.kl.category]\nrecall = 0.015\nrecal = 1e-7\n");
  const Thresholds t = read_thresholds(path);
  Thresholds both = t;
  CHECK(fit_categories(both, {"prose", "recall", "recal"}).empty());
  CHECK(both.limits.at(Metric::kKl).by_category.size() == 2);
  const std::string category = error_of([&] {
    Thresholds u = t;
    fit_categories(u, {"prose", "recall"});
  });
  INFO(category);
  CHECK(category.find(
            path + ":6: metric.kl.category: no case of the acceptance set has category 'recal'") ==
        0);
  CHECK(category.find("did you mean 'recall'?") != std::string::npos);
  // The bundled thresholds name only categories of the bundled set: nothing is left out.
  const std::string dir = default_validation_dir();
  const CaseSet set = load_case_set({dir + "/cases"});
  std::set<std::string> names;
  for (const CaseDef& c : set.cases) names.insert(c.category);
  for (const TemplateDef& d : set.templates) names.insert(d.category);
  Thresholds bundled = read_thresholds(dir + "/thresholds.toml");
  const Thresholds as_read = bundled;
  CHECK(fit_categories(bundled, names).empty());
  CHECK(bundled.limits.size() == as_read.limits.size());
}

TEST_CASE(
    "a category limit covers its family, and one no case has is left out with a note; a "
    "misspelt family fails") {
  const std::string dir = default_validation_dir();
  const std::string file = dir + "/thresholds.toml";
  const Thresholds shipped = read_thresholds(file);
  REQUIRE(shipped.limits.at(Metric::kKl).by_category.count("recall") == 1);
  CHECK(category_covers("recall", "recall"));
  CHECK(category_covers("recall", "recall-8-128"));
  CHECK(category_covers("recall-8", "recall-8-128"));
  CHECK_FALSE(category_covers("recall", "recalls"));
  CHECK_FALSE(category_covers("recall-8", "recall-80-128"));
  CHECK_FALSE(category_covers("recall-8-128", "recall"));

  // The canary's set alone (--only-cases): its recall-<lo>-<hi> categories are the family of the
  // shipped `recall` limit, which applies to all of them.
  std::set<std::string> canary;
  for (const CaseDef& c : load_case_set({dir + "/canary"}).cases) canary.insert(c.category);
  REQUIRE(canary.size() == 4);
  Thresholds t = shipped;
  CHECK(fit_categories(t, canary).empty());
  CHECK(t.limits.at(Metric::kKl).by_category == shipped.limits.at(Metric::kKl).by_category);
  auto [r, cases] = outcomes({40, 0, 0, 0}, 4);
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].category = *std::next(canary.begin(), long(i % canary.size()));
    r.cases[i].tokens.n_positions = 1;  // a KL of 0 at one position
  }
  t.sequential.looks = 0;
  const SettingVerdict v = judge(r, cases, t);
  const auto recall_kl = std::find_if(v.checks.begin(), v.checks.end(), [](const Check& c) {
    return c.metric == Metric::kKl && c.scope == "category=recall";
  });
  REQUIRE(recall_kl != v.checks.end());
  CHECK(recall_kl->interval.n_cases == 40);

  // A deployer's own cases with no recall category: the limit is left out, and the note names the
  // file's line, the limit and the set's categories; the metric's other limits stay.
  Thresholds own = shipped;
  const std::vector<std::string> notes = fit_categories(own, {"contracts", "emails"});
  REQUIRE(notes.size() == 1);
  INFO(notes[0]);
  CHECK(notes[0].find(file + ":") == 0);
  CHECK(notes[0].find("metric.kl.category: no case of the acceptance set has category 'recall'") !=
        std::string::npos);
  CHECK(notes[0].find("not applied (its categories: contracts, emails)") != std::string::npos);
  CHECK(own.limits.at(Metric::kKl).by_category.empty());
  CHECK(own.limits.at(Metric::kKl).max == shipped.limits.at(Metric::kKl).max);
  CHECK(own.limits.at(Metric::kKl).by_bucket == shipped.limits.at(Metric::kKl).by_bucket);

  // A metric whose only limit is left out checks nothing and goes; a misspelt family is an error.
  test::TempDir tmp;
  const std::string path = tmp / "t.toml";
  write(path, "[metric.kl]\nmax = 0.01\n[metric.recall_loss.category]\nrecall = 0.2\n");
  Thresholds only = read_thresholds(path);
  CHECK(fit_categories(only, {"prose"}).size() == 1);
  CHECK(only.limits.count(Metric::kRecallLoss) == 0);
  CHECK(only.limits.count(Metric::kKl) == 1);
  write(path, "[metric.kl]\nmax = 0.01\n[metric.recall_loss.category]\nrecal = 0.2\n");
  const std::string typo = error_of([&] {
    Thresholds u = read_thresholds(path);
    fit_categories(u, canary);
  });
  INFO(typo);
  CHECK(typo.find(path + ":4: metric.recall_loss.category: no case of the acceptance set has "
                         "category 'recal' (did you mean 'recall'?") == 0);
}

TEST_CASE(
    "the noise floor's warning names the check that kept it from PASS: too few answers, or "
    "thresholds below FP32") {
  // FP32 against FP32 on a set where the baseline recalls 3 answers and loses none, at a KL of 0:
  // only recall_loss is not PASS, because 3 answers cannot resolve a limit of 0.2 (16 would).
  Thresholds t = recall_limit(0.2);
  t.limits[Metric::kKl].max = 0.01;
  auto [r, cases] = outcomes({3, 0, 0, 37});
  for (CaseScore& c : r.cases) c.tokens.n_positions = 10;  // KL 0 at every position
  const SettingVerdict few = judge(r, cases, t);
  REQUIRE(few.verdict == Verdict::kInconclusive);
  std::vector<std::string> w = noise_floor_warnings(few, t.min_cases);
  REQUIRE(w.size() == 1);
  INFO(w[0]);
  CHECK(w[0].find("below what FP32 itself reproduces") == std::string::npos);
  CHECK(w[0].find("not PASS only because the acceptance set has too few cases") !=
        std::string::npos);
  CHECK(w[0].find("(its mean KL: 0)") != std::string::npos);
  CHECK(w[0].find("recall_loss (all) has 3 answers the baseline recalls and needs " +
                  std::to_string(cases_needed(0.2, normal_quantile(0.975))) +
                  " to resolve its limit of 0.2: add recall cases the model answers, or "
                  "validate a model that recalls them") != std::string::npos);
  CHECK(w[0].find("kl (all)") == std::string::npos);  // it passed

  // Enough answers: the noise floor passes and nothing is said.
  auto [r40, c40] = outcomes({40, 0, 0, 0});
  for (CaseScore& c : r40.cases) c.tokens.n_positions = 10;
  CHECK(noise_floor_warnings(judge(r40, c40, t), t.min_cases).empty());

  // A KL above the limit on cases enough to decide: the thresholds are below what FP32
  // reproduces, and the warning says so, naming kl; the underpowered recall check is named apart.
  for (CaseScore& c : r.cases) c.tokens.kl = 10 * 0.02;  // a mean of 0.02 nats per position
  const SettingVerdict high = judge(r, cases, t);
  w = noise_floor_warnings(high, t.min_cases);
  REQUIRE(w.size() == 2);
  INFO(w[0], w[1]);
  CHECK(w[0].find("did not PASS kl (all) FAIL, mean 0.02 against a limit of 0.01: the thresholds "
                  "are below what FP32 itself reproduces") != std::string::npos);
  CHECK(w[1].find("besides, the noise floor is not PASS only because") == 0);
  CHECK(w[1].find("recall_loss (all) has 3 answers") != std::string::npos);

  // Fewer cases than min_cases behind a continuous limit: the fix is more cases of it.
  Thresholds kl_only;
  kl_only.sequential.looks = 0;
  kl_only.limits[Metric::kKl].max = 0.01;
  auto [r2, c2] = kl_cases(kl_only.min_cases - 1, 0.0, 0.0, kl_only.min_cases - 1);
  w = noise_floor_warnings(judge(r2, c2, kl_only), kl_only.min_cases);
  REQUIRE(w.size() == 1);
  INFO(w[0]);
  CHECK(w[0].find("kl (all) has " + std::to_string(kl_only.min_cases - 1) + " cases and needs " +
                  std::to_string(kl_only.min_cases) + " (min_cases): add cases that it measures") !=
        std::string::npos);
}

TEST_CASE("a bad case manifest is an error naming the file and the line") {
  test::TempDir tmp;
  write(tmp / "manifest.toml",
        "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"greedy\"\ntext = \"x\"\n\n"
        "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"teacher_forced\"\ntext = \"y\"\n");
  const std::string dup = error_of([&] { load_case_set({tmp.path()}); });
  INFO(dup);
  CHECK(dup.find(":8: case: 'id' 'a' is already used") != std::string::npos);
  write(tmp / "manifest.toml",
        "[[case]]\nid = \"a\"\ncategory = \"prose\"\nmode = \"guess\"\ntext = \"x\"\n");
  CHECK(error_of([&] { load_case_set({tmp.path()}); }).find(":4: case: 'mode' is 'guess'") !=
        std::string::npos);
}

TEST_CASE(
    "a context beyond the record's is refused with the validate command of the record's own "
    "inputs") {
  test::TempDir tmp;
  const std::string dir = default_validation_dir();
  Record r;
  r.kvrt_version = "9.9";
  r.isa = "scalar";
  r.model_path =
      dir + "/settings.toml";  // any file stands for the model: the gate reads its sha256
  r.model_sha256 = sha256_file(r.model_path);
  r.thresholds_path = dir + "/thresholds.toml";
  r.thresholds_sha256 = sha256_file(r.thresholds_path);
  r.case_dirs = {dir + "/cases", dir + "/canary"};
  r.acceptance_sha256 = load_case_set(r.case_dirs).sha256;
  r.settings.push_back({"k=q8,v=q8", "q8/q8", Verdict::kPass, 1088, 512});
  const std::string path = tmp / "rec.toml";
  write_record(r, path);
  GateQuery q{r.model_path, "k=q8,v=q8", kvrt::ops::MatmulPrecision::kF32, path, "scalar", "9.9",
              512,          1024};
  CHECK(require_pass_record(q).record_path == path);
  q.n_ctx = 1000;
  const std::string longer = error_of([&] { require_pass_record(q); });
  INFO(longer);
  // The record's file and extra cases, so that the new verdict lands where the gate reads it;
  // the bundled thresholds and cases need no flag.
  CHECK(longer.find("validated up to a context of 512 positions") != std::string::npos);
  CHECK(longer.find("Run `kvrt validate -m " + r.model_path + " -c 1000 --record " + path +
                    " --cases " + dir + "/canary`") != std::string::npos);
  q.n_ctx = 2048;
  const std::string beyond = error_of([&] { require_pass_record(q); });
  CHECK(beyond.find("beyond the model's context of 1024 positions") != std::string::npos);
  CHECK(beyond.find("kvrt validate -m") == std::string::npos);
  // Only the extra cases, and other thresholds: --only-cases and --config.
  r.case_dirs = {dir + "/canary"};
  r.acceptance_sha256 = load_case_set(r.case_dirs).sha256;
  const std::string thresholds = tmp / "t.toml";
  std::ofstream(thresholds) << test::read_file(dir + "/thresholds.toml");
  r.thresholds_path = thresholds;
  write_record(r, path);
  q.n_ctx = 1000;
  CHECK(error_of([&] { require_pass_record(q); })
            .find(" -c 1000 --record " + path + " --config " + thresholds + " --cases " + dir +
                  "/canary --only-cases`") != std::string::npos);
}

TEST_CASE("a record round-trips, and an edited record is refused") {
  test::TempDir tmp;
  Record r;
  r.kvrt_version = "9.9";
  r.isa = "scalar";
  r.model_path = "/m.gguf";
  r.model_sha256 = std::string(64, 'a');
  r.thresholds_path = "/t.toml";
  r.thresholds_sha256 = std::string(64, 'b');
  r.case_dirs = {"/cases"};
  r.acceptance_sha256 = std::string(64, 'c');
  r.max_len = 512;
  r.settings.push_back({"k=q4,v=q4", "q4/q4", Verdict::kFail, 12.5});
  r.settings.push_back(
      {"k=q4,v=q4", "q4/q4 bf16", Verdict::kPass, 12.5, 256, kvrt::ops::MatmulPrecision::kBf16});
  const std::string path = tmp / "rec.toml";
  write_record(r, path);
  const Record back = read_record(path);
  CHECK(back.model_sha256 == r.model_sha256);
  REQUIRE(back.settings.size() == 2);
  CHECK(back.settings[0].verdict == Verdict::kFail);
  CHECK(back.settings[0].bytes_per_token == 12.5);
  CHECK(back.settings[0].matmul == kvrt::ops::MatmulPrecision::kF32);
  // One KV setting with two matmul precisions: two entries, each with its own verdict.
  CHECK(back.settings[1].name == back.settings[0].name);
  CHECK(back.settings[1].matmul == kvrt::ops::MatmulPrecision::kBf16);
  CHECK(back.settings[1].verdict == Verdict::kPass);
  CHECK(back.settings[1].n_ctx == 256);
  CHECK(test::read_file(path).find("matmul = \"bf16\"") != std::string::npos);

  std::string text = test::read_file(path);
  text.replace(text.find("\"FAIL\""), 6, "\"PASS\"");
  write(path, text);
  const std::string err = error_of([&] { read_record(path); });
  CHECK(err.find("content hash mismatch") != std::string::npos);
  try {
    read_record(path);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kRefused);
  }
}

TEST_CASE(
    "on a sliding-window model the report counts, per length bucket, the cases longer than the "
    "window") {
  std::vector<validate::Case> cases;
  for (int n : {50, 100, 300, 700, 900}) {
    validate::Case c;
    c.turns = {std::vector<int32_t>(size_t(n), 1)};
    c.bucket = validate::length_bucket(c.n_positions(), 1000);
    cases.push_back(c);
  }
  validate::Report r;
  r.cases = &cases;
  r.max_len = 1000;
  CHECK(validate::window_summary(r).empty());  // no window: no line
  r.sliding_window = 250;
  r.n_windowed_layers = 13;
  r.n_layers = 26;
  CHECK(validate::window_summary(r) ==
        "sliding window 250 positions on 13 of 26 layers; cases longer than it (those layers drop "
        "their first "
        "positions) by bucket: short 0 medium 1 long 2\n");
  r.sliding_window = 4096;  // a validation that never reaches past the window says so
  CHECK(validate::window_summary(r).find(
            "none, so no case reaches past the window: validate with -c above 4096") !=
        std::string::npos);
}

// kvrt tune's path from scripted calibration numbers: two units, a q4-like rung of 2 bytes and an
// FP32 top of 8; unit 0 costs 0.1 nats alone at the bottom, unit 1 0.02.
TEST_CASE(
    "tune's path adds the sinks where they remove the most KL per byte, once, and not when they "
    "remove none") {
  PathCosts c;
  c.unit_kl = {{0.1, 0}, {0.02, 0}};
  c.rung_bytes = {2, 8};
  c.f32_unit_bytes = 8;
  CHECK(path_moves(c) == std::vector<int>{0, 1});  // no sinks step: the worst unit per byte first

  // Cheap sinks (4 of 512 positions) that leave a fifth of the KL: the cheapest fix, taken first.
  c.sinks_factor = 0.2;
  c.sinks_share = 4.0 / 512;
  CHECK(path_moves(c) == std::vector<int>{kAddSinks, 0, 1});

  // Dear sinks (40 % of the positions) that halve the KL: unit 0 removes more per byte, then the
  // sinks beat raising unit 1 (0.5 x 0.02 nats for 0.4 x 6 bytes against 0.02 for 6).
  c.sinks_factor = 0.5;
  c.sinks_share = 0.4;
  CHECK(path_moves(c) == std::vector<int>{0, kAddSinks, 1});

  // Sinks that remove nothing are never added, however cheap.
  c.sinks_factor = 1;
  c.sinks_share = 1e-6;
  CHECK(path_moves(c) == std::vector<int>{0, 1});
}
