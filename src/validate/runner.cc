#include "validate/runner.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/error.h"
#include "model/sampler.h"
#include "model/session.h"
#include "validate/negative_control.h"

namespace kvrt::validate {
namespace {

// One session and where its scores go. Lane 0 is the baseline.
struct Lane {
  std::unique_ptr<model::Session> session;
  std::vector<float> logits;  // [n_batch][n_vocab]
  SettingResult* out = nullptr;
  CaseScore* score = nullptr;  // the current case
  bool matching = true;        // greedy tokens still equal to the baseline's
};

class CaseRunner {
 public:
  CaseRunner(std::vector<Lane>& lanes, const model::Model& model, const RunOptions& o, int bin_width)
      : lanes_(lanes), tok_(model.tokenizer()), n_vocab_(model.config().n_vocab), o_(o), bin_width_(bin_width) {}

  void run(const Case& c);

 private:
  model::Session& base() { return *lanes_[0].session; }
  void score_pending(int32_t ref);
  void feed(const std::vector<int32_t>& tokens);
  void feed_chunk(const int32_t* tokens, int n);
  void follow_greedy(int n);
  void free_greedy(const Case& c);
  void sample(const Case& c);
  void score(Lane& lane, const float* base, const float* cand, int pos, int32_t ref);
  std::vector<int32_t> generate(model::Session& s, const std::vector<int32_t>& prompt, int n,
                                model::Sampler& sampler);

  std::vector<Lane>& lanes_;
  const model::Tokenizer& tok_;
  const int n_vocab_;
  const RunOptions& o_;
  const int bin_width_;
};

void CaseRunner::score(Lane& lane, const float* base, const float* cand, int pos, int32_t ref) {
  const double kl = score_position(base, cand, n_vocab_, ref, lane.score->tokens);
  const size_t bin = std::min(size_t(pos / bin_width_), lane.out->kl_by_pos.size() - 1);
  lane.out->kl_by_pos[bin] += kl;
  ++lane.out->kl_by_pos_count[bin];
}

// The last position of every session waits for its reference token, which is `ref` (-1 at the end).
void CaseRunner::score_pending(int32_t ref) {
  if (base().n_past() == 0) return;
  for (size_t l = 1; l < lanes_.size(); ++l)
    score(lanes_[l], base().last_logits(), lanes_[l].session->last_logits(), base().n_past() - 1, ref);
}

void CaseRunner::feed_chunk(const int32_t* tokens, int n) {
  score_pending(tokens[0]);
  const int pos0 = base().n_past();
  for (Lane& lane : lanes_) lane.session->eval(tokens, n, n > 1 ? lane.logits.data() : nullptr);
  const float* b = lanes_[0].logits.data();
  for (size_t l = 1; l < lanes_.size(); ++l)
    for (int i = 0; i + 1 < n; ++i)
      score(lanes_[l], b + size_t(i) * n_vocab_, lanes_[l].logits.data() + size_t(i) * n_vocab_, pos0 + i,
            tokens[i + 1]);
}

void CaseRunner::feed(const std::vector<int32_t>& tokens) {
  for (size_t done = 0; done < tokens.size(); done += size_t(o_.n_batch)) {
    const int n = int(std::min(tokens.size() - done, size_t(o_.n_batch)));
    feed_chunk(tokens.data() + done, n);
  }
}

// Greedy continuation of the baseline, fed to every session (so histories stay identical):
// a candidate matches until its own argmax first differs from the baseline's token.
void CaseRunner::follow_greedy(int n) {
  for (Lane& lane : lanes_) lane.matching = true;
  for (int j = 0; j < n; ++j) {
    const int32_t next = model::argmax(base().last_logits(), n_vocab_);
    for (size_t l = 1; l < lanes_.size(); ++l) {
      Lane& lane = lanes_[l];
      lane.matching = lane.matching && model::argmax(lane.session->last_logits(), n_vocab_) == next;
      lane.score->n_generated += 1;
      lane.score->n_matched += lane.matching ? 1 : 0;
    }
    feed_chunk(&next, 1);
  }
}

std::vector<int32_t> CaseRunner::generate(model::Session& s, const std::vector<int32_t>& prompt, int n,
                                          model::Sampler& sampler) {
  s.reset();
  s.eval(prompt.data(), int(prompt.size()));
  std::vector<int32_t> out;
  for (int j = 0; j < n; ++j) {
    out.push_back(sampler.sample(s.last_logits(), n_vocab_));
    if (j + 1 < n) s.eval(&out.back(), 1);
  }
  return out;
}

// Recall: every session continues greedily on its own from the prompt; the answer must appear.
void CaseRunner::free_greedy(const Case& c) {
  std::vector<int32_t> base_out;
  bool base_hit = false;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    model::Sampler greedy({}, n_vocab_);
    const std::vector<int32_t> out = generate(*lanes_[l].session, c.turns[0], c.n_generate, greedy);
    const bool hit = tok_.decode(out).find(c.expect) != std::string::npos;
    if (l == 0) {
      base_out = out;
      base_hit = hit;
      continue;
    }
    CaseScore& s = *lanes_[l].score;
    s.n_generated += int(out.size());
    const auto diverge = std::mismatch(out.begin(), out.end(), base_out.begin()).first;
    s.n_matched += int(diverge - out.begin());
    s.recall_baseline = base_hit;
    s.recall_candidate = hit;
  }
}

void CaseRunner::sample(const Case& c) {
  std::vector<std::vector<std::vector<int32_t>>> outs(lanes_.size());  // [lane][seed][token]
  for (size_t l = 0; l < lanes_.size(); ++l) {
    for (uint64_t seed : c.seeds) {
      model::Sampler sampler({float(c.temperature), 0, 1.0f, seed}, n_vocab_);
      outs[l].push_back(generate(*lanes_[l].session, c.turns[0], c.n_generate, sampler));
    }
  }
  const double base_spread = spread(outs[0]);
  for (size_t l = 1; l < lanes_.size(); ++l) {
    lanes_[l].score->spread_baseline = base_spread;
    lanes_[l].score->spread_candidate = spread(outs[l]);
  }
}

void CaseRunner::run(const Case& c) {
  for (Lane& lane : lanes_) lane.session->reset();
  for (size_t t = 0; t < c.turns.size(); ++t) {
    feed(c.turns[t]);
    if (c.mode == Mode::kGreedy || c.mode == Mode::kMultiTurn) follow_greedy(c.n_generate);
  }
  if (!c.answer.empty()) feed(c.answer);
  score_pending(-1);
  if (c.mode == Mode::kRecall) free_greedy(c);
  if (c.mode == Mode::kSampling) sample(c);
}

SettingResult make_result(const Setting& s, const model::Session& session, size_t n_cases, int bins) {
  SettingResult r;
  r.setting = s;
  const kv::KvConfig& kv = session.kv_cache().config();
  r.name = s.scale_noise > 0 ? damaged_name(kv, s.scale_noise) : kv.name();
  r.bytes_per_token = session.kv_cache().bytes_per_token();
  r.cases.resize(n_cases);
  r.kl_by_pos.assign(size_t(bins), 0.0);
  r.kl_by_pos_count.assign(size_t(bins), 0);
  return r;
}

Lane make_lane(const model::Model& m, const Setting& s, int n_ctx, int threads, int batch) {
  model::SessionOptions so;
  so.n_ctx = n_ctx;
  so.n_threads = threads;
  so.n_batch = batch;
  so.kv = s.kv;
  so.matmul = s.matmul;
  if (s.scale_noise > 0) so.after_cache_write = scale_damage(s.scale_noise);
  Lane lane;
  lane.session = std::make_unique<model::Session>(m, so);
  return lane;
}

}  // namespace

std::optional<double> CaseScore::value(Metric m) const {
  switch (m) {
    case Metric::kGreedyMismatch:
      if (n_generated == 0) return std::nullopt;
      return 1.0 - double(n_matched) / double(n_generated);
    case Metric::kRecallLoss:  // the share of the baseline's answers lost: only where it had one
      if (!recall_baseline || !*recall_baseline) return std::nullopt;
      return *recall_candidate ? 0.0 : 1.0;
    case Metric::kSpreadGrowth:
      if (!spread_baseline) return std::nullopt;
      return *spread_candidate - *spread_baseline;
    default:
      return token_metric_value(m, tokens);
  }
}

std::optional<std::pair<bool, bool>> CaseScore::outcomes(Metric m) const {
  if (m == Metric::kRecallLoss && recall_baseline) return std::make_pair(*recall_baseline, *recall_candidate);
  return std::nullopt;
}

RunResult run_validation(const model::Model& model, const std::vector<Case>& cases,
                         const std::vector<Setting>& settings, const RunOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  int n_ctx = 1;
  for (const Case& c : cases) n_ctx = std::max(n_ctx, c.n_positions());
  RunResult r;
  r.kl_bin_width = std::max(1, (o.max_len + o.kl_bins - 1) / o.kl_bins);
  std::vector<Lane> lanes;
  lanes.push_back(make_lane(model, Setting{}, n_ctx, o.n_threads, o.n_batch));
  lanes.push_back(make_lane(model, Setting{}, n_ctx, o.noise_threads, o.noise_batch));
  r.noise_floor = make_result({"noise floor", {}}, *lanes[1].session, cases.size(), o.kl_bins);
  r.settings.reserve(settings.size());
  for (const Setting& s : settings) {
    lanes.push_back(make_lane(model, s, n_ctx, o.n_threads, o.n_batch));
    r.settings.push_back(make_result(s, *lanes.back().session, cases.size(), o.kl_bins));
  }
  r.baseline_bytes_per_token = lanes[0].session->kv_cache().bytes_per_token();
  lanes[1].out = &r.noise_floor;
  for (size_t i = 0; i < settings.size(); ++i) lanes[i + 2].out = &r.settings[i];
  const size_t rows = size_t(o.n_batch) * size_t(model.config().n_vocab);
  for (Lane& lane : lanes) lane.logits.resize(rows);

  CaseRunner runner(lanes, model, o, r.kl_bin_width);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (size_t l = 1; l < lanes.size(); ++l) lanes[l].score = &lanes[l].out->cases[i];
    runner.run(cases[i]);
    if (o.progress) o.progress(int(i + 1), int(cases.size()));
  }
  for (SettingResult* s : [&] {
         std::vector<SettingResult*> all{&r.noise_floor};
         for (auto& x : r.settings) all.push_back(&x);
         return all;
       }())
    for (size_t b = 0; b < s->kl_by_pos.size(); ++b)
      if (s->kl_by_pos_count[b]) s->kl_by_pos[b] /= double(s->kl_by_pos_count[b]);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kvrt::validate
