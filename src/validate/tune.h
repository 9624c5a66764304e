// kvrt tune: the smallest-memory per-layer KV setting that PASSes the gate at the deployment
// context.
//
// The acceptance set is split, per category, into a calibration slice and a verdict slice
// (disjoint, seeded). On the calibration slice each unit (one side, K or V, of one layer) is
// measured alone: its KL against the FP32 baseline when it alone is stored in each rung of the
// format ladder and every other unit in the top rung. The path starts with every unit in the most
// aggressive rung and falls back, one step at a time, the worst unit one rung up: the one whose
// next rung takes the most measured KL away per byte it adds (a unit's KL alone is taken as its
// share of the total). It ends with every unit in the top rung; memory only grows along it. One
// step may instead add `sinks` FP32 positions to every layer (attention sinks): on the calibration
// slice every unit at the bottom rung is measured without and with them, their ratio taken as what
// the sinks leave of any unit's KL, and that step competes with the units' on the same KL removed
// per byte (its bytes are the FP32 rows of the sinks less the packed rows they replace, spread over
// the context). The steps are checked with the full statistics of `kvrt validate` (validation.h) on
// the verdict slice only, by bisection (PASS is taken to be monotone along the path), and the first
// step that PASSes is the result: the search never sees the cases that decide its verdict. Then the
// found step with the sinks toggled is checked too (Tuning::sinks_check), so they stay only where
// they are the cheaper fix.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_config.h"
#include "model/model.h"
#include "validate/validation.h"

namespace kvrt::validate {

struct TuneRequest {
  ValidationRequest validation;  // model, thresholds, cases, context (-c), seed, threads, budget;
                                 // its settings are ignored
  kv::KvConfig base;  // group, key axis, residual, rotation and sinks of every candidate;
                      // its formats must be f32 with no per-layer entries
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;
  std::vector<kv::Format> ladder = {kv::Format::kQ2, kv::Format::kQ4, kv::Format::kQ8,
                                    kv::Format::kF32};
  // rungs, most aggressive first, each more bytes per value than the last
  double calibration_share = 0.25;  // of each category's cases, leaving min_cases of it to decide
  int sinks = 4;                 // FP32 positions one step of the path may add (0, or a base with
                                 // sinks: no such step)
  bool choose_rotation = false;  // the base gives no rot: every unit at the bottom rung is measured
                                 // without and with rotation first, and the search keeps the one of
                                 // less KL (Tuning::rotation_kl)
  std::string name = "tuned";    // what the record calls the result (is_setting_name)
  std::function<void(const std::string&)> log;  // one line per phase and checked step
  // Tests: > 0 damages the stored scales of layer damage_layer in every candidate by this relative
  // amount (validate/negative_control.h), so the answer is known: that layer's sides go first.
  float damage_noise = 0;
  int damage_layer = -1;
};

struct TuneUnit {
  int layer = 0;
  kv::TileRole side = kv::TileRole::kKey;
};

struct TuneStep {
  kv::KvConfig kv;             // resolved for the model
  std::string name;            // canonical KvConfig::name()
  double bytes_per_token = 0;  // all layers, K and V
  double context_bytes =
      0;  // the whole cache at the deployment context: sinks and FP32 windows included
  double calibration_kl = 0;  // sum of the units' KL alone at their rungs, times the sinks' factor
                              // once added (a prediction)
  int raised = -1;            // the unit this step raised (index into Tuning::units); -1 at step 0;
                              // kAddSinks at the step that added the sinks
  std::optional<SettingVerdict> verdict;  // checked steps only, on the verdict slice
  double seconds = 0;                     // of its check
};

struct Tuning {
  int max_len = 0;
  std::vector<std::string> skipped_formats;  // "q2: why" of the formats the model cannot store
  std::vector<std::string> calibration_ids, verdict_ids;  // disjoint
  std::vector<TuneUnit> units;
  std::vector<std::vector<double>> unit_kl;  // [unit][rung] mean KL over calibration cases, alone
  bool sinks_tried = false;                  // the bottom measured without and with req.sinks:
  double bottom_kl = 0,
         bottom_sinks_kl = 0;  // every unit at the bottom rung, without and with the sinks
  // choose_rotation: KL of every unit at the bottom rung without and with rotation (the base took
  // the less).
  std::optional<std::pair<double, double>> rotation_kl;
  std::vector<TuneStep> path;  // step 0: every unit at the bottom rung
  int found = -1;              // the first checked step that PASSed; -1: none
  // After that PASS, the sinks toggled: the step without them when it has them, or the step before
  // it with them when that takes fewer bytes at the context. Checked the same way; when it PASSes
  // it is the result (sinks_check_found).
  std::optional<TuneStep> sinks_check;
  bool sinks_check_found = false;
  Record record;              // the found setting, named (empty settings when none)
  bool budget_ended = false;  // the budget stopped the search before it was decided
  double calibration_seconds = 0, seconds = 0;

  const TuneStep& result() const {
    return sinks_check_found ? *sinks_check : path[size_t(found)];
  }  // found >= 0
};

constexpr int kAddSinks = -2;  // a move of the path that adds the sinks, not a unit

// What the path is built from: calibration numbers and bytes only.
struct PathCosts {
  std::vector<std::vector<double>> unit_kl;  // [unit][rung]: KL of the unit alone at that rung
  std::vector<double> rung_bytes;            // [rung]: bytes per position of one unit
  double sinks_factor = 1;    // the share of every unit's KL the sinks leave; 1: no sinks step
  double sinks_share = 0;     // sinks over the context's positions
  double f32_unit_bytes = 0;  // bytes per position of one unit in FP32 rows
};

// The path's moves from every unit at the bottom rung to every unit at the top: each raises one
// unit one rung (its index) or adds the sinks (kAddSinks), whichever removes the most predicted KL
// per byte it adds (a unit before the sinks on a tie, the first unit among units). The sinks are
// added at most once, and only while they remove some KL.
std::vector<int> path_moves(const PathCosts& c);

// Reads the ladder text "q2,q4,q8,f32": known formats, each with more bytes per value than the one
// before it. kvrt::Error(kUsage) otherwise.
std::vector<kv::Format> parse_ladder(const std::string& text);

// Checks the request (ladder, base, share, name) and reads its inputs as validate does
// (load_inputs), all before anything runs: bad input is a kvrt::Error here. Formats of the ladder
// this model cannot store with the base (q2 keys along a head_dim of 8, ...) leave it, each noted
// with why in `skipped`; fewer than two left is an error. prepare_record(v, ...) then checks the
// record path.
void load_tune_inputs(const model::Model& model, TuneRequest& req, Validation& v,
                      std::vector<std::string>& skipped);

// Calibrates, builds the path and checks it. `v` is what load_tune_inputs read.
Tuning tune(const model::Model& model, const TuneRequest& req, const Validation& v);

// The text report: the slices, the units' measured KL, the path with each step's setting, memory,
// verdict and KL interval, the result and the time.
std::string tune_report_text(const Tuning& t, const TuneRequest& req);

}  // namespace kvrt::validate
