// The text report of kvrt tune (validate/tune.h).
#include <cstdio>
#include <sstream>

#include "kv/formats.h"
#include "validate/report.h"
#include "validate/tune.h"

namespace kvrt::validate {
namespace {

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.resize(w, ' ');
  return s;
}

std::string fixed(double x, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string unit_name(const TuneUnit& u) {
  return (u.side == kv::TileRole::kKey ? "k[" : "v[") + std::to_string(u.layer) + "]";
}

std::string ids(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& id : v) s += " " + id;
  return s;
}

// The KL check over all cases, and the limits that decided the verdict (those that FAILed it, or
// those left INCONCLUSIVE).
std::string check_text(const SettingVerdict& v) {
  std::string kl = "-", open;
  for (const Check& c : v.checks) {
    if (c.metric == Metric::kKl && c.scope == "all")
      kl = format_number(c.interval.mean) + " [" + format_number(c.interval.lower) + ", " +
           format_number(c.interval.upper) + "]";
    if (c.verdict != Verdict::kPass && c.verdict == v.verdict)
      open += std::string(open.empty() ? "" : ", ") + metric_name(c.metric) +
              (c.scope == "all" ? "" : " " + c.scope);
  }
  return pad(kl, 32) + pad(verdict_name(v.verdict), 14) + open;
}

void units_table(const Tuning& t, const TuneRequest& req, std::ostringstream& o) {
  if (t.rotation_kl)
    o << "\nrotation: every unit at " << kv::format_name(req.ladder.front()) << ": KL "
      << format_number(t.rotation_kl->first) << " without, " << format_number(t.rotation_kl->second)
      << " with rotation; the search runs "
      << (t.rotation_kl->second < t.rotation_kl->first ? "with (rot=1)" : "without (rot=0)")
      << "\n";
  o << "\nKL of each unit alone at each format (calibration cases; every other unit at "
    << kv::format_name(req.ladder.back()) << "):\n"
    << pad("unit", 8);
  for (kv::Format f : req.ladder) o << pad(kv::format_name(f), 11);
  o << "\n";
  for (size_t u = 0; u < t.units.size(); ++u) {
    o << pad(unit_name(t.units[u]), 8);
    for (double kl : t.unit_kl[u]) o << pad(format_number(kl), 11);
    o << "\n";
  }
  if (t.sinks_tried)
    o << "every unit at " << kv::format_name(req.ladder.front()) << ": KL "
      << format_number(t.bottom_kl) << ", with sinks=" << req.sinks << " "
      << format_number(t.bottom_sinks_kl)
      << " (the path takes that share of each unit's KL once it adds the sinks)\n";
}

void path_table(const Tuning& t, const TuneRequest& req, std::ostringstream& o) {
  o << "\nPath (each step raises one unit one format; checked steps on the verdict cases):\n"
    << pad("step", 6) << pad("raised", 13) << pad("bytes/tok", 11) << pad("KiB at -c", 11)
    << pad("calib kl", 11) << pad("kl mean [95% interval]", 32) << pad("verdict", 14)
    << "limits that decided\n";
  for (size_t i = 0; i < t.path.size(); ++i) {
    const TuneStep& s = t.path[i];
    std::string raised = "-";
    if (s.raised == kAddSinks) {
      raised = "sinks=" + std::to_string(req.sinks);
    } else if (s.raised >= 0) {
      const TuneUnit& u = t.units[size_t(s.raised)];
      int rung = 0;  // the unit's rung after this step: one above the last step that raised it
      for (size_t j = 1; j <= i; ++j) rung += t.path[j].raised == s.raised;
      raised = unit_name(u) + " " + kv::format_name(req.ladder[size_t(rung)]);
    }
    o << pad(std::to_string(i), 6) << pad(raised, 13) << pad(fixed(s.bytes_per_token, "%.1f"), 11)
      << pad(fixed(s.context_bytes / 1024, "%.1f"), 11) << pad(format_number(s.calibration_kl), 11)
      << (s.verdict ? check_text(*s.verdict) : "not checked") << "\n";
  }
}

}  // namespace

std::string tune_report_text(const Tuning& t, const TuneRequest& req) {
  std::ostringstream o;
  o << "kvrt tune: context " << t.max_len << ", formats";
  for (kv::Format f : req.ladder) o << " " << kv::format_name(f);
  o << ", matmul " << ops::matmul_precision_name(req.matmul) << "\n";
  for (const std::string& s : t.skipped_formats) o << "left out: " << s << "\n";
  o << "calibration cases (" << t.calibration_ids.size() << "):" << ids(t.calibration_ids) << "\n";
  o << "verdict cases (" << t.verdict_ids.size() << "):" << ids(t.verdict_ids) << "\n";
  if (!t.unit_kl.empty()) units_table(t, req, o);
  if (!t.path.empty()) path_table(t, req, o);
  o << "\n";
  if (t.sinks_check)
    o << "sinks check (the first PASS with the sinks "
      << (t.sinks_check->kv.sinks > 0 ? "added to the step before it" : "taken out")
      << "): " << fixed(t.sinks_check->bytes_per_token, "%.1f") << " bytes/tok, "
      << fixed(t.sinks_check->context_bytes / 1024, "%.1f") << " KiB at -c, "
      << check_text(*t.sinks_check->verdict) << "\n";
  if (t.found >= 0) {
    const TuneStep& s = t.result();
    o << "found: " << req.name << " = " << s.name << "\n  " << fixed(s.bytes_per_token, "%.1f")
      << " bytes/token, " << fixed(s.context_bytes / 1024, "%.1f")
      << " KiB at the context, PASS on " << t.verdict_ids.size()
      << " verdict cases at a context of " << t.max_len << "\n";
  } else {
    o << "found: no setting on the path PASSed"
      << (req.ladder.back() == kv::Format::kF32 ? " below the FP32 cache" : "") << "\n";
  }
  if (t.budget_ended)
    o << "the budget ended the search "
      << (t.path.empty() ? "during calibration" : "before it was decided")
      << (t.found >= 0 ? ": a smaller setting may pass" : "") << "\n";
  o << "time: " << fixed(t.seconds, "%.1f") << " s (calibration "
    << fixed(t.calibration_seconds, "%.1f") << " s)\n";
  return o.str();
}

}  // namespace kvrt::validate
