// What is compared between the FP32-cache baseline and a candidate setting, per token and
// per case. Every metric is oriented so that lower is better (0, or 1 for ppl_ratio, is "same as
// baseline"); thresholds are upper limits on the mean over cases.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kvrt::validate {

enum class Metric : uint8_t {
  kKl,              // mean KL(baseline || candidate) of next-token distributions, nats/token
  kTop1Mismatch,    // fraction of positions whose argmax differs
  kRefProbDelta,    // mean |p_baseline(ref) - p_candidate(ref)| of the reference next token
  kPplRatio,        // exp(mean NLL candidate - mean NLL baseline) over the reference tokens
  kGreedyMismatch,  // 1 - (greedy tokens matching the baseline before the first divergence) /
                    // generated
  kRecallLoss,    // recall cases the baseline answers: 1 if the candidate's continuation loses the
                  // answer
  kSpreadGrowth,  // sampling cases: spread across seeds of the candidate minus that of the baseline
  kTaskLoss,  // task cases the baseline passes: 1 if the candidate's continuation fails the check
};

constexpr int kNumMetrics = 8;
constexpr std::array<Metric, kNumMetrics> kAllMetrics = {
    Metric::kKl,           Metric::kTop1Mismatch,   Metric::kRefProbDelta,
    Metric::kPplRatio,     Metric::kGreedyMismatch, Metric::kRecallLoss,
    Metric::kSpreadGrowth, Metric::kTaskLoss};

// Paired pass/fail metrics (recall_loss, task_loss): judged on the 2x2 table of baseline and
// candidate outcomes (validate/binary_stats.h), not on a bootstrap of per-case values.
constexpr bool metric_is_paired(Metric m) {
  return m == Metric::kRecallLoss || m == Metric::kTaskLoss;
}

const char* metric_name(Metric m);  // TOML and JSON key, e.g. "kl"
const char* metric_unit(Metric m);  // short description for tables
std::optional<Metric> parse_metric(std::string_view name);

// Sums over the scored positions of one case for one setting.
struct TokenSums {
  int64_t n_positions = 0;  // positions with both distributions
  int64_t n_ref = 0;        // positions whose reference next token is known
  double kl = 0;
  double top1_mismatch = 0;
  double ref_prob_delta = 0;
  double nll_baseline = 0;
  double nll_candidate = 0;
};

// The baseline's side of one position, computed once and shared by every candidate.
struct Reference {
  const float* logits = nullptr;  // [n_vocab]
  double log_norm = 0;            // log sum exp(logits)
  int argmax = 0;
};
Reference reference_of(const float* base, int n_vocab);

// Scores one position. cand: [n_vocab] logits; ref = reference next token or -1.
// Returns the KL of this position (for the by-position plots).
double score_position(const Reference& base, const float* cand, int n_vocab, int32_t ref,
                      TokenSums& sums);

// Per-case value of a teacher-forced metric; nullopt when the case scored no position for it.
std::optional<double> token_metric_value(Metric m, const TokenSums& s);

// Spread of a set of sampled continuations: mean over pairs of the fraction of positions that
// differ.
double spread(const std::vector<std::vector<int32_t>>& outputs);

}  // namespace kvrt::validate
