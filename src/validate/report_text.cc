#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "validate/report.h"

namespace kvrt::validate {
namespace {

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.resize(w, ' ');
  return s;
}

std::string interval_text(const Interval& i) {
  std::string s = "[";  // built step by step: GCC 12 warns (-Wrestrict) on "[" + std::string
  s += format_number(i.lower);
  s += ", ";
  s += format_number(i.upper);
  return s + "]";
}

// A confidence as a percentage with the digits it needs: "95%", "95.5%", "99.83%".
std::string percent(double confidence) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%%", confidence * 100);
  return buf;
}

// A rate with the spread of its timed segments, "5532.1 ±3%", or "646.0 UNRELIABLE" when the
// machine's load made the spread too wide to compare (validate/speed.h).
std::string rate_cell(double tok_s, double spread, bool reliable) {
  if (!(tok_s > 0)) return "-";
  if (!reliable) return format_rate(tok_s) + " UNRELIABLE";
  char buf[32];
  std::snprintf(buf, sizeof buf, " \u00b1%.0f%%", spread * 100);
  return format_rate(tok_s) + buf;
}

void summary(const Report& r, std::ostringstream& o) {
  const RunResult& run = *r.run;
  // The first column fits the longest label ("q4/q4 sinks4 layers[0]=q2") with two spaces after it.
  size_t label_width = 16;
  for (const SettingResult& s : run.settings)
    label_width = std::max(label_width, s.setting.label.size() + 2);
  o << pad("setting", label_width) << pad("bytes/tok", 11)
    << pad("KV@" + std::to_string(r.max_len), 12) << pad("prefill t/s", 20) << pad("decode t/s", 20)
    << pad("kl mean", 10) << pad("kl 95% interval", 22) << pad("top1 miss", 11)
    << pad("greedy miss", 13) << "verdict\n";
  auto head = [&](const std::string& label, const KvBytes& kv, const Speed& speed) {
    char bpt[32];
    std::snprintf(bpt, sizeof bpt, "%.1f", kv.bytes_per_token);
    // "±" is two bytes in UTF-8 and one column: one more byte of padding where it appears.
    const std::string prefill =
        rate_cell(speed.prefill_tok_s, speed.prefill_spread, speed.prefill_reliable());
    const std::string decode =
        rate_cell(speed.decode_tok_s, speed.decode_spread, speed.decode_reliable());
    const auto width = [](const std::string& cell, size_t w) {
      return cell.find("\u00b1") != std::string::npos ? w + 1 : w;
    };
    o << pad(label, label_width) << pad(bpt, 11) << pad(format_bytes(kv.at_context), 12)
      << pad(prefill, width(prefill, 20)) << pad(decode, width(decode, 20));
  };
  head("f32 baseline", run.baseline_kv, run.baseline_speed);
  o << pad("-", 10) << pad("-", 22) << pad("-", 11) << pad("-", 13) << "(reference)\n";
  auto line = [&](const SettingResult& s, const SettingVerdict& v) {
    head(s.setting.label, s.kv, s.speed);
    const Interval kl = breakdown(r, s, Metric::kKl, "", "");
    o << pad(format_number(kl.mean), 10) << pad(interval_text(kl), 22)
      << pad(format_number(breakdown(r, s, Metric::kTop1Mismatch, "", "").mean), 11)
      << pad(format_number(breakdown(r, s, Metric::kGreedyMismatch, "", "").mean), 13)
      << verdict_name(v.verdict) << "\n";
  };
  line(run.noise_floor, r.noise_verdict);
  for (size_t i = 0; i < run.settings.size(); ++i) line(run.settings[i], r.verdicts[i]);
}

// What each kind of layers holds at the validated context: a sliding-window layer its ring only.
void layer_kinds(const Report& r, const KvBytes& kv, std::ostringstream& o) {
  o << "  KV at " << r.max_len << " positions:";
  for (size_t i = 0; i < kv.kinds.size(); ++i) {
    const KvKindBytes& k = kv.kinds[i];
    char bpt[32];
    std::snprintf(bpt, sizeof bpt, "%.1f", k.bytes_per_token);
    o << (i ? ";" : "") << " " << k.n_layers
      << (k.sliding_window == 0
              ? " full layers"
              : " sliding-window layers (window " + std::to_string(k.sliding_window) + ")")
      << " " << bpt << " bytes/token";
    if (k.sliding_window > 0) o << " up to " << k.kept << " positions";
    o << ", " << format_bytes(k.bytes);
  }
  o << "\n";
}

void details(const Report& r, const SettingResult& s, const SettingVerdict& v,
             std::ostringstream& o) {
  o << "\n"
    << s.setting.label << "  (" << s.name << ", matmul "
    << ops::matmul_precision_name(s.setting.matmul) << ")  " << verdict_name(v.verdict);
  const int n_cases = int(r.cases->size());
  if (s.look >= 0)
    o << "  decided at look " << s.look + 1 << " after " << s.n_run << " of " << n_cases
      << " cases";
  else if (s.n_run < n_cases)
    o << "  on " << s.n_run << " of " << n_cases << " cases (the budget ended the run)";
  o << "\n";
  if (r.n_windowed_layers > 0) layer_kinds(r, s.kv, o);
  o << "  " << pad("metric", 16) << pad("scope", 20) << pad("mean", 10)
    << pad(percent(v.confidence) + " interval", 24) << pad("limit", 9) << pad("detectable", 12)
    << pad("cases", 7) << "verdict\n";
  for (const Check& c : v.checks) {
    o << "  " << pad(metric_name(c.metric), 16) << pad(c.scope, 20)
      << pad(format_number(c.interval.mean), 10) << pad(interval_text(c.interval), 24)
      << pad(format_number(c.limit), 9) << pad(format_number(c.detectable), 12)
      << pad(std::to_string(c.interval.n_cases), 7) << verdict_name(c.verdict);
    if (c.paired)
      o << "  (lost " << c.paired->lost << ", gained " << c.paired->gained << ", McNemar p "
        << format_number(c.mcnemar_p) << ")";
    if (c.cases_needed > 0 && c.verdict != Verdict::kFail)
      o << "  underpowered: needs " << c.cases_needed << " cases the baseline gets right";
    o << "\n";
  }
  o << "  kl by bucket:  ";
  for (const char* b : kBuckets) {
    const Interval i = breakdown(r, s, Metric::kKl, "", b);
    if (i.n_cases) o << b << " " << format_number(i.mean) << " (" << i.n_cases << ")  ";
  }
  int n_recall = 0, hit_base = 0, hit_cand = 0;
  std::string lost, gained, missed;  // case ids
  for (size_t i = 0; i < s.cases.size(); ++i) {
    const CaseScore& c = s.cases[i];
    if (!c.recall_baseline) continue;
    ++n_recall;
    hit_base += *c.recall_baseline;
    hit_cand += *c.recall_candidate;
    const std::string& id = (*r.cases)[i].id;
    if (*c.recall_baseline && !*c.recall_candidate) lost += " " + id;
    if (!*c.recall_baseline && *c.recall_candidate) gained += " " + id;
    if (!*c.recall_baseline) missed += " " + id;
  }
  if (n_recall) {
    o << "\n  answers recalled: baseline " << hit_base << "/" << n_recall << ", this setting "
      << hit_cand << "/" << n_recall;
    if (!lost.empty()) o << "\n  answers lost:" << lost;
    if (!gained.empty()) o << "\n  answers gained:" << gained;
    if (&s == &r.run->noise_floor && !missed.empty())
      o << "\n  answers the baseline misses (not counted):" << missed;
  }
  for (const TaskRow& t : task_rows(r, s)) {
    char line[160];
    std::snprintf(
        line, sizeof line,
        "\n  tasks %-11s baseline %d/%d (%.0f%%), this setting %d/%d (%.0f%%), %+.1f points",
        (t.check + ":").c_str(), t.counts.baseline_right(), t.counts.n(), 100 * t.baseline_rate(),
        t.counts.both + t.counts.gained, t.counts.n(), 100 * t.setting_rate(), t.points());
    o << line << "; lost " << t.counts.lost << ", gained " << t.counts.gained << ", McNemar p "
      << format_number(t.mcnemar_p);
    if (!t.lost.empty()) o << "; lost:" << t.lost;
    if (!t.gained.empty()) o << "; gained:" << t.gained;
  }
  if (v.verdict == Verdict::kFail) {
    o << "\n  worst cases:";
    for (size_t i : worst_cases(r, s, kWorstCases)) {
      const CaseScore& c = s.cases[i];
      o << " " << (*r.cases)[i].id << " (kl " << format_number(c.value(Metric::kKl).value_or(0));
      if (c.recall_baseline && *c.recall_baseline && !*c.recall_candidate) o << ", answer lost";
      if (c.task_baseline && *c.task_baseline && !*c.task_candidate) o << ", task failed";
      o << ")";
    }
  }
  o << "\n  kl by category: ";
  for (const std::string& c : categories(*r.cases))
    o << c << " " << format_number(breakdown(r, s, Metric::kKl, c, "").mean) << "  ";
  o << "\n";
}

void set_summary(const Report& r, std::ostringstream& o) {
  const auto& cases = *r.cases;
  o << "acceptance set: " << cases.size() << " cases (sha256 " << r.acceptance_sha256.substr(0, 12)
    << "...), ";
  int longest = 0;
  for (const Case& c : cases) longest = std::max(longest, c.n_positions());
  o << "validated context " << r.max_len << " positions (" << r.context_source << "; longest case "
    << longest << "); by bucket of the context (short <= 1/4, medium <= 1/2, long above):";
  for (const char* b : kBuckets) {
    int n = 0;
    for (const Case& c : cases) n += c.bucket == b;
    o << " " << b << " " << n;
  }
  o << "; by category:";
  for (const std::string& cat : categories(cases)) {
    int n = 0;
    for (const Case& c : cases) n += c.category == cat;
    o << " " << cat << " " << n;
  }
  o << "\n";
  o << window_summary(r);
  for (const std::string& s : r.skipped)
    o << "skipped (longer than the validated context): " << s << "\n";
  for (const std::string& s : r.skipped_settings)
    o << "setting skipped (cannot apply to this model or CPU): " << s << "\n";
  const auto& b = r.thresholds->bootstrap;
  const int conf = int(std::lround(b.confidence * 100));
  o << "statistics: per-case means, percentile bootstrap over cases, " << b.resamples
    << " resamples, " << conf << "% intervals, seed " << b.seed
    << "; pass/fail metrics: Wilson interval of the share of the "
    << "baseline's right answers lost, exact McNemar on lost vs gained; PASS on the " << conf
    << "% upper bound (every check must pass), FAIL on the lower bound Bonferroni-corrected for "
       "the setting's "
    << "checks; min " << r.thresholds->min_cases << " cases per limit; thresholds "
    << r.thresholds->path << "\n";
  for (const std::string& n : r.notes) o << "note: " << n << "\n";
  const Thresholds& t = *r.thresholds;
  const std::vector<int> looks = look_points(int(cases.size()), t);
  o << "sequential: cases in a random order (seed " << b.seed << "); ";
  if (looks.empty()) {
    o << "no interim look";
  } else {
    o << "a setting already decided stops at a look after";
    for (int n : looks) o << " " << n;
    o << " cases (checks at " << percent(interim_look(t).confidence) << ")";
  }
  o << ", the final look at " << percent(final_look(t, false).confidence)
    << " (alpha spending: no look raises the error rate)\n";
}

}  // namespace

// For --prefer speed, when a PASSing setting timed faster than the one recommended: why it was not
// taken (the difference is within the timing's spread, or one rate is UNRELIABLE).
void speed_tie_note(const Report& r, const SettingResult& chosen, std::ostringstream& o) {
  if (r.prefer != Prefer::kSpeed) return;
  for (size_t i = 0; i < r.run->settings.size(); ++i) {
    const SettingResult& s = r.run->settings[i];
    if (r.verdicts[i].verdict != Verdict::kPass ||
        !(s.speed.decode_tok_s > chosen.speed.decode_tok_s))
      continue;
    o << "  (" << s.setting.label << " timed faster, " << format_rate(s.speed.decode_tok_s)
      << " tok/s, but "
      << (s.speed.decode_reliable() && chosen.speed.decode_reliable()
              ? "within the spread of the timing"
              : "the machine's load made the timing UNRELIABLE")
      << ": the least KV memory decided)\n";
  }
}

std::string report_text(const Report& r) {
  std::ostringstream o;
  o << "kvrt " << r.kvrt_version << " validate: " << r.model_path << " (sha256 "
    << r.model_sha256.substr(0, 12) << "...), ISA " << r.isa << ", " << r.n_threads
    << " threads\nmatmul: " << r.matmul << "\n";
  set_summary(r, o);
  o << "\n";
  summary(r, o);
  o << "(KV@" << r.max_len
    << ": KV cache memory resident at the validated context, FP32 windows and sinks included"
    << (r.n_windowed_layers > 0
            ? ", sliding-window layers holding their ring only (by layer kind below)"
            : "")
    << "; "
    << "prefill and decode tok/s: at the validated context of " << r.max_len << " positions on "
    << r.n_threads << (r.n_threads == 1 ? " thread" : " threads")
    << " on this machine, the fastest of at least " << r.speed_repeats
    << " short timed segments over a synthetic cache, the settings timed in turns (not timed: the "
       "noise floor); "
    << "segments whose threads waited for a core over " << int(kMaxStolenShare * 100)
    << "% of their time left out; "
    << "\u00b1: how much slower the third-fastest of the others was; UNRELIABLE: fewer than "
    << kMinUndisturbed << " others or a gap above " << int(kUnreliableSpread * 100)
    << "% (a busy machine), so --prefer speed does not compare it; noise floor: FP32 against FP32 "
       "with "
    << r.noise_description << ", its values are the resolution of this comparison)\n";
  details(r, r.run->noise_floor, r.noise_verdict, o);
  for (size_t i = 0; i < r.run->settings.size(); ++i)
    details(r, r.run->settings[i], r.verdicts[i], o);
  o << "\n";
  if (r.recommended >= 0) {
    const SettingResult& s = r.run->settings[size_t(r.recommended)];
    const RunResult& run = *r.run;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.1f bytes/token (f32: %.1f), ", s.kv.bytes_per_token,
                  run.baseline_kv.bytes_per_token);
    o << "recommended (--prefer " << prefer_name(r.prefer) << "): " << s.setting.label << "  "
      << s.name << ": " << buf << format_bytes(s.kv.at_context)
      << " of KV cache at the validated context of " << r.max_len
      << " (f32: " << format_bytes(run.baseline_kv.at_context) << "); decode "
      << format_rate(s.speed.decode_tok_s) << " tok/s, prefill "
      << format_rate(s.speed.prefill_tok_s) << " tok/s at " << r.max_len
      << " positions (f32: " << format_rate(run.baseline_speed.decode_tok_s) << " / "
      << format_rate(run.baseline_speed.prefill_tok_s) << ")\n";
    speed_tie_note(r, s, o);
  } else {
    o << "recommended: none of the requested settings passed; keep the f32 cache\n";
  }
  char t[64];
  std::snprintf(t, sizeof t, "%.1f s", r.run->seconds);
  o << "run time: " << t << " (" << r.run->n_run << " of " << r.cases->size() << " cases run";
  if (r.run->budget_ended) o << "; the budget ended the run";
  o << ")\n";
  return o.str();
}

std::string format_number(double x) {
  char buf[32];
  if (x == 0) return "0";
  const double a = std::fabs(x);
  if (a >= 1e-3 && a < 1e4) std::snprintf(buf, sizeof buf, "%.3g", x);
  else std::snprintf(buf, sizeof buf, "%.2e", x);
  return buf;
}

std::string format_bytes(double bytes) {
  char buf[32];
  if (bytes < 1024.0 * 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else if (bytes < 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string format_rate(double tok_s) {
  if (!(tok_s > 0)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, tok_s < 100 ? "%.2f" : "%.1f", tok_s);
  return buf;
}

std::vector<size_t> worst_cases(const Report& r, const SettingResult& s, size_t n) {
  std::vector<size_t> run;
  for (size_t i = 0; i < s.cases.size() && i < r.cases->size(); ++i)
    if (s.cases[i].tokens.n_positions > 0 || !s.cases[i].continuation.baseline.empty())
      run.push_back(i);
  auto key = [&](size_t i) {
    const CaseScore& c = s.cases[i];
    const bool lost = (c.recall_baseline && *c.recall_baseline && !*c.recall_candidate) ||
                      (c.task_baseline && *c.task_baseline && !*c.task_candidate);
    return std::make_pair(lost ? 0 : 1, -c.value(Metric::kKl).value_or(0));
  };
  std::stable_sort(run.begin(), run.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  if (run.size() > n) run.resize(n);
  return run;
}

std::vector<TaskRow> task_rows(const Report& r, const SettingResult& s) {
  std::vector<TaskRow> rows(1 + std::size(kAllCheckKinds));  // all, then one per check kind
  rows[0].check = "all";
  for (CheckKind k : kAllCheckKinds) rows[1 + size_t(k)].check = check_name(k);
  for (size_t i = 0; i < s.cases.size() && i < r.cases->size(); ++i) {
    const CaseScore& c = s.cases[i];
    const Case& def = (*r.cases)[i];
    if (!c.task_baseline || !def.check) continue;
    for (TaskRow* row : {&rows[0], &rows[1 + size_t(def.check->kind)]}) {
      const bool b = *c.task_baseline, d = *c.task_candidate;
      (b ? (d ? row->counts.both : row->counts.lost)
         : (d ? row->counts.gained : row->counts.neither)) += 1;
      if (b && !d) row->lost += " " + def.id;
      if (!b && d) row->gained += " " + def.id;
    }
  }
  std::vector<TaskRow> out;
  for (TaskRow& row : rows) {
    if (row.counts.n() == 0) continue;
    row.mcnemar_p = mcnemar_exact_p(row.counts.lost, row.counts.gained);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<std::string> categories(const std::vector<Case>& cases) {
  std::set<std::string> s;
  for (const Case& c : cases) s.insert(c.category);
  return {s.begin(), s.end()};
}

Interval breakdown(const Report& r, const SettingResult& s, Metric m, const std::string& category,
                   const std::string& bucket) {
  return bootstrap_mean(metric_values(s, *r.cases, m,
                                      [&](const Case& c) {
                                        return (category.empty() || c.category == category) &&
                                               (bucket.empty() || c.bucket == bucket);
                                      }),
                        r.thresholds->bootstrap);
}

std::string window_summary(const Report& r) {
  if (r.sliding_window <= 0) return "";
  std::ostringstream o;
  o << "sliding window " << r.sliding_window << " positions on " << r.n_windowed_layers << " of "
    << r.n_layers
    << " layers; cases longer than it (those layers drop their first positions) by bucket:";
  int n_beyond = 0;
  for (const char* b : kBuckets) {
    int n = 0;
    for (const Case& c : *r.cases) n += c.bucket == b && c.n_positions() > r.sliding_window;
    o << " " << b << " " << n;
    n_beyond += n;
  }
  if (n_beyond == 0)
    o << "; none, so no case reaches past the window: validate with -c above " << r.sliding_window
      << " to cover it";
  o << "\n";
  return o.str();
}

}  // namespace kvrt::validate
