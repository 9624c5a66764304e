#include <cmath>
#include <cstdio>
#include <sstream>

#include "validate/report.h"

namespace kvrt::validate {
namespace {

std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string interval(const Interval& i) {
  return "{\"mean\": " + num(i.mean) + ", \"lower\": " + num(i.lower) +
         ", \"upper\": " + num(i.upper) + ", \"cases\": " + std::to_string(i.n_cases) + "}";
}

// Tok/s at the validated context; null where not measured.
std::string speed(const Speed& s) {
  auto rate = [](double x) { return x > 0 ? num(x) : std::string("null"); };
  auto spread = [&](double x) { return s.decode_tok_s > 0 ? num(x) : std::string("null"); };
  return "\"prefill_tok_s\": " + rate(s.prefill_tok_s) +
         ", \"decode_tok_s\": " + rate(s.decode_tok_s) +
         ", \"prefill_spread\": " + spread(s.prefill_spread) +
         ", \"decode_spread\": " + spread(s.decode_spread) + ", \"speed_reliable\": " +
         (s.decode_tok_s > 0 ? (s.prefill_reliable() && s.decode_reliable() ? "true" : "false")
                             : "null") +
         ", \"timed_segments\": " + std::to_string(s.repeats) + ", \"undisturbed_segments\": [" +
         std::to_string(s.prefill_undisturbed) + ", " + std::to_string(s.decode_undisturbed) + "]";
}

// A cache's memory: bytes/token, what is resident at the validated and the full context, and at
// the validated context per layer kind (a sliding-window layer holds its ring only).
std::string kv_memory(const KvBytes& kv) {
  std::string s = "\"bytes_per_token\": " + num(kv.bytes_per_token) +
                  ", \"kv_bytes_at_validated_context\": " + num(kv.at_context) +
                  ", \"kv_bytes_at_full_context\": " + num(kv.at_full_context) +
                  ", \"kv_layer_kinds\": [";
  for (size_t i = 0; i < kv.kinds.size(); ++i) {
    const KvKindBytes& k = kv.kinds[i];
    s += std::string(i ? ", " : "") + "{\"sliding_window\": " + std::to_string(k.sliding_window) +
         ", \"layers\": " + std::to_string(k.n_layers) +
         ", \"bytes_per_token\": " + num(k.bytes_per_token) +
         ", \"kept_positions\": " + std::to_string(k.kept) +
         ", \"kv_bytes_at_validated_context\": " + num(k.bytes) + "}";
  }
  return s + "]";
}

void setting(const Report& r, const SettingResult& s, const SettingVerdict& v,
             std::ostringstream& o) {
  o << "    {\"label\": " << json_quote(s.setting.label) << ", \"name\": " << json_quote(s.name)
    << ", \"matmul_precision\": " << json_quote(ops::matmul_precision_name(s.setting.matmul))
    << ", \"verdict\": " << json_quote(verdict_name(v.verdict)) << ", \"n_checks\": " << v.n_checks
    << ", \"confidence\": " << num(v.confidence) << ", \"cases_run\": " << s.n_run
    << ", \"look\": " << (s.look >= 0 ? std::to_string(s.look + 1) : std::string("null")) << ", "
    << kv_memory(s.kv) << ", \"bytes_saved_at_validated_context\": "
    << num(r.run->baseline_kv.at_context - s.kv.at_context) << ", \"bytes_saved_at_full_context\": "
    << num(r.run->baseline_kv.at_full_context - s.kv.at_full_context) << ", " << speed(s.speed)
    << ",\n";
  o << "     \"checks\": [";
  for (size_t i = 0; i < v.checks.size(); ++i) {
    const Check& c = v.checks[i];
    o << (i ? ",\n       " : "\n       ") << "{\"metric\": " << json_quote(metric_name(c.metric))
      << ", \"scope\": " << json_quote(c.scope) << ", \"limit\": " << num(c.limit)
      << ", \"interval\": " << interval(c.interval)
      << ", \"fail_lower_corrected\": " << num(c.fail_lower)
      << ", \"detectable\": " << num(c.detectable) << ", \"cases_needed\": " << c.cases_needed;
    if (c.paired)
      o << ", \"paired\": {\"both\": " << c.paired->both << ", \"lost\": " << c.paired->lost
        << ", \"gained\": " << c.paired->gained << ", \"neither\": " << c.paired->neither
        << ", \"mcnemar_p\": " << num(c.mcnemar_p) << "}";
    o << ", \"verdict\": " << json_quote(verdict_name(c.verdict)) << "}";
  }
  o << "],\n     \"metrics\": {";
  for (size_t mi = 0; mi < kAllMetrics.size(); ++mi) {
    const Metric m = kAllMetrics[mi];
    o << (mi ? ",\n       " : "\n       ") << json_quote(metric_name(m))
      << ": {\"all\": " << interval(breakdown(r, s, m, "", ""));
    for (const char* b : kBuckets)
      o << ", " << json_quote(std::string("bucket=") + b) << ": "
        << interval(breakdown(r, s, m, "", b));
    for (const std::string& c : categories(*r.cases))
      o << ", " << json_quote("category=" + c) << ": " << interval(breakdown(r, s, m, c, ""));
    o << "}";
  }
  o << "},\n     \"tasks\": [";
  const std::vector<TaskRow> tasks = task_rows(r, s);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskRow& t = tasks[i];
    o << (i ? ",\n       " : "\n       ") << "{\"check\": " << json_quote(t.check)
      << ", \"cases\": " << t.counts.n() << ", \"baseline_passed\": " << t.counts.baseline_right()
      << ", \"setting_passed\": " << t.counts.both + t.counts.gained
      << ", \"points\": " << num(t.points()) << ", \"lost\": " << t.counts.lost
      << ", \"gained\": " << t.counts.gained << ", \"mcnemar_p\": " << num(t.mcnemar_p) << "}";
  }
  o << "],\n     \"kl_by_position\": [";
  for (size_t b = 0; b < s.kl_by_pos.size(); ++b) o << (b ? ", " : "") << num(s.kl_by_pos[b]);
  o << "]}";
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

std::string report_json(const Report& r) {
  std::ostringstream o;
  const auto& bs = r.thresholds->bootstrap;
  o << "{\n  \"kvrt_version\": " << json_quote(r.kvrt_version)
    << ",\n  \"isa\": " << json_quote(r.isa) << ",\n  \"matmul\": " << json_quote(r.matmul)
    << ",\n  \"model\": {\"path\": " << json_quote(r.model_path)
    << ", \"sha256\": " << json_quote(r.model_sha256) << ", \"full_context\": " << r.n_ctx_full
    << ", \"sliding_window\": " << r.sliding_window
    << ", \"windowed_layers\": " << r.n_windowed_layers << "},\n  \"max_len\": " << r.max_len
    << ",\n  \"context_source\": " << json_quote(r.context_source)
    << ",\n  \"threads\": " << r.n_threads
    << ",\n  \"acceptance_sha256\": " << json_quote(r.acceptance_sha256)
    << ",\n  \"thresholds\": {\"path\": " << json_quote(r.thresholds->path)
    << ", \"sha256\": " << json_quote(r.thresholds->sha256)
    << "},\n  \"bootstrap\": {\"resamples\": " << bs.resamples
    << ", \"confidence\": " << num(bs.confidence) << ", \"seed\": " << bs.seed
    << ", \"min_cases\": " << r.thresholds->min_cases << "},\n";
  o << "  \"sequential\": {\"looks\": " << r.thresholds->sequential.looks
    << ", \"interim_share\": " << num(r.thresholds->sequential.interim_share)
    << ", \"cases_run\": " << r.run->n_run
    << ", \"budget_ended\": " << (r.run->budget_ended ? "true" : "false") << "},\n";
  o << "  \"cases\": [";
  for (size_t i = 0; i < r.cases->size(); ++i) {
    const Case& c = (*r.cases)[i];
    o << (i ? ",\n    " : "\n    ") << "{\"id\": " << json_quote(c.id)
      << ", \"category\": " << json_quote(c.category)
      << ", \"mode\": " << json_quote(mode_name(c.mode)) << ", \"bucket\": " << json_quote(c.bucket)
      << ", \"positions\": " << c.n_positions();
    if (c.check) o << ", \"check\": " << json_quote(check_name(c.check->kind));
    o << "}";
  }
  o << "],\n  \"skipped\": [";
  for (size_t i = 0; i < r.skipped.size(); ++i) o << (i ? ", " : "") << json_quote(r.skipped[i]);
  o << "],\n  \"skipped_settings\": [";
  for (size_t i = 0; i < r.skipped_settings.size(); ++i)
    o << (i ? ", " : "") << json_quote(r.skipped_settings[i]);
  o << "],\n  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) o << (i ? ", " : "") << json_quote(r.notes[i]);
  o << "],\n  \"kl_bin_width\": " << r.run->kl_bin_width
    << ",\n  \"baseline_bytes_per_token\": " << num(r.run->baseline_kv.bytes_per_token)
    << ",\n  \"baseline\": {" << kv_memory(r.run->baseline_kv) << ", "
    << speed(r.run->baseline_speed) << "},\n  \"speed_repeats\": " << r.speed_repeats
    << ",\n  \"noise_floor\":\n";
  setting(r, r.run->noise_floor, r.noise_verdict, o);
  o << ",\n  \"settings\": [\n";
  for (size_t i = 0; i < r.run->settings.size(); ++i) {
    if (i) o << ",\n";
    setting(r, r.run->settings[i], r.verdicts[i], o);
  }
  o << "\n  ],\n  \"recommended\": "
    << (r.recommended >= 0 ? json_quote(r.run->settings[size_t(r.recommended)].name)
                           : std::string("null"))
    << ",\n  \"prefer\": " << json_quote(prefer_name(r.prefer))
    << ",\n  \"seconds\": " << num(r.run->seconds) << "\n}\n";
  return o.str();
}

}  // namespace kvrt::validate
