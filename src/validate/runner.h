// Replays the acceptance set on the FP32-cache baseline and on every candidate setting, in
// lockstep: each case feeds the same tokens to every session, chunk by chunk, so the baseline
// logits are compared while they are fresh (memory stays O(n_batch x n_vocab) per session,
// whatever the case length) and every comparison is paired on identical histories.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_config.h"
#include "model/model.h"
#include "model/session.h"
#include "ops/matmul.h"
#include "validate/case_set.h"
#include "validate/metrics.h"
#include "validate/speed.h"

namespace kvrt::validate {

struct Setting {
  std::string label;  // short name for tables, e.g. "q4/q4 rot"
  kv::KvConfig kv;
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kF32;  // of the prefill products
  float scale_noise =
      0;  // > 0: the negative control, stored scales damaged (validate/negative_control.h)
  int damage_layer =
      -1;  // >= 0 with scale_noise: only this layer's scales (kvrt tune's known-answer test)
};

struct SettingResult;

// Where a run stands, after each case.
struct Progress {
  int done = 0, total = 0;  // cases run, of those planned
  int n_running = 0;        // settings (the noise floor included) still running
  double seconds = 0;       // since the start
  double eta_seconds = 0;   // the rest at the rate so far: positions and generated tokens per lane
};

struct RunOptions {
  int n_threads = 0;      // baseline and candidates; 0 = all cores
  int n_batch = 256;      // prefill chunk
  int noise_threads = 0;  // the noise-floor lane: FP32 with this thread count ...
  // ... and another prefill chunk (so other GEMM shapes, chunk boundaries and summation order). Not
  // a small one: every call widens all of W, so small chunks make the lane's prefill many times
  // slower.
  int noise_batch = 100;
  int kl_bins = 32;  // bins of the KL-by-position curve over [0, max_len)
  int max_len = 512;
  std::vector<size_t> order;  // case indices in the order they run; empty: as listed
  // Sequential stopping: after looks[k] cases (in run order) `decided` is asked about every setting
  // still running, the noise floor included; true stops its lane (SettingResult::look = k).
  std::vector<int> looks;
  std::function<bool(const SettingResult&, int look)> decided;
  double budget_seconds = 0;  // > 0: no case starts that the rate so far says would end after it
  SpeedOptions
      speed;  // after the cases: the baseline and every setting timed at max_len (validate/speed.h)
  std::function<void(const Progress&)> progress;  // called after each case
};

// A continuation of one case beside the baseline's, as the text each token adds.
struct Continuation {
  std::vector<std::string> baseline, candidate;  // [tokens]
  int first_divergence = -1;                     // index of the first token that differs; -1: none
  // true (recall, task): the candidate continued on its own from the prompt. false (greedy,
  // multi-turn): lanes run in lockstep on the baseline's tokens, so candidate[i] is the candidate's
  // own next token after the baseline's first i.
  bool own = false;
};

// One case scored for one setting.
struct CaseScore {
  TokenSums tokens;
  std::vector<float>
      kl_by_pos;              // [positions scored] KL at each scored position of the case, in order
  Continuation continuation;  // greedy, multi-turn, recall and task cases
  int n_generated = 0,
      n_matched = 0;  // greedy tokens, and those equal to the baseline's before divergence
  std::optional<bool> recall_baseline, recall_candidate;
  std::optional<bool> task_baseline, task_candidate;  // task cases: the check passed
  std::optional<double> spread_baseline, spread_candidate;

  std::optional<double> value(Metric m) const;  // per-case metric value, nullopt if not measured
  // Pass/fail metrics: (baseline right, candidate right), nullopt if the case has no such outcome.
  std::optional<std::pair<bool, bool>> outcomes(Metric m) const;
};

// The KV memory of one kind of layers (the full ones, or those of one sliding window) resident
// at the validated context: a sliding-window layer holds its ring, not every position.
struct KvKindBytes {
  int sliding_window = 0;  // 0: the layers that keep every position
  int n_layers = 0;
  double bytes_per_token = 0;  // packed bytes of one position, these layers, K and V
  int kept = 0;      // most positions one of them keeps (its ring; a full layer's whole context)
  double bytes = 0;  // at the validated context, FP32 windows and sinks included
};

// A session's KV memory: bytes/token, and what is resident with the cache filled to a context.
struct KvBytes {
  double bytes_per_token = 0;  // KV bytes per token over all layers, while no ring is full
  double at_context = 0;  // resident at the validated context (RunOptions::max_len), all layers
  double at_full_context = 0;      // resident at the model's full context
  std::vector<KvKindBytes> kinds;  // at_context by layer kind, the full layers first
};

struct SettingResult {
  Setting setting;
  std::string name;               // canonical KvConfig::name() as resolved by the cache
  KvBytes kv;                     // its cache's memory (sinks, FP32 windows and rings included)
  Speed speed;                    // at the validated context (RunOptions::max_len)
  std::vector<CaseScore> cases;   // parallel to the case list; those not run stay empty
  int n_run = 0;                  // cases run, in run order (RunOptions::order)
  int look = -1;                  // the interim look that stopped it; -1: it ran to the end
  std::vector<double> kl_by_pos;  // [kl_bins] mean KL per position bin
  std::vector<int64_t> kl_by_pos_count;  // [kl_bins]
};

struct RunResult {
  SettingResult noise_floor;            // FP32 vs FP32 with other threads and chunking
  std::vector<SettingResult> settings;  // in the order asked for
  KvBytes baseline_kv;
  Speed baseline_speed;
  int kl_bin_width = 1;       // positions per bin
  int n_run = 0;              // cases the baseline ran: fewer than planned when all were
                              // decided early or the budget ended the run
  bool budget_ended = false;  // the budget left cases unrun
  double seconds = 0;
};

// The memory of `session`'s cache with n_tokens positions stored, per layer kind too (its own
// layout: a sliding-window layer holds its ring, not every position), and of the same setting and
// shape (sliding windows, write chunk) at the model's full context.
KvBytes kv_bytes(const model::Session& session, int n_tokens);

RunResult run_validation(const model::Model& model, const std::vector<Case>& cases,
                         const std::vector<Setting>& settings, const RunOptions& options);

}  // namespace kvrt::validate
