// The slots of the server and the one thread that runs them. Each slot is a Session with its own
// KV cache. The thread loops: admit queued requests to free slots (each to the slot holding the
// longest prefix of its prompt, which it keeps: prompt caching), evaluate up to prefill_chunk
// prompt tokens (the oldest prompts first, several short ones in one pass), then one decode step of
// every generating slot together through model::Lockstep, so the weights are read once per step for
// all of them and running streams keep flowing while a long prompt is read. A cancelled job frees
// its slot at the next step.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "model/lockstep.h"
#include "model/sampler.h"
#include "model/session.h"
#include "serve/job.h"
#include "serve/metrics.h"
#include "serve/text_output.h"
#include "validate/open_session.h"

namespace kvrt::serve {

struct SchedulerOptions {
  int n_slots = 1;
  int queue_limit = 16;          // requests waiting for a slot; more are refused (503)
  int prefill_chunk = 256;       // prompt tokens evaluated between two decode steps
  validate::Admission admitted;  // every slot's session: what the gate let through
  // Test harnesses only: a pause after every step with work (kvrt serve --debug-step-delay).
  std::chrono::milliseconds debug_step_delay{0};
};

class Scheduler {
 public:
  Scheduler(const model::Model& model, const SchedulerOptions& options, Metrics& metrics);
  ~Scheduler() { shutdown(); }
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job whose prompt fits the context (at most n_ctx() - 1 tokens); false when every
  // slot is busy and queue_limit jobs wait already.
  bool submit(std::shared_ptr<Job> job);
  // Stops the thread (from any thread, more than once): jobs queued or running fail.
  void shutdown();
  int n_ctx() const { return n_ctx_; }

 private:
  enum class Phase { kFree, kPrefill, kDecode };
  struct Slot {
    std::unique_ptr<model::Session> session;
    std::shared_ptr<Job> job;  // null when free
    Phase phase = Phase::kFree;
    int n_done = 0;      // prompt tokens in the cache
    uint64_t order = 0;  // admission order: prompts are read first come, first served
    std::optional<model::Sampler> sampler;
    std::optional<TextOutput> text;
    Usage usage;
    bool at_start = true;  // no text generated yet (the reply's leading space may be dropped)
    std::vector<float> masked_logits;  // [n_vocab] ignore_eos: end-of-generation ids at -inf
  };

  void run();
  bool wait_for_work();
  void admit_queued();
  void admit(Slot& slot, std::shared_ptr<Job> job);
  void drop_cancelled();
  void prefill_step();
  void decode_step();
  // Samples the slot's next token and sends its text; true when the token is to be evaluated.
  bool generate_one(Slot& slot, int32_t& token);
  void end(Slot& slot, FinishReason reason);
  void fail(Slot& slot, const std::string& message);
  void release(Slot& slot);  // the slot is free; its cache keeps what it holds
  void publish_state();

  const model::Model& model_;
  const SchedulerOptions opt_;
  Metrics& metrics_;
  std::vector<Slot> slots_;  // [n_slots]
  int n_ctx_ = 0;
  std::unique_ptr<model::Lockstep> lockstep_;
  std::vector<Slot*> batch_slots_;               // [n_slots] the slots of a decode step
  std::vector<model::Session*> batch_sessions_;  // [n_slots]
  std::vector<int32_t> batch_tokens_;            // [n_slots]
  uint64_t n_admitted_ = 0;

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mutex_
  int n_busy_ = 0;                          // guarded by mutex_: slots with a job
  bool stopping_ = false;                   // guarded by mutex_
  std::mutex shutdown_mutex_;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace kvrt::serve
