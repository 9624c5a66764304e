// Reports of a validation run: a text table for the terminal, JSON for machines and a
// self-contained HTML page with inline SVG plots (KL by position and by length bucket).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "validate/case_set.h"
#include "validate/recommend.h"
#include "validate/runner.h"
#include "validate/thresholds.h"
#include "validate/verdict.h"

namespace kvrt::validate {

struct Report {
  const std::vector<Case>* cases = nullptr;
  const RunResult* run = nullptr;
  const Thresholds* thresholds = nullptr;
  std::vector<SettingVerdict> verdicts;  // parallel to run->settings
  SettingVerdict noise_verdict;
  int recommended = -1;             // index into run->settings
  Prefer prefer = Prefer::kMemory;  // what chose it
  std::string model_path, model_sha256, isa, kvrt_version, acceptance_sha256;
  std::string matmul;  // matrix-product backends (ops::matmul_backends)
  int n_ctx_full = 0;  // the model's full context, for "memory saved"
  int max_len = 0;     // the validated context: the cases were built for it
  // The model's sliding window (0: none) and the layers it applies to: a case longer than the
  // window has those layers drop its first positions (their cache is a ring), one no longer does
  // not.
  int sliding_window = 0;
  int n_windowed_layers = 0, n_layers = 0;
  std::string context_source;  // why this context: "-c", or how the default was chosen
  int n_threads = 0;
  int speed_repeats = 0;             // timed segments per measurement (validate/speed.h)
  std::string noise_description;     // how the noise-floor lane differs from the baseline
  std::vector<std::string> skipped;  // cases left out (too long)
  std::vector<std::string>
      skipped_settings;            // "label: why" of settings that cannot apply to the model
  std::vector<std::string> notes;  // limits of the thresholds file that the set leaves unused
};

// Mean and interval of a metric over the cases of one category or bucket ("" = all).
Interval breakdown(const Report& r, const SettingResult& s, Metric m, const std::string& category,
                   const std::string& bucket);
std::vector<std::string> categories(const std::vector<Case>& cases);  // sorted, unique
// The cases that show a setting's damage most: answers lost and task checks failed first, then by
// mean KL; at most n, of those it ran (indices into r.cases).
std::vector<size_t> worst_cases(const Report& r, const SettingResult& s, size_t n);
constexpr size_t kWorstCases = 3;  // shown per failing setting

// Task cases of one setting by check (validate/task_check.h): "all", then each check the set uses.
struct TaskRow {
  std::string check;
  PairedCounts counts;  // baseline and setting pass or fail each case
  double mcnemar_p = 1;
  std::string lost, gained;  // ids of the cases, space-separated

  double baseline_rate() const { return double(counts.baseline_right()) / counts.n(); }
  double setting_rate() const { return double(counts.both + counts.gained) / counts.n(); }
  double points() const {
    return 100.0 * (counts.gained - counts.lost) / counts.n();
  }  // setting - baseline
};
std::vector<TaskRow> task_rows(const Report& r,
                               const SettingResult& s);  // empty: the set has no task case

std::string format_number(double x);     // 3 significant digits, fixed or scientific
std::string format_bytes(double bytes);  // "720.0 KiB", "1.5 MiB", "3.2 GiB"
std::string format_rate(double tok_s);   // tokens per second, "-" when not measured

std::string report_text(const Report& r);
// How the cases sit against the model's sliding window: per length bucket, the cases longer than
// it (those whose windowed layers drop positions); a line of report_text, "" without a window.
std::string window_summary(const Report& r);
std::string report_json(const Report& r);    // deterministic except the timings (seconds, tok/s)
std::string json_quote(std::string_view s);  // a JSON string literal with escapes
std::string report_html(const Report& r);

}  // namespace kvrt::validate
