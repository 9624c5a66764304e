#include "validate/metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"

namespace kvrt::validate {
namespace {

struct MetricInfo {
  Metric metric;
  const char* name;
  const char* unit;
};

constexpr MetricInfo kInfo[kNumMetrics] = {
    {Metric::kKl, "kl", "KL nats/token"},
    {Metric::kTop1Mismatch, "top1_mismatch", "argmax differs, fraction"},
    {Metric::kRefProbDelta, "ref_prob_delta", "|dp| of reference token"},
    {Metric::kPplRatio, "ppl_ratio", "perplexity ratio"},
    {Metric::kGreedyMismatch, "greedy_mismatch", "greedy tokens lost, fraction"},
    {Metric::kRecallLoss, "recall_loss", "answers lost, fraction"},
    {Metric::kSpreadGrowth, "spread_growth", "sampling spread growth"},
    {Metric::kTaskLoss, "task_loss", "task passes lost, fraction"},
};

// log-softmax normalizer: max + log(sum(exp(x - max))), in double.
double log_sum_exp(const float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  return double(mx) + std::log(s);
}

int argmax_of(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace

const char* metric_name(Metric m) { return kInfo[int(m)].name; }
const char* metric_unit(Metric m) { return kInfo[int(m)].unit; }

std::optional<Metric> parse_metric(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.metric;
  return std::nullopt;
}

Reference reference_of(const float* base, int n_vocab) {
  Reference r;
  r.logits = base;
  r.log_norm = log_sum_exp(base, n_vocab);
  r.argmax = argmax_of(base, n_vocab);
  return r;
}

double score_position(const Reference& b, const float* cand, int n_vocab, int32_t ref,
                      TokenSums& sums) {
  const float* base = b.logits;
  const double lse_b = b.log_norm;
  const double lse_c = log_sum_exp(cand, n_vocab);
  double kl = 0;
  for (int i = 0; i < n_vocab; ++i) {
    const double lpb = double(base[i]) - lse_b;
    const double lpc = double(cand[i]) - lse_c;
    kl += std::exp(lpb) * (lpb - lpc);
  }
  kl = std::max(kl, 0.0);  // rounding can make identical distributions give -1e-17
  sums.kl += kl;
  sums.top1_mismatch += b.argmax != argmax_of(cand, n_vocab) ? 1.0 : 0.0;
  ++sums.n_positions;
  if (ref >= 0) {
    KVRT_ASSERT(ref < n_vocab);
    const double lpb = double(base[ref]) - lse_b;
    const double lpc = double(cand[ref]) - lse_c;
    sums.ref_prob_delta += std::abs(std::exp(lpb) - std::exp(lpc));
    sums.nll_baseline -= lpb;
    sums.nll_candidate -= lpc;
    ++sums.n_ref;
  }
  return kl;
}

std::optional<double> token_metric_value(Metric m, const TokenSums& s) {
  switch (m) {
    case Metric::kKl:
      if (s.n_positions == 0) return std::nullopt;
      return s.kl / double(s.n_positions);
    case Metric::kTop1Mismatch:
      if (s.n_positions == 0) return std::nullopt;
      return s.top1_mismatch / double(s.n_positions);
    case Metric::kRefProbDelta:
      if (s.n_ref == 0) return std::nullopt;
      return s.ref_prob_delta / double(s.n_ref);
    case Metric::kPplRatio:
      if (s.n_ref == 0) return std::nullopt;
      return std::exp((s.nll_candidate - s.nll_baseline) / double(s.n_ref));
    default: return std::nullopt;
  }
}

double spread(const std::vector<std::vector<int32_t>>& outputs) {
  double total = 0;
  int pairs = 0;
  for (size_t a = 0; a < outputs.size(); ++a) {
    for (size_t b = a + 1; b < outputs.size(); ++b) {
      const size_t n = std::max(outputs[a].size(), outputs[b].size());
      if (n == 0) continue;
      size_t differ = n - std::min(outputs[a].size(), outputs[b].size());
      for (size_t i = 0; i < std::min(outputs[a].size(), outputs[b].size()); ++i)
        differ += outputs[a][i] != outputs[b][i];
      total += double(differ) / double(n);
      ++pairs;
    }
  }
  return pairs ? total / pairs : 0.0;
}

}  // namespace kvrt::validate
