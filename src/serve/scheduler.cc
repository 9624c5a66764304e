#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "model/prefix_reuse.h"

namespace kvrt::serve {

Scheduler::Scheduler(const model::Model& model, const SchedulerOptions& options, Metrics& metrics)
    : model_(model),
      opt_(options),
      metrics_(metrics),
      slots_(size_t(std::max(1, options.n_slots))) {
  for (Slot& s : slots_) s.session = validate::open_session(model, opt_.admitted);
  n_ctx_ = slots_[0].session->n_ctx();
  lockstep_ =
      std::make_unique<model::Lockstep>(model, int(slots_.size()), slots_[0].session->n_threads());
  batch_slots_.reserve(slots_.size());
  batch_sessions_.reserve(slots_.size());
  batch_tokens_.reserve(slots_.size());
  thread_ = std::thread([this] { run(); });
}

void Scheduler::shutdown() {
  std::lock_guard once(shutdown_mutex_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
  std::lock_guard lock(mutex_);
  for (const auto& job : queue_) job->fail("the server is shutting down");
  queue_.clear();
  for (Slot& s : slots_)
    if (s.job) s.job->fail("the server is shutting down"), s.job.reset(), --n_busy_;
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() + size_t(n_busy_) >= slots_.size() + size_t(opt_.queue_limit))
      return false;
    queue_.push_back(std::move(job));
  }
  work_.notify_all();
  return true;
}

void Scheduler::run() {
  while (wait_for_work()) {
    try {
      admit_queued();
      drop_cancelled();
      prefill_step();
      decode_step();
    } catch (const std::exception& e) {
      // Not expected (each evaluation's own errors fail only its slots), but never fatal to the
      // server: the busy slots fail and their caches start over.
      for (Slot& s : slots_)
        if (s.job) fail(s, e.what());
    }
    publish_state();
    if (opt_.debug_step_delay.count() > 0) std::this_thread::sleep_for(opt_.debug_step_delay);
  }
}

bool Scheduler::wait_for_work() {
  const bool busy =
      std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.job != nullptr; });
  std::unique_lock lock(mutex_);
  if (!busy) work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  return !stopping_;
}

void Scheduler::admit_queued() {
  for (;;) {
    const auto free =
        std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.job; });
    if (free == slots_.end()) return;
    std::shared_ptr<Job> job;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      if (job->cancelled()) {
        metrics_.cancelled();
        continue;
      }
      ++n_busy_;
    }
    // The free slot whose cache holds the longest prefix of this prompt.
    const std::vector<int32_t>& prompt = job->input().prompt;
    Slot* best = nullptr;
    int best_common = -1;
    for (Slot& s : slots_) {
      if (s.job) continue;
      const int common = model::common_prefix(s.session->tokens(), s.session->n_past(),
                                              prompt.data(), int(prompt.size()));
      if (common > best_common) best = &s, best_common = common;
    }
    admit(*best, std::move(job));
  }
}

void Scheduler::admit(Slot& slot, std::shared_ptr<Job> job) {
  const JobInput& in = job->input();
  slot.job = std::move(job);
  slot.order = n_admitted_++;
  try {
    slot.sampler.emplace(in.sampling, model_.config().n_vocab);
    slot.text.emplace(in.stop);
    const int n = int(in.prompt.size());
    slot.n_done = model::reuse_prefix(*slot.session, in.prompt.data(), n);
    // reuse_prefix keeps all n only when the session holds exactly the prompt: its last logits
    // are the prompt's, so generation starts at once.
    slot.phase = slot.n_done == n ? Phase::kDecode : Phase::kPrefill;
    slot.usage = {n, slot.n_done, 0};
    slot.at_start = true;
    metrics_.prompt(n, slot.n_done);
  } catch (const std::exception& e) {
    fail(slot, e.what());
  }
}

void Scheduler::drop_cancelled() {
  for (Slot& s : slots_) {
    if (!s.job || !s.job->cancelled()) continue;
    metrics_.cancelled();
    release(s);
    // A prompt read only in part is still a prefix the next request may share.
  }
}

void Scheduler::prefill_step() {
  for (int budget = opt_.prefill_chunk; budget > 0;) {
    Slot* next = nullptr;
    for (Slot& s : slots_)
      if (s.phase == Phase::kPrefill && (!next || s.order < next->order)) next = &s;
    if (!next) return;
    const std::vector<int32_t>& prompt = next->job->input().prompt;
    const int rest = int(prompt.size()) - next->n_done;
    // A prompt is read in whole chunks from where it starts, as when it is alone: one that does
    // not fit what is left of this step's budget waits for the next step.
    if (rest > budget && budget < opt_.prefill_chunk) return;
    const int n = std::min(budget, rest);
    try {
      next->session->eval(prompt.data() + next->n_done, n);
    } catch (const std::exception& e) {
      fail(*next, e.what());
      continue;
    }
    budget -= n;
    next->n_done += n;
    if (next->n_done == int(prompt.size())) next->phase = Phase::kDecode;
  }
}

void Scheduler::decode_step() {
  batch_slots_.clear();
  batch_sessions_.clear();
  batch_tokens_.clear();
  for (Slot& s : slots_) {
    int32_t token = -1;
    if (s.phase != Phase::kDecode || !generate_one(s, token)) continue;
    batch_slots_.push_back(&s);
    batch_sessions_.push_back(s.session.get());
    batch_tokens_.push_back(token);
  }
  if (batch_slots_.empty()) return;
  const Clock::time_point t0 = Clock::now();
  try {
    lockstep_->step(batch_sessions_.data(), batch_tokens_.data(), int(batch_slots_.size()));
  } catch (const std::exception& e) {
    for (Slot* s : batch_slots_) fail(*s, e.what());
    return;
  }
  metrics_.decode_step(int(batch_slots_.size()),
                       std::chrono::duration<double>(Clock::now() - t0).count());
}

// The loop of kvrt run for one token: sample, stop at an end-of-generation token, send the
// piece, stop at max_tokens or a full context, else evaluate the token at this step.
bool Scheduler::generate_one(Slot& slot, int32_t& token) {
  Job& job = *slot.job;
  const model::Tokenizer& tok = model_.tokenizer();
  const int n_vocab = model_.config().n_vocab;
  const float* logits = slot.session->last_logits();
  if (job.input().ignore_eos) {
    // As llama.cpp's ignore_eos: the end-of-generation tokens get no probability, the rest keep
    // theirs, so the reply runs to max_tokens or the end of the context.
    slot.masked_logits.assign(logits, logits + n_vocab);
    for (const int32_t id : tok.end_of_generation_ids())
      if (id >= 0 && id < n_vocab) slot.masked_logits[size_t(id)] = -INFINITY;
    logits = slot.masked_logits.data();
  }
  token = slot.sampler->sample(logits, n_vocab);
  if (slot.usage.n_completion == 0)
    metrics_.first_token(std::chrono::duration<double>(Clock::now() - job.submitted()).count());
  if (tok.is_end_of_generation(token)) {
    end(slot, FinishReason::kStop);
    return false;
  }
  std::string piece = tok.token_to_piece(token);
  if (slot.at_start && job.input().strip_leading_space && piece.starts_with(' ')) piece.erase(0, 1);
  slot.at_start = slot.at_start && piece.empty();
  ++slot.usage.n_completion;
  metrics_.generated(1);
  if (slot.text->add(piece)) {
    end(slot, FinishReason::kStop);
    return false;
  }
  job.emit(slot.text->take_ready());
  if (slot.usage.n_completion == job.input().max_tokens || slot.session->n_past() >= n_ctx_) {
    end(slot, FinishReason::kLength);
    return false;
  }
  return true;
}

void Scheduler::end(Slot& slot, FinishReason reason) {
  slot.job->emit(slot.text->take_rest());
  slot.job->finish(reason, slot.usage);
  release(slot);
}

void Scheduler::fail(Slot& slot, const std::string& message) {
  slot.job->fail(message);
  release(slot);
  slot.session->reset();  // what the cache holds after a failed evaluation is not a prefix to reuse
}

void Scheduler::release(Slot& slot) {
  slot.job.reset();
  slot.phase = Phase::kFree;
  std::lock_guard lock(mutex_);
  --n_busy_;
}

void Scheduler::publish_state() {
  size_t queued = 0;
  {
    std::lock_guard lock(mutex_);
    queued = queue_.size();
  }
  int busy = 0;
  size_t kv_bytes = 0;
  for (const Slot& s : slots_) {
    busy += s.job ? 1 : 0;
    kv_bytes += s.session->kv_cache().bytes_in_use(s.session->n_past());
  }
  metrics_.state(int(queued), busy, kv_bytes);
}

}  // namespace kvrt::serve
