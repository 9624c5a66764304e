#include "validate/tune.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>

#include "common/error.h"
#include "kv/cache_layout.h"
#include "kv/formats.h"
#include "validate/bootstrap.h"
#include "validate/named_setting.h"
#include "validate/settings.h"

namespace kvrt::validate {
namespace {

// Settings per calibration run: each lane holds a cache and a copy of it, so a model with many
// layers calibrates in several runs (the baseline runs again in each) rather than all at once.
constexpr size_t kCalibrationLanes = 16;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

kv::CacheShape shape_of(const model::Model& m, int n_ctx) {
  const model::ModelConfig& c = m.config();
  return {c.n_layers, c.n_kv_heads, c.head_dim, n_ctx};
}

std::vector<TuneUnit> units_of(const model::Model& m) {
  std::vector<TuneUnit> units;
  for (int l = 0; l < m.config().n_layers; ++l)
    for (kv::TileRole side : {kv::TileRole::kKey, kv::TileRole::kValue}) units.push_back({l, side});
  return units;
}

// The base with unit u at ladder[rung[u]]. Each side's k= / v= is its most common rung (the
// lower on a tie), so the per-layer entries list only the exceptions.
kv::KvConfig candidate(const TuneRequest& req, const std::vector<TuneUnit>& units,
                       const std::vector<int>& rung, bool sinks = false) {
  kv::KvConfig c = req.base;
  if (sinks) c.sinks = req.sinks;
  for (kv::TileRole side : {kv::TileRole::kKey, kv::TileRole::kValue}) {
    std::vector<int> count(req.ladder.size(), 0);
    for (size_t u = 0; u < units.size(); ++u)
      if (units[u].side == side) ++count[size_t(rung[u])];
    const kv::Format common =
        req.ladder[size_t(std::max_element(count.begin(), count.end()) - count.begin())];
    (side == kv::TileRole::kKey ? c.k_format : c.v_format) = common;
  }
  for (size_t u = 0; u < units.size(); ++u)
    c.layers.push_back({units[u].layer, units[u].side, req.ladder[size_t(rung[u])]});
  return c;
}

Setting make_setting(const TuneRequest& req, const kv::KvConfig& kv, std::string label) {
  Setting s{std::move(label), kv, req.matmul, req.damage_noise};
  s.damage_layer = req.damage_layer;
  return s;
}

// Splits the cases, per category in a seeded random order, into a calibration slice (a share of
// each category, rounded, but never so many that fewer than min_cases of it are left to decide)
// and the verdict slice.
void split_cases(const std::vector<Case>& cases, double share, const Thresholds& t,
                 std::vector<Case>& calibration, std::vector<std::string>& verdict_ids) {
  std::map<std::string, std::vector<size_t>> by_category;
  for (size_t i : shuffled_order(cases.size(), t.bootstrap.seed))
    by_category[cases[i].category].push_back(i);
  std::vector<bool> calibrate(cases.size(), false);
  for (const auto& [category, idx] : by_category) {
    const size_t keep = std::min(idx.size(), size_t(std::max(t.min_cases, 1)));
    const size_t n = std::min(size_t(share * double(idx.size()) + 0.5), idx.size() - keep);
    for (size_t k = 0; k < n; ++k) calibrate[idx[k]] = true;
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    if (calibrate[i]) calibration.push_back(cases[i]);
    else verdict_ids.push_back(cases[i].id);
  }
}

double mean_kl(const SettingResult& r, const std::vector<Case>& cases) {
  const std::vector<double> v =
      metric_values(r, cases, Metric::kKl, [](const Case&) { return true; });
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

// Mean KL of each setting on the cases, in runs of at most kCalibrationLanes (no timed segments);
// false when the budget (seconds left, 0: none) ended it.
bool measure_kl(const model::Model& model, const TuneRequest& req, const Validation& v,
                const std::vector<Case>& cases, const std::vector<Setting>& settings,
                double budget_seconds, std::vector<double>& kl) {
  RunOptions ro;
  ro.n_threads = run_threads(model, req.validation.n_threads);
  ro.noise_threads = ro.n_threads;
  ro.max_len = v.report.max_len;
  ro.speed.repeats = 0;
  kl.assign(settings.size(), 0.0);
  const Clock::time_point t0 = Clock::now();
  for (size_t b = 0; b < settings.size(); b += kCalibrationLanes) {
    const std::vector<Setting> batch(
        settings.begin() + long(b),
        settings.begin() + long(std::min(settings.size(), b + kCalibrationLanes)));
    if (budget_seconds > 0) {
      ro.budget_seconds = budget_seconds - seconds_since(t0);
      if (ro.budget_seconds <= 0) return false;
    }
    const RunResult run = run_validation(model, cases, batch, ro);
    if (run.budget_ended) return false;
    for (size_t i = 0; i < batch.size(); ++i) kl[b + i] = mean_kl(run.settings[i], cases);
  }
  return true;
}

// choose_rotation: the bottom rung without and with rotation; `req.base.rotate` becomes the one of
// less KL (without on a tie: no work the numbers do not pay for). False when the budget ended it.
bool choose_rotation(const model::Model& model, TuneRequest& req, const Validation& v,
                     const std::vector<Case>& cases, Tuning& t, double budget_seconds) {
  std::vector<Setting> settings;
  for (bool rotate : {false, true}) {
    req.base.rotate = rotate;
    const kv::KvConfig kv = candidate(req, t.units, std::vector<int>(t.units.size(), 0));
    settings.push_back(make_setting(req, kv, setting_label(kv, req.matmul)));
  }
  std::vector<double> kl;
  if (!measure_kl(model, req, v, cases, settings, budget_seconds, kl)) return false;
  t.rotation_kl = {kl[0], kl[1]};
  req.base.rotate = kl[1] < kl[0];
  return true;
}

// unit_kl[u][r]: the KL of unit u alone at rung r, every other unit at the top rung (less the KL of
// every unit at the top rung, when that is not f32). Returns false when the budget ended it.
bool calibrate(const model::Model& model, const TuneRequest& req, const Validation& v,
               const std::vector<Case>& cases, Tuning& t,
               double budget_seconds) {  // budget left, 0: none
  const size_t top = req.ladder.size() - 1;
  std::vector<Setting> settings;
  std::vector<std::pair<size_t, size_t>> slot;  // [setting] (unit, rung)
  for (size_t u = 0; u < t.units.size(); ++u)
    for (size_t r = 0; r < top; ++r) {
      std::vector<int> rung(t.units.size(), int(top));
      rung[u] = int(r);
      const kv::KvConfig kv = candidate(req, t.units, rung);
      settings.push_back(make_setting(req, kv, setting_label(kv, req.matmul)));
      slot.push_back({u, r});
    }
  const std::vector<int> bottom(t.units.size(), 0);
  if (t.sinks_tried) {
    settings.push_back(make_setting(req, candidate(req, t.units, bottom), "bottom"));
    settings.push_back(make_setting(req, candidate(req, t.units, bottom, true), "bottom+sinks"));
  }
  const bool offset = req.ladder[top] != kv::Format::kF32;
  if (offset)
    settings.push_back(make_setting(
        req, candidate(req, t.units, std::vector<int>(t.units.size(), int(top))), "top"));
  std::vector<double> kl;
  if (!measure_kl(model, req, v, cases, settings, budget_seconds, kl)) return false;
  const double base = offset ? kl.back() : 0.0;
  t.unit_kl.assign(t.units.size(), std::vector<double>(req.ladder.size(), 0.0));
  for (size_t i = 0; i < slot.size(); ++i)
    t.unit_kl[slot[i].first][slot[i].second] = std::max(0.0, kl[i] - base);
  if (t.sinks_tried) {
    t.bottom_kl = std::max(0.0, kl[slot.size()] - base);
    t.bottom_sinks_kl = std::max(0.0, kl[slot.size() + 1] - base);
  }
  return true;
}

// The share of a unit's KL the sinks leave: every unit at the bottom with them over without.
double sinks_factor(const Tuning& t) {
  if (!t.sinks_tried || !(t.bottom_kl > 0)) return 1.0;
  return std::min(1.0, t.bottom_sinks_kl / t.bottom_kl);
}

TuneStep make_step(const model::Model& model, const TuneRequest& req, const Tuning& t,
                   const std::vector<int>& rung, bool sinks) {
  const kv::KvConfig c = candidate(req, t.units, rung, sinks);
  const kv::CacheShape shape = shape_of(model, t.max_len);
  const kv::CacheLayout layout = kv::plan_cache(c, shape);
  TuneStep s;
  s.kv = layout.setting;
  s.name = s.kv.name();
  s.bytes_per_token = layout.bytes_per_token();
  s.context_bytes = double(layout.bytes_in_use(t.max_len));
  for (size_t u = 0; u < t.units.size(); ++u) s.calibration_kl += t.unit_kl[u][size_t(rung[u])];
  if (sinks) s.calibration_kl *= sinks_factor(t);
  return s;
}

// Bytes per token of one unit (one side of one layer) at each rung.
std::vector<double> unit_bytes(const model::Model& model, const TuneRequest& req, const Tuning& t) {
  std::vector<double> bytes;
  for (kv::Format f : req.ladder) {
    kv::KvConfig c = req.base;
    c.k_format = c.v_format = f;
    bytes.push_back(kv::plan_cache(c, shape_of(model, t.max_len)).bytes_per_token() /
                    double(t.units.size()));
  }
  return bytes;
}

std::vector<TuneStep> build_path(const model::Model& model, const TuneRequest& req,
                                 const Tuning& t) {
  PathCosts costs;
  costs.unit_kl = t.unit_kl;
  costs.rung_bytes = unit_bytes(model, req, t);
  if (t.sinks_tried) {
    const model::ModelConfig& m = model.config();
    costs.sinks_factor = sinks_factor(t);
    costs.sinks_share = double(req.sinks) / double(t.max_len);
    costs.f32_unit_bytes = double(m.n_kv_heads) * m.head_dim * sizeof(float);
  }
  std::vector<int> rung(t.units.size(), 0);
  bool sinks = false;
  std::vector<TuneStep> path{make_step(model, req, t, rung, sinks)};
  for (int move : path_moves(costs)) {
    if (move == kAddSinks) sinks = true;
    else ++rung[size_t(move)];
    path.push_back(make_step(model, req, t, rung, sinks));
    path.back().raised = move;
  }
  return path;
}

std::string step_line(const Tuning& t, const TuneStep& s, const std::string& what) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "tune: %s, %.1f bytes/token, %.1f KiB at %d positions: %s (%.1f s)", what.c_str(),
                s.bytes_per_token, s.context_bytes / 1024, t.max_len,
                verdict_name(s.verdict->verdict), s.seconds);
  return buf;
}

// The rungs of path step k and whether it holds the sinks, replayed from the moves before it.
std::pair<std::vector<int>, bool> point_of(const Tuning& t, size_t k) {
  std::vector<int> rung(t.units.size(), 0);
  bool sinks = false;
  for (size_t i = 1; i <= k; ++i) {
    if (t.path[i].raised == kAddSinks) sinks = true;
    else ++rung[size_t(t.path[i].raised)];
  }
  return {rung, sinks};
}

// The first PASS at path step k with the sinks toggled (Tuning::sinks_check), or nothing: when the
// step added the sinks itself (the step before is the same without them, and it did not pass),
// or when the step before with the sinks takes no fewer bytes.
std::optional<TuneStep> sinks_toggled(const model::Model& model, const TuneRequest& req,
                                      const Tuning& t, size_t k) {
  if (!t.sinks_tried || k == 0 || t.path[k].raised == kAddSinks) return std::nullopt;
  const auto [rung, sinks] = point_of(t, k);
  if (sinks) return make_step(model, req, t, rung, false);
  TuneStep before = make_step(model, req, t, point_of(t, k - 1).first, true);
  if (before.context_bytes >= t.path[k].context_bytes) return std::nullopt;
  return before;
}

// Checks `step` with validate's statistics on the verdict slice only (within `budget_left`
// seconds, 0: no budget), filling its verdict and time; returns the run, whose record names it.
std::unique_ptr<Validation> check_step(const model::Model& model, const TuneRequest& req,
                                       const Validation& v, const Tuning& t, double budget_left,
                                       TuneStep& step) {
  auto c = std::make_unique<Validation>();
  c->thresholds = v.thresholds;
  c->case_set = v.case_set;
  c->report.max_len = v.report.max_len;
  c->report.context_source = v.report.context_source;
  c->report.model_sha256 = v.report.model_sha256;
  c->report.isa = v.report.isa;
  c->settings = {make_setting(req, step.kv, setting_label(step.kv, req.matmul))};
  ValidationRequest vr = req.validation;
  vr.settings = c->settings;
  vr.case_ids = t.verdict_ids;
  vr.budget_minutes = budget_left / 60.0;
  const Clock::time_point t1 = Clock::now();
  run(model, vr, *c);
  step.seconds = seconds_since(t1);
  step.verdict = c->report.verdicts[0];
  return c;
}

}  // namespace

std::vector<int> path_moves(const PathCosts& c) {
  const size_t n_units = c.unit_kl.size(), top = c.rung_bytes.size() - 1;
  const auto gain = [&](size_t u, size_t r) {
    return (c.unit_kl[u][r] - c.unit_kl[u][r + 1]) /
           std::max(c.rung_bytes[r + 1] - c.rung_bytes[r], 1e-9);
  };
  std::vector<size_t> rung(n_units, 0);
  bool sinks = c.sinks_factor >= 1;  // nothing to add when they remove nothing
  std::vector<int> moves;
  for (;;) {
    int worst = -1;
    for (size_t u = 0; u < n_units; ++u)
      if (rung[u] < top &&
          (worst < 0 || gain(u, rung[u]) > gain(size_t(worst), rung[size_t(worst)])))
        worst = int(u);
    double sinks_gain = 0;
    if (!sinks) {
      double kl = 0,
             bytes =
                 0;  // of the units as they are; the sinks replace their packed rows by FP32 ones
      for (size_t u = 0; u < n_units; ++u) {
        kl += c.unit_kl[u][rung[u]];
        bytes += c.sinks_share * (c.f32_unit_bytes - c.rung_bytes[rung[u]]);
      }
      sinks_gain = (1 - c.sinks_factor) * kl / std::max(bytes, 1e-9);
    }
    if (sinks_gain > 0 && (worst < 0 || sinks_gain > gain(size_t(worst), rung[size_t(worst)]))) {
      sinks = true;
      moves.push_back(kAddSinks);
    } else if (worst >= 0) {
      ++rung[size_t(worst)];
      moves.push_back(worst);
    } else {
      return moves;
    }
  }
}

std::vector<kv::Format> parse_ladder(const std::string& text) {
  std::vector<kv::Format> ladder;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    ladder.push_back(kv::parse_format(std::string_view(text).substr(at, end - at)));
    if (ladder.size() > 1 &&
        kv::format_traits(ladder.back()).bits <= kv::format_traits(ladder[ladder.size() - 2]).bits)
      throw Error("format ladder '" + text +
                      "': each format must take more bits per value than the one before it "
                      "(most aggressive first, e.g. q2,q4,q8,f32)",
                  ErrorKind::kUsage);
    at = end + 1;
  }
  if (ladder.size() < 2)
    throw Error("format ladder '" + text + "' needs at least two formats (e.g. q4,q8,f32)",
                ErrorKind::kUsage);
  return ladder;
}

void load_tune_inputs(const model::Model& model, TuneRequest& req, Validation& v,
                      std::vector<std::string>& skipped) {
  if (req.ladder.size() < 2)
    throw Error("the format ladder needs at least two formats", ErrorKind::kUsage);
  const kv::KvConfig& b = req.base;
  if (b.k_format != kv::Format::kF32 || b.v_format != kv::Format::kF32 || !b.layers.empty())
    throw Error(
        "kvrt tune chooses the KV formats itself (--formats); the base setting may give only g, "
        "axis, r, "
        "rot and sinks, not " +
            b.name(),
        ErrorKind::kUsage);
  if (req.sinks < 0) throw Error("the sinks tune may add must not be negative", ErrorKind::kUsage);
  if (!(req.calibration_share > 0 && req.calibration_share < 1))
    throw Error("the calibration share must be above 0 and below 1", ErrorKind::kUsage);
  check_setting_name(req.name);
  if (req.damage_noise > 0 && (req.damage_layer < 0 || req.damage_layer >= model.config().n_layers))
    throw Error("the damaged layer must be one of the model's " +
                    std::to_string(model.config().n_layers) + " layers",
                ErrorKind::kUsage);
  ValidationRequest vr = req.validation;
  vr.settings.clear();
  for (kv::Format f :
       req.ladder) {  // every rung, uniform: the lanes a run holds at once are bounded by these
    kv::KvConfig c = req.base;
    c.k_format = c.v_format = f;
    vr.settings.push_back({setting_label(c, req.matmul), c, req.matmul});
  }
  vr.settings.resize(kCalibrationLanes, vr.settings.back());
  load_inputs(model, vr, v);
  std::vector<kv::Format> kept;
  for (kv::Format f : req.ladder) {
    kv::KvConfig c = req.base;
    c.k_format = c.v_format = f;
    try {
      kv::plan_cache(c, shape_of(model, v.report.max_len));
      kept.push_back(f);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUsage) throw;
      skipped.push_back(std::string(kv::format_name(f)) + ": " + e.what());
    }
  }
  if (kept.size() < 2) {
    std::string why;
    for (const std::string& s : skipped) why += "; " + s;
    throw Error("fewer than two formats of the ladder fit this model" + why, ErrorKind::kUsage);
  }
  req.ladder = kept;
  ops::require_matmul_precision(req.matmul);
}

Tuning tune(const model::Model& model, const TuneRequest& request, const Validation& v) {
  TuneRequest req = request;  // choose_rotation settles req.base.rotate
  const Clock::time_point t0 = Clock::now();
  const double budget = req.validation.budget_minutes * 60.0;
  const auto log = [&](const std::string& s) {
    if (req.log) req.log(s);
  };
  Tuning t;
  t.max_len = v.report.max_len;
  t.units = units_of(model);
  t.sinks_tried = req.sinks > 0 && req.base.sinks == 0 && req.sinks < t.max_len;
  Validation built;  // the case set built for the model, to split
  built.case_set = v.case_set;
  built.report.max_len = v.report.max_len;
  std::vector<Case> calibration;
  split_cases(build_model_cases(model, built), req.calibration_share, v.thresholds, calibration,
              t.verdict_ids);
  for (const Case& c : calibration) t.calibration_ids.push_back(c.id);
  if (calibration.empty() || t.verdict_ids.empty())
    throw Error("the acceptance set at a context of " + std::to_string(t.max_len) +
                " positions has no category with more than min_cases cases to split into "
                "calibration and verdict slices");

  const auto budget_left = [&] {
    return budget > 0 ? std::max(1e-9, budget - seconds_since(t0)) : 0.0;
  };
  if (req.choose_rotation) {
    log("tune: every unit at " + std::string(kv::format_name(req.ladder.front())) +
        " without and with rotation on " + std::to_string(calibration.size()) + " cases");
    if (!choose_rotation(model, req, v, calibration, t, budget_left())) {
      t.budget_ended = true;
      t.calibration_seconds = t.seconds = seconds_since(t0);
      return t;
    }
  }
  log("tune: calibrating " + std::to_string(t.units.size()) + " units on " +
      std::to_string(calibration.size()) + " cases (" + std::to_string(t.verdict_ids.size()) +
      " others decide)");
  if (!calibrate(model, req, v, calibration, t, budget_left())) {
    t.budget_ended = true;
    t.calibration_seconds = t.seconds = seconds_since(t0);
    return t;
  }
  t.calibration_seconds = seconds_since(t0);
  t.path = build_path(model, req, t);

  // Bisection for the first PASS; a top rung of f32 needs no check (the FP32 cache is never gated).
  size_t lo = 0, hi = t.path.size() - (req.ladder.back() == kv::Format::kF32 ? 1 : 0);
  std::unique_ptr<Validation> found;
  const auto left = [&] { return budget > 0 ? budget - seconds_since(t0) : 0.0; };
  while (lo < hi) {
    if (budget > 0 && left() <= 0) {
      t.budget_ended = true;
      break;
    }
    const size_t mid = (lo + hi) / 2;
    std::unique_ptr<Validation> c = check_step(model, req, v, t, left(), t.path[mid]);
    log(step_line(t, t.path[mid],
                  "step " + std::to_string(mid) + " of " + std::to_string(t.path.size() - 1)));
    if (t.path[mid].verdict->verdict == Verdict::kPass) {
      t.found = int(mid);
      found = std::move(c);
      hi = mid;
    } else if (c->run.budget_ended && t.path[mid].verdict->verdict == Verdict::kInconclusive) {
      t.budget_ended = true;
      break;
    } else {
      lo = mid + 1;
    }
  }
  if (found && !t.budget_ended && (budget <= 0 || left() > 0)) {
    t.sinks_check = sinks_toggled(model, req, t, size_t(t.found));
    if (t.sinks_check) {
      std::unique_ptr<Validation> c = check_step(model, req, v, t, left(), *t.sinks_check);
      log(step_line(t, *t.sinks_check, "sinks check"));
      if (t.sinks_check->verdict->verdict == Verdict::kPass) {
        t.sinks_check_found = true;
        found = std::move(c);
      }
    }
  }
  if (found) {
    t.record = found->record;
    t.record.settings[0].tune_name = req.name;
  }
  t.seconds = seconds_since(t0);
  return t;
}

}  // namespace kvrt::validate
