// Self-contained HTML: no scripts, no external files; plots are inline SVG on a log scale.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "validate/report.h"

namespace kvrt::validate {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr double kFloor = 1e-9;  // KL values below this are drawn at the floor
constexpr int kW = 720, kH = 300, kLeft = 70, kRight = 170, kTop = 20, kBottom = 40;

// Bytes of the well-formed UTF-8 character at s[i]; 0 when it is not one (the text of one token
// may be part of a character).
size_t utf8_length(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80                   ? 1
                   : (c >= 0xC2 && c <= 0xDF) ? 2
                   : (c >> 4) == 0xE          ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4
                                              : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// Text for HTML text and attributes (quoted with ' or "): markup characters escaped, NUL and bytes
// that are not UTF-8 shown as U+FFFD.
std::string esc(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    if (n == 0 || s[i] == '\0') {
      o += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (s[i]) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o.append(s, i, n);
    }
    i += n;
  }
  return o;
}

std::vector<const SettingResult*> all_settings(const Report& r) {
  std::vector<const SettingResult*> v{&r.run->noise_floor};
  for (const auto& s : r.run->settings) v.push_back(&s);
  return v;
}

struct LogAxis {
  double lo, hi;  // log10 range
  double y(double v) const {
    const double l = std::log10(std::max(v, kFloor));
    return kTop + (kH - kTop - kBottom) * (1.0 - (l - lo) / (hi - lo));
  }
};

LogAxis axis_for(const std::vector<double>& values) {
  double lo = 0, hi = -9;
  for (double v : values) {
    const double l = std::log10(std::max(v, kFloor));
    lo = std::min(lo, std::floor(l));
    hi = std::max(hi, std::ceil(l));
  }
  if (hi <= lo) hi = lo + 1;
  return {lo, hi};
}

void frame(std::ostringstream& o, const LogAxis& a, const std::string& xlabel) {
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << kH
    << "' font-size='11'>\n";
  for (int e = int(a.lo); e <= int(a.hi); ++e) {
    const double y = a.y(std::pow(10.0, e));
    o << "<line x1='" << kLeft << "' x2='" << kW - kRight << "' y1='" << y << "' y2='" << y
      << "' stroke='#ddd'/><text x='" << kLeft - 6 << "' y='" << y + 4 << "' text-anchor='end'>1e"
      << e << "</text>\n";
  }
  o << "<text x='" << (kLeft + kW - kRight) / 2 << "' y='" << kH - 6 << "' text-anchor='middle'>"
    << esc(xlabel) << "</text><text x='14' y='" << kH / 2 << "' transform='rotate(-90 14 " << kH / 2
    << ")' text-anchor='middle'>mean KL (nats/token)</text>\n";
}

void legend(std::ostringstream& o, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    o << "<rect x='" << kW - kRight + 10 << "' y='" << kTop + 16 * i
      << "' width='10' height='10' fill='" << kColors[i % 10] << "'/><text x='" << kW - kRight + 24
      << "' y='" << kTop + 16 * i + 9 << "'>" << esc(names[i]) << "</text>\n";
}

void legend(std::ostringstream& o, const std::vector<const SettingResult*>& ss) {
  std::vector<std::string> names;
  for (const SettingResult* s : ss) names.push_back(s->setting.label);
  legend(o, names);
}

std::string plot_by_position(const Report& r) {
  const auto ss = all_settings(r);
  std::vector<double> all;
  for (auto* s : ss) all.insert(all.end(), s->kl_by_pos.begin(), s->kl_by_pos.end());
  const LogAxis a = axis_for(all);
  std::ostringstream o;
  frame(o, a, "position in context (bins of " + std::to_string(r.run->kl_bin_width) + ")");
  const size_t bins = ss[0]->kl_by_pos.size();
  const double dx = double(kW - kLeft - kRight) / double(std::max<size_t>(bins, 1));
  for (int i = 0; i <= 4; ++i)
    o << "<text x='" << kLeft + dx * bins * i / 4 << "' y='" << kH - kBottom + 14
      << "' text-anchor='middle'>" << r.run->kl_bin_width * int(bins) * i / 4 << "</text>\n";
  for (size_t i = 0; i < ss.size(); ++i) {
    o << "<polyline fill='none' stroke-width='1.5' stroke='" << kColors[i % 10] << "' points='";
    for (size_t b = 0; b < bins; ++b)
      if (ss[i]->kl_by_pos_count[b])
        o << kLeft + dx * (double(b) + 0.5) << "," << a.y(ss[i]->kl_by_pos[b]) << " ";
    o << "'/>\n";
  }
  legend(o, ss);
  o << "</svg>\n";
  return o.str();
}

// KL at each position of the long cases a setting ran, one line per case (means over at most
// kPoints bins of positions).
std::string plot_long_cases(const Report& r, const SettingResult& s) {
  constexpr size_t kPoints = 200;
  std::vector<std::string> ids;
  std::vector<std::vector<double>> lines;  // [case][bin]
  size_t longest = 1;
  for (size_t i = 0; i < s.cases.size() && ids.size() < 10; ++i) {
    const std::vector<float>& kl = s.cases[i].kl_by_pos;
    if ((*r.cases)[i].bucket != std::string("long") || kl.empty()) continue;
    ids.push_back((*r.cases)[i].id);
    longest = std::max(longest, kl.size());
    lines.emplace_back(kl.begin(), kl.end());
  }
  if (ids.empty()) return "";
  const size_t width = (longest + kPoints - 1) / kPoints;  // positions per bin
  std::vector<double> all;
  for (auto& line : lines) {
    std::vector<double> binned;
    for (size_t b = 0; b < line.size(); b += width) {
      const size_t e = std::min(line.size(), b + width);
      double sum = 0;
      for (size_t k = b; k < e; ++k) sum += line[k];
      binned.push_back(sum / double(e - b));
    }
    line = binned;
    all.insert(all.end(), line.begin(), line.end());
  }
  const LogAxis a = axis_for(all);
  std::ostringstream o;
  frame(o, a, "position in the case (bins of " + std::to_string(width) + ")");
  const double dx = double(kW - kLeft - kRight) / double((longest + width - 1) / width);
  for (int i = 0; i <= 4; ++i)
    o << "<text x='" << kLeft + (kW - kLeft - kRight) * i / 4.0 << "' y='" << kH - kBottom + 14
      << "' text-anchor='middle'>" << longest * size_t(i) / 4 << "</text>\n";
  for (size_t c = 0; c < lines.size(); ++c) {
    o << "<polyline fill='none' stroke-width='1.5' stroke='" << kColors[c % 10] << "' points='";
    for (size_t b = 0; b < lines[c].size(); ++b)
      o << kLeft + dx * (double(b) + 0.5) << "," << a.y(lines[c][b]) << " ";
    o << "'/>\n";
  }
  legend(o, ids);
  o << "</svg>\n";
  return o.str();
}

// One column of a continuation: its pieces, the first divergent one marked, the rest after it
// dimmed.
std::string pieces_html(const std::vector<std::string>& pieces, int first_divergence) {
  std::string o;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int at = int(i);
    if (at == first_divergence) o += "<mark>" + esc(pieces[i]) + "</mark>";
    else if (first_divergence >= 0 && at > first_divergence)
      o += "<span class='after'>" + esc(pieces[i]) + "</span>";
    else o += esc(pieces[i]);
  }
  return o;
}

// The worst cases of every failing setting: continuations side by side, KL by position of the long
// cases.
std::string damage(const Report& r) {
  std::ostringstream o;
  for (size_t si = 0; si < r.run->settings.size(); ++si) {
    const SettingResult& s = r.run->settings[si];
    if (r.verdicts[si].verdict != Verdict::kFail) continue;
    o << "<h3>" << esc(s.setting.label) << " <code>" << esc(s.name) << "</code></h3>\n";
    for (size_t i : worst_cases(r, s, kWorstCases)) {
      const Case& c = (*r.cases)[i];
      const CaseScore& cs = s.cases[i];
      o << "<h4>" << esc(c.id) << "</h4>\n<p>" << mode_name(c.mode) << ", " << esc(c.category)
        << ", " << c.bucket << ", " << c.n_positions() << " positions, mean KL "
        << format_number(cs.value(Metric::kKl).value_or(0));
      if (cs.recall_baseline && *cs.recall_baseline)
        o << (*cs.recall_candidate ? ", answer kept" : ", answer lost");
      if (cs.task_baseline)
        o << ", task check " << (*cs.task_baseline ? "passed" : "failed") << " by the baseline, "
          << (*cs.task_candidate ? "passed" : "failed") << " by this setting";
      o << "</p>\n";
      const Continuation& k = cs.continuation;
      if (k.baseline.empty()) continue;
      o << "<table class='cont'><tr><th>baseline (f32)</th><th>" << esc(s.setting.label)
        << (k.own ? " (its own continuation)" : " (its next token after the baseline's tokens)")
        << "</th></tr><tr><td>" << pieces_html(k.baseline, k.first_divergence) << "</td><td>"
        << pieces_html(k.candidate, k.first_divergence) << "</td></tr></table>\n";
    }
    const std::string plot = plot_long_cases(r, s);
    if (!plot.empty()) o << "<p>KL by position of the long cases:</p>\n" << plot;
  }
  return o.str();
}

std::string plot_by_bucket(const Report& r) {
  const auto ss = all_settings(r);
  std::vector<std::vector<double>> v(ss.size());  // [setting][bucket]
  std::vector<double> all;
  for (size_t i = 0; i < ss.size(); ++i)
    for (const char* b : kBuckets)
      all.push_back(v[i].emplace_back(breakdown(r, *ss[i], Metric::kKl, "", b).mean));
  const LogAxis a = axis_for(all);
  std::ostringstream o;
  frame(o, a, "length bucket (short <= 1/4, medium <= 1/2, long > 1/2 of the validated context)");
  const double group = double(kW - kLeft - kRight) / 3.0;
  const double bar = group * 0.8 / double(ss.size());
  for (int b = 0; b < 3; ++b) {
    o << "<text x='" << kLeft + group * (b + 0.5) << "' y='" << kH - kBottom + 14
      << "' text-anchor='middle'>" << kBuckets[b] << "</text>\n";
    for (size_t i = 0; i < ss.size(); ++i) {
      const double x = kLeft + group * b + group * 0.1 + bar * double(i);
      const double y = a.y(v[i][size_t(b)]);
      o << "<rect x='" << x << "' y='" << y << "' width='" << bar * 0.9 << "' height='"
        << std::max(0.0, kH - kBottom - y) << "' fill='" << kColors[i % 10] << "'/>\n";
    }
  }
  legend(o, ss);
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::string report_html(const Report& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>kvrt validate</title>\n"
       "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:"
       "collapse}"
       "td,th{border:1px solid #ccc;padding:2px "
       "8px;text-align:right}td:first-child,th:first-child{text-align:left}"
       ".PASS{color:#080;font-weight:bold}.FAIL{color:#c00;font-weight:bold}.INCONCLUSIVE{color:#"
       "a60;font-weight:bold}"
       "pre{background:#f6f6f6;padding:1em;overflow-x:auto}table.cont "
       "td{white-space:pre-wrap;text-align:left;"
       "vertical-align:top;width:50%;font-family:monospace}mark{background:#fc6}.after{color:#888}<"
       "/style></head><body>\n";
  o << "<h1>kvrt validate</h1>\n<p>Model <code>" << esc(r.model_path) << "</code> (sha256 <code>"
    << r.model_sha256 << "</code>), kvrt " << esc(r.kvrt_version) << ", ISA " << esc(r.isa)
    << ", matmul " << esc(r.matmul) << ", " << r.cases->size() << " cases, validated context "
    << r.max_len
    << ".</p>\n<table><tr><th>setting</th><th>name</th><th>bytes/token</th>"
       "<th>KV at validated context</th><th>prefill tok/s</th><th>decode tok/s</th><th>mean "
       "KL</th><th>95% interval</th><th>verdict</th></tr>\n";
  for (const SettingResult* s : all_settings(r)) {
    const SettingVerdict& v =
        s == &r.run->noise_floor ? r.noise_verdict : r.verdicts[size_t(s - r.run->settings.data())];
    const Interval kl = breakdown(r, *s, Metric::kKl, "", "");
    char bpt[32];
    std::snprintf(bpt, sizeof bpt, "%.1f", s->kv.bytes_per_token);
    o << "<tr><td>" << esc(s->setting.label) << "</td><td><code>" << esc(s->name)
      << "</code>, matmul " << ops::matmul_precision_name(s->setting.matmul) << "</td><td>" << bpt
      << "</td><td>" << format_bytes(s->kv.at_context) << "</td><td>"
      << format_rate(s->speed.prefill_tok_s) << "</td><td>" << format_rate(s->speed.decode_tok_s)
      << "</td><td>" << format_number(kl.mean) << "</td><td>[" << format_number(kl.lower) << ", "
      << format_number(kl.upper) << "]</td><td class='" << verdict_name(v.verdict) << "'>"
      << verdict_name(v.verdict) << "</td></tr>\n";
  }
  o << "</table>\n<h2>KL by position</h2>\n"
    << plot_by_position(r) << "<h2>KL by length bucket</h2>\n"
    << plot_by_bucket(r);
  const std::string d = damage(r);
  if (!d.empty())
    o << "<h2>The damage: worst cases of each failing setting</h2>\n<p>Up to " << kWorstCases
      << " cases per failing setting, answers lost and task checks failed first, then by mean KL. "
         "Continuations token by token, the first "
         "token that differs marked. Recall and task cases: each cache continued on its own from "
         "the prompt. Greedy and "
         "multi-turn cases run in lockstep on the baseline's tokens, so the setting's column holds "
         "its own next token "
         "after the baseline's tokens so far.</p>\n"
      << d;
  o << "<h2>Full table</h2>\n<pre>" << esc(report_text(r)) << "</pre>\n</body></html>\n";
  return o.str();
}

}  // namespace kvrt::validate
