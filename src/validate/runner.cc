#include "validate/runner.h"

#include <algorithm>
#include <memory>

#include "common/error.h"
#include "kv/cache_layout.h"
#include "model/lockstep.h"
#include "model/sampler.h"
#include "model/session.h"
#include "validate/negative_control.h"
#include "validate/pace.h"

namespace kvrt::validate {
namespace {

// One session and where its scores go. Lane 0 is the baseline.
struct Lane {
  std::unique_ptr<model::Session> session;
  std::unique_ptr<model::SessionState> prompt;  // the session after a case's prompt, to branch from
  std::vector<float> logits;                    // [n_batch][n_vocab]
  std::vector<TokenSums> row_sums;  // [n_batch] one chunk's scores, summed in order after
  std::vector<double> row_kl;       // [n_batch]
  SettingResult* out = nullptr;
  CaseScore* score = nullptr;  // the current case
  bool matching = true;        // greedy tokens still equal to the baseline's
};

// Runs one case on the lanes still running (lanes_[0] is the baseline). Every token generated
// one at a time is a lockstep step of all of them (model/lockstep.h): each lane's numbers are its
// own session's, and the weights are read once per step for all the lanes.
class CaseRunner {
 public:
  CaseRunner(std::vector<Lane*>& lanes, const model::Model& model, const RunOptions& o,
             int bin_width)
      : lanes_(lanes),
        tok_(model.tokenizer()),
        n_vocab_(model.config().n_vocab),
        o_(o),
        bin_width_(bin_width),
        refs_(size_t(o.n_batch)),
        lockstep_(model, int(lanes.size()), lanes[0]->session->pool()) {}

  void run(const Case& c);

 private:
  model::Session& base() { return *lanes_[0]->session; }
  void score_pending(int32_t ref);
  void feed(const std::vector<int32_t>& tokens);
  void feed_chunk(const int32_t* tokens, int n);
  void score_rows(int n, int pos0, const int32_t* next);
  void step(const int32_t* tokens);  // tokens[l] on lane l, for every lane
  void follow_greedy(int n);
  void free_greedy(const Case& c);
  void sample(const Case& c);
  std::vector<std::vector<int32_t>> generate(int n, std::vector<model::Sampler>& samplers);
  std::string piece(std::vector<int32_t>& before, int32_t next) const;
  std::vector<std::string> pieces(
      const std::vector<int32_t>& tokens) const;  // the text each token adds
  std::string text_after(const std::vector<int32_t>& prompt, const std::vector<int32_t>& out) const;

  std::vector<Lane*>& lanes_;
  const model::Tokenizer& tok_;
  const int n_vocab_;
  const RunOptions& o_;
  const int bin_width_;
  std::vector<Reference> refs_;  // [n_batch] the baseline's rows of the chunk
  model::Lockstep lockstep_;
  std::vector<model::Session*> sessions_;  // [lanes] of a lockstep step
};

// The last position of every session waits for its reference token, which is `ref` (-1 at the end).
void CaseRunner::score_pending(int32_t ref) {
  if (base().n_past() == 0) return;
  const Reference b = reference_of(base().last_logits(), n_vocab_);
  const int pos = base().n_past() - 1;
  for (size_t l = 1; l < lanes_.size(); ++l) {
    Lane& lane = *lanes_[l];
    const double kl =
        score_position(b, lane.session->last_logits(), n_vocab_, ref, lane.score->tokens);
    lane.score->kl_by_pos.push_back(float(kl));
    const size_t bin = std::min(size_t(pos / bin_width_), lane.out->kl_by_pos.size() - 1);
    lane.out->kl_by_pos[bin] += kl;
    ++lane.out->kl_by_pos_count[bin];
  }
}

// Scores rows [0, n) of every candidate's chunk against the baseline's, row i at position pos0 + i
// with reference token next[i]. The rows are scored in parallel (the vocabulary-wide softmaxes cost
// as much as a small model's forward pass), then summed in row order, so sums do not depend on the
// thread count.
void CaseRunner::score_rows(int n, int pos0, const int32_t* next) {
  const float* b = lanes_[0]->logits.data();
  const int n_cand = int(lanes_.size()) - 1;
  ThreadPool& pool = *lanes_[0]->session->pool();  // the lanes' threads, idle between their passes
  pool.run(n, [&](int64_t i, int) {
    refs_[size_t(i)] = reference_of(b + size_t(i) * n_vocab_, n_vocab_);
  });
  pool.run(int64_t(n) * n_cand, [&](int64_t j, int) {
    Lane& lane = *lanes_[size_t(1 + j / n)];
    const size_t i = size_t(j % n);
    lane.row_sums[i] = TokenSums{};
    lane.row_kl[i] = score_position(refs_[i], lane.logits.data() + i * n_vocab_, n_vocab_, next[i],
                                    lane.row_sums[i]);
  });
  for (size_t l = 1; l < lanes_.size(); ++l) {
    Lane& lane = *lanes_[l];
    TokenSums& t = lane.score->tokens;
    for (int i = 0; i < n; ++i) {
      const TokenSums& r = lane.row_sums[size_t(i)];
      t.n_positions += r.n_positions;
      t.n_ref += r.n_ref;
      t.kl += r.kl;
      t.top1_mismatch += r.top1_mismatch;
      t.ref_prob_delta += r.ref_prob_delta;
      t.nll_baseline += r.nll_baseline;
      t.nll_candidate += r.nll_candidate;
      const size_t bin = std::min(size_t((pos0 + i) / bin_width_), lane.out->kl_by_pos.size() - 1);
      lane.out->kl_by_pos[bin] += lane.row_kl[size_t(i)];
      lane.score->kl_by_pos.push_back(float(lane.row_kl[size_t(i)]));
      ++lane.out->kl_by_pos_count[bin];
    }
  }
}

void CaseRunner::step(const int32_t* tokens) {
  sessions_.clear();
  for (Lane* lane : lanes_) sessions_.push_back(lane->session.get());
  lockstep_.step(sessions_.data(), tokens, int(sessions_.size()));
}

void CaseRunner::feed_chunk(const int32_t* tokens, int n) {
  score_pending(tokens[0]);
  if (n == 1) {
    step(std::vector<int32_t>(lanes_.size(), tokens[0]).data());
    return;
  }
  const int pos0 = base().n_past();
  for (Lane* lane : lanes_) lane->session->eval(tokens, n, lane->logits.data());
  score_rows(n - 1, pos0, tokens + 1);
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
  for (Lane* lane : lanes_) lane->matching = true;
  std::vector<int32_t> so_far;  // the baseline's tokens of this continuation
  for (int j = 0; j < n; ++j) {
    const int32_t next = model::argmax(base().last_logits(), n_vocab_);
    const std::string base_piece = piece(so_far, next);
    for (size_t l = 1; l < lanes_.size(); ++l) {
      Lane& lane = *lanes_[l];
      const int32_t own = model::argmax(lane.session->last_logits(), n_vocab_);
      Continuation& c = lane.score->continuation;
      if (own != next && c.first_divergence < 0) c.first_divergence = int(c.baseline.size());
      c.baseline.push_back(base_piece);
      c.candidate.push_back(own == next ? base_piece : piece(so_far, own));
      lane.matching = lane.matching && own == next;
      lane.score->n_generated += 1;
      lane.score->n_matched += lane.matching ? 1 : 0;
    }
    so_far.push_back(next);
    feed_chunk(&next, 1);
  }
}

// n tokens from every lane's session as it was after the prompt (Lane::prompt), lane l drawing
// from samplers[l]: out [lanes][n].
std::vector<std::vector<int32_t>> CaseRunner::generate(int n,
                                                       std::vector<model::Sampler>& samplers) {
  for (Lane* lane : lanes_) lane->session->restore(*lane->prompt);
  std::vector<std::vector<int32_t>> out(lanes_.size());
  std::vector<int32_t> next(lanes_.size());
  for (int j = 0; j < n; ++j) {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      next[l] = samplers[l].sample(lanes_[l]->session->last_logits(), n_vocab_);
      out[l].push_back(next[l]);
    }
    if (j + 1 < n) step(next.data());
  }
  return out;
}

// The text `next` adds after `before`: decoding a token alone would lose the space SentencePiece
// strips at the start of a text.
std::string CaseRunner::piece(std::vector<int32_t>& before, int32_t next) const {
  const std::string a = tok_.decode(before);
  before.push_back(next);
  const std::string b = tok_.decode(before);
  before.pop_back();
  return b.compare(0, a.size(), a) == 0 ? b.substr(a.size()) : tok_.decode({next});
}

std::vector<std::string> CaseRunner::pieces(const std::vector<int32_t>& tokens) const {
  std::vector<std::string> out;
  std::vector<int32_t> before;
  for (int32_t t : tokens) {
    out.push_back(piece(before, t));
    before.push_back(t);
  }
  return out;
}

// Recall and task cases: every session continues greedily on its own from the prompt; the
// continuation must contain the answer (recall) or pass the case's check (task).
void CaseRunner::free_greedy(const Case& c) {
  std::vector<model::Sampler> greedy(lanes_.size(), model::Sampler({}, n_vocab_));
  const std::vector<std::vector<int32_t>> outs = generate(c.n_generate, greedy);
  std::vector<int32_t> base_out;
  bool base_pass = false;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const std::vector<int32_t>& out = outs[l];
    const std::string text = text_after(c.turns[0], out);
    const bool pass =
        c.check ? task_passes(*c.check, text) : text.find(c.expect) != std::string::npos;
    if (l == 0) {
      base_out = out;
      base_pass = pass;
      continue;
    }
    CaseScore& s = *lanes_[l]->score;
    s.n_generated += int(out.size());
    const auto diverge = std::mismatch(out.begin(), out.end(), base_out.begin()).first;
    s.n_matched += int(diverge - out.begin());
    s.continuation = {pieces(base_out), pieces(out),
                      diverge == out.end() ? -1 : int(diverge - out.begin()), true};
    (c.check ? s.task_baseline : s.recall_baseline) = base_pass;
    (c.check ? s.task_candidate : s.recall_candidate) = pass;
  }
}

// The text `out` adds after `prompt` (decoding `out` alone would lose a leading space).
std::string CaseRunner::text_after(const std::vector<int32_t>& prompt,
                                   const std::vector<int32_t>& out) const {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), out.begin(), out.end());
  const std::string a = tok_.decode(prompt), b = tok_.decode(all);
  return b.compare(0, a.size(), a) == 0 ? b.substr(a.size()) : tok_.decode(out);
}

void CaseRunner::sample(const Case& c) {
  std::vector<std::vector<std::vector<int32_t>>> outs(lanes_.size());  // [lane][seed][token]
  for (uint64_t seed : c.seeds) {
    std::vector<model::Sampler> samplers(
        lanes_.size(), model::Sampler({float(c.temperature), 0, 1.0f, seed}, n_vocab_));
    std::vector<std::vector<int32_t>> out = generate(c.n_generate, samplers);
    for (size_t l = 0; l < lanes_.size(); ++l) outs[l].push_back(std::move(out[l]));
  }
  const double base_spread = spread(outs[0]);
  for (size_t l = 1; l < lanes_.size(); ++l) {
    lanes_[l]->score->spread_baseline = base_spread;
    lanes_[l]->score->spread_candidate = spread(outs[l]);
  }
}

// Recall and sampling cases generate from the prompt after it was fed once: each session saves
// its state there and returns to it for every continuation, instead of running the prompt again.
void CaseRunner::run(const Case& c) {
  for (Lane* lane : lanes_) lane->session->reset();
  const bool branches =
      c.mode == Mode::kRecall || c.mode == Mode::kSampling || c.mode == Mode::kTask;
  for (size_t t = 0; t < c.turns.size(); ++t) {
    feed(c.turns[t]);
    if (t == 0 && branches)
      for (Lane* lane : lanes_) lane->session->save(*lane->prompt);
    if (c.mode == Mode::kGreedy || c.mode == Mode::kMultiTurn) follow_greedy(c.n_generate);
  }
  if (!c.answer.empty()) feed(c.answer);
  score_pending(-1);
  if (c.mode == Mode::kRecall || c.mode == Mode::kTask) free_greedy(c);
  if (c.mode == Mode::kSampling) sample(c);
}

SettingResult make_result(const Setting& s, const model::Session& session, size_t n_cases, int bins,
                          int max_len) {
  SettingResult r;
  r.setting = s;
  const kv::KvConfig& kv = session.kv_cache().config();
  r.name = s.scale_noise > 0 ? damaged_name(kv, s.scale_noise, s.damage_layer) : kv.name();
  r.kv = kv_bytes(session, max_len);
  r.cases.resize(n_cases);
  r.kl_by_pos.assign(size_t(bins), 0.0);
  r.kl_by_pos_count.assign(size_t(bins), 0);
  return r;
}

Lane make_lane(const model::Model& m, const Setting& s, int n_ctx, const RunOptions& o,
               std::shared_ptr<ThreadPool> pool, int batch) {
  model::SessionOptions so;
  so.n_ctx = n_ctx;
  so.pool = std::move(pool);
  so.n_batch = batch;
  so.kv = s.kv;
  so.matmul = s.matmul;
  if (s.scale_noise > 0) so.after_cache_write = scale_damage(s.scale_noise, s.damage_layer);
  Lane lane;
  lane.session = std::make_unique<model::Session>(m, so);
  lane.prompt = std::make_unique<model::SessionState>(*lane.session);
  lane.logits.resize(size_t(o.n_batch) * size_t(m.config().n_vocab));
  lane.row_sums.resize(size_t(o.n_batch));
  lane.row_kl.resize(size_t(o.n_batch));
  return lane;
}

// What a case costs one lane, in fed positions and generated tokens: the units of the ETA and of
// the budget's estimate.
CaseCost case_cost(const Case& c) {
  CaseCost cost{double(c.n_positions()), 0.0};
  if (c.mode == Mode::kRecall || c.mode == Mode::kTask) cost.generated = c.n_generate;
  if (c.mode == Mode::kSampling) cost.generated = double(c.seeds.size()) * c.n_generate;
  return cost;
}

// Stops the lanes whose setting is decided at this look; lanes[0] (the baseline) always runs.
void take_look(std::vector<Lane*>& running, const RunOptions& o, int look) {
  std::vector<Lane*> kept{running[0]};
  for (size_t l = 1; l < running.size(); ++l) {
    SettingResult& r = *running[l]->out;
    if (o.decided(r, look)) r.look = look;
    else kept.push_back(running[l]);
  }
  running = std::move(kept);
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
    case Metric::kTaskLoss:
      if (!task_baseline || !*task_baseline) return std::nullopt;
      return *task_candidate ? 0.0 : 1.0;
    case Metric::kSpreadGrowth:
      if (!spread_baseline) return std::nullopt;
      return *spread_candidate - *spread_baseline;
    default: return token_metric_value(m, tokens);
  }
}

std::optional<std::pair<bool, bool>> CaseScore::outcomes(Metric m) const {
  if (m == Metric::kRecallLoss && recall_baseline)
    return std::make_pair(*recall_baseline, *recall_candidate);
  if (m == Metric::kTaskLoss && task_baseline)
    return std::make_pair(*task_baseline, *task_candidate);
  return std::nullopt;
}

RunResult run_validation(const model::Model& model, const std::vector<Case>& cases,
                         const std::vector<Setting>& settings, const RunOptions& o) {
  Pace pace;
  int n_ctx = o.max_len;  // the speed segments run at max_len
  for (const Case& c : cases) n_ctx = std::max(n_ctx, c.n_positions());
  RunResult r;
  r.kl_bin_width = std::max(1, (o.max_len + o.kl_bins - 1) / o.kl_bins);
  std::vector<Lane> lanes;
  // The lanes run one after the other (and step in lockstep): one pool of threads for all.
  const std::shared_ptr<ThreadPool> pool = model::make_thread_pool(o.n_threads);
  const std::shared_ptr<ThreadPool> noise_pool =
      o.noise_threads == o.n_threads ? pool : model::make_thread_pool(o.noise_threads);
  lanes.push_back(make_lane(model, Setting{}, n_ctx, o, pool, o.n_batch));
  lanes.push_back(make_lane(model, Setting{}, n_ctx, o, noise_pool, o.noise_batch));
  r.noise_floor =
      make_result({"noise floor", {}}, *lanes[1].session, cases.size(), o.kl_bins, o.max_len);
  r.settings.reserve(settings.size());
  for (const Setting& s : settings) {
    lanes.push_back(make_lane(model, s, n_ctx, o, pool, o.n_batch));
    r.settings.push_back(make_result(s, *lanes.back().session, cases.size(), o.kl_bins, o.max_len));
  }
  r.baseline_kv = kv_bytes(*lanes[0].session, o.max_len);
  lanes[1].out = &r.noise_floor;
  for (size_t i = 0; i < settings.size(); ++i) lanes[i + 2].out = &r.settings[i];

  std::vector<size_t> order = o.order;
  if (order.empty())
    for (size_t i = 0; i < cases.size(); ++i) order.push_back(i);
  KVRT_ASSERT(order.size() == cases.size());
  CaseCost cost_left;
  for (const Case& c : cases) cost_left += case_cost(c);
  std::vector<Lane*> running;
  for (Lane& lane : lanes) running.push_back(&lane);
  CaseRunner runner(running, model, o, r.kl_bin_width);
  size_t next_look = 0;
  for (size_t k = 0; k < order.size() && running.size() > 1; ++k) {
    const Case& c = cases[order[k]];
    const CaseCost cost = case_cost(c) * double(running.size());
    if (o.budget_seconds > 0 && pace.seconds() + pace.estimate(cost) > o.budget_seconds) {
      r.budget_ended = true;
      break;
    }
    for (size_t l = 1; l < running.size(); ++l)
      running[l]->score = &running[l]->out->cases[order[k]];
    const double start = pace.seconds();
    runner.run(c);
    pace.add(cost, pace.seconds() - start);
    cost_left -= case_cost(c);
    r.n_run = int(k + 1);
    for (size_t l = 1; l < running.size(); ++l) running[l]->out->n_run = r.n_run;
    if (next_look < o.looks.size() && r.n_run == o.looks[next_look])
      take_look(running, o, int(next_look++));
    if (o.progress)
      o.progress({r.n_run, int(cases.size()), int(running.size()) - 1, pace.seconds(),
                  pace.estimate(cost_left * double(running.size()))});
  }
  for (SettingResult* s : [&] {
         std::vector<SettingResult*> all{&r.noise_floor};
         for (auto& x : r.settings) all.push_back(&x);
         return all;
       }())
    for (size_t b = 0; b < s->kl_by_pos.size(); ++b)
      if (s->kl_by_pos_count[b]) s->kl_by_pos[b] /= double(s->kl_by_pos_count[b]);
  // Speed: every lane but the noise floor's (FP32 like the baseline), whether or not it stopped
  // early. Timed in turns (validate/speed.h), so that the machine's load falls on all of them
  // alike.
  std::vector<SpeedLane> timed{{lanes[0].session.get(), lanes[0].prompt.get(), &r.baseline_speed}};
  for (size_t l = 2; l < lanes.size(); ++l)
    timed.push_back({lanes[l].session.get(), lanes[l].prompt.get(), &lanes[l].out->speed});
  measure_speeds(timed, o.max_len, o.speed);
  r.seconds = pace.seconds();
  return r;
}

KvBytes kv_bytes(const model::Session& s, int n_tokens) {
  const kv::CacheLayout& layout = s.kv_cache().layout();
  KvBytes b;
  b.bytes_per_token = layout.bytes_per_token();
  b.at_context = double(layout.bytes_in_use(n_tokens));
  kv::CacheShape full = layout.shape;
  full.n_ctx = s.model().config().n_ctx_train;
  b.at_full_context = double(kv::plan_cache(s.kv_cache().config(), full).bytes_in_use(full.n_ctx));
  for (const kv::LayerKind& k : layout.layer_kinds())
    b.kinds.push_back({k.sliding_window, k.n_layers, k.bytes_per_token, k.kept,
                       double(layout.bytes_in_use(n_tokens, k.sliding_window))});
  return b;
}

}  // namespace kvrt::validate
