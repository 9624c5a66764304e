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

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
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
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << kH << "' font-size='11'>\n";
  for (int e = int(a.lo); e <= int(a.hi); ++e) {
    const double y = a.y(std::pow(10.0, e));
    o << "<line x1='" << kLeft << "' x2='" << kW - kRight << "' y1='" << y << "' y2='" << y
      << "' stroke='#ddd'/><text x='" << kLeft - 6 << "' y='" << y + 4 << "' text-anchor='end'>1e" << e << "</text>\n";
  }
  o << "<text x='" << (kLeft + kW - kRight) / 2 << "' y='" << kH - 6 << "' text-anchor='middle'>" << esc(xlabel)
    << "</text><text x='14' y='" << kH / 2 << "' transform='rotate(-90 14 " << kH / 2
    << ")' text-anchor='middle'>mean KL (nats/token)</text>\n";
}

void legend(std::ostringstream& o, const std::vector<const SettingResult*>& ss) {
  for (size_t i = 0; i < ss.size(); ++i)
    o << "<rect x='" << kW - kRight + 10 << "' y='" << kTop + 16 * i << "' width='10' height='10' fill='"
      << kColors[i % 10] << "'/><text x='" << kW - kRight + 24 << "' y='" << kTop + 16 * i + 9 << "'>"
      << esc(ss[i]->setting.label) << "</text>\n";
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
    o << "<text x='" << kLeft + dx * bins * i / 4 << "' y='" << kH - kBottom + 14 << "' text-anchor='middle'>"
      << r.run->kl_bin_width * int(bins) * i / 4 << "</text>\n";
  for (size_t i = 0; i < ss.size(); ++i) {
    o << "<polyline fill='none' stroke-width='1.5' stroke='" << kColors[i % 10] << "' points='";
    for (size_t b = 0; b < bins; ++b)
      if (ss[i]->kl_by_pos_count[b]) o << kLeft + dx * (double(b) + 0.5) << "," << a.y(ss[i]->kl_by_pos[b]) << " ";
    o << "'/>\n";
  }
  legend(o, ss);
  o << "</svg>\n";
  return o.str();
}

std::string plot_by_bucket(const Report& r) {
  const auto ss = all_settings(r);
  std::vector<std::vector<double>> v(ss.size());  // [setting][bucket]
  std::vector<double> all;
  for (size_t i = 0; i < ss.size(); ++i)
    for (const char* b : kBuckets) all.push_back(v[i].emplace_back(breakdown(r, *ss[i], Metric::kKl, "", b).mean));
  const LogAxis a = axis_for(all);
  std::ostringstream o;
  frame(o, a, "length bucket (short <= 1/4, medium <= 1/2, long > 1/2 of the validated context)");
  const double group = double(kW - kLeft - kRight) / 3.0;
  const double bar = group * 0.8 / double(ss.size());
  for (int b = 0; b < 3; ++b) {
    o << "<text x='" << kLeft + group * (b + 0.5) << "' y='" << kH - kBottom + 14 << "' text-anchor='middle'>"
      << kBuckets[b] << "</text>\n";
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
       "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
       ".PASS{color:#080;font-weight:bold}.FAIL{color:#c00;font-weight:bold}.INCONCLUSIVE{color:#a60;font-weight:bold}"
       "pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head><body>\n";
  o << "<h1>kvrt validate</h1>\n<p>Model <code>" << esc(r.model_path) << "</code> (sha256 <code>" << r.model_sha256
    << "</code>), kvrt " << esc(r.kvrt_version) << ", ISA " << esc(r.isa) << ", matmul " << esc(r.matmul) << ", " << r.cases->size()
    << " cases, validated context " << r.max_len << ".</p>\n<table><tr><th>setting</th><th>name</th><th>bytes/token</th>"
       "<th>KV at full context</th><th>prefill tok/s</th><th>decode tok/s</th><th>mean KL</th><th>95% interval</th><th>verdict</th></tr>\n";
  for (const SettingResult* s : all_settings(r)) {
    const SettingVerdict& v = s == &r.run->noise_floor ? r.noise_verdict : r.verdicts[size_t(s - r.run->settings.data())];
    const Interval kl = breakdown(r, *s, Metric::kKl, "", "");
    char bpt[32];
    std::snprintf(bpt, sizeof bpt, "%.1f", s->bytes_per_token);
    o << "<tr><td>" << esc(s->setting.label) << "</td><td><code>" << esc(s->name) << "</code>, matmul "
      << ops::matmul_precision_name(s->setting.matmul) << "</td><td>" << bpt << "</td><td>" << format_bytes(s->kv_bytes_full)
      << "</td><td>" << format_rate(s->speed.prefill_tok_s) << "</td><td>" << format_rate(s->speed.decode_tok_s)
      << "</td><td>" << format_number(kl.mean) << "</td><td>[" << format_number(kl.lower) << ", "
      << format_number(kl.upper) << "]</td><td class='" << verdict_name(v.verdict) << "'>" << verdict_name(v.verdict)
      << "</td></tr>\n";
  }
  o << "</table>\n<h2>KL by position</h2>\n" << plot_by_position(r) << "<h2>KL by length bucket</h2>\n"
    << plot_by_bucket(r) << "<h2>Full table</h2>\n<pre>" << esc(report_text(r)) << "</pre>\n</body></html>\n";
  return o.str();
}

}  // namespace kvrt::validate
