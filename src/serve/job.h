// One generation request on its way through the server: what to generate (filled by the HTTP
// thread), and the reply as the scheduler's thread produces it, handed back piece by piece. The
// two threads meet only here, under the job's lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/sampler.h"

namespace kvrt::serve {

using Clock = std::chrono::steady_clock;

struct JobInput {
  std::vector<int32_t> prompt;  // [n_prompt] token ids, BOS included when the model wants one
  model::SamplerOptions sampling;
  int max_tokens = 1;
  std::vector<std::string> stop;
  bool strip_leading_space = false;  // SentencePiece's space before the reply's first word
  bool ignore_eos = false;           // never sample an end-of-generation token
};

enum class FinishReason { kStop, kLength };

struct Usage {
  int n_prompt = 0;      // prompt tokens
  int n_cached = 0;      // of which the slot held already (prefix reuse)
  int n_completion = 0;  // generated tokens
};

// What the HTTP side takes from a job: the text since its last take and, at the end, how it ended.
struct JobProgress {
  std::string text;
  bool finished = false;
  FinishReason reason = FinishReason::kStop;
  Usage usage;
  std::string error;  // not empty: the generation failed (the server's fault, not the request's)
};

class Job {
 public:
  explicit Job(JobInput input) : input_(std::move(input)), submitted_(Clock::now()) {}

  const JobInput& input() const { return input_; }
  Clock::time_point submitted() const { return submitted_; }

  // Scheduler side.
  void emit(const std::string& text);
  void finish(FinishReason reason, const Usage& usage);
  void fail(const std::string& message);

  // HTTP side: waits up to `wait` for news, then returns what came (possibly nothing).
  JobProgress take(std::chrono::milliseconds wait);
  // The client went away: the scheduler frees the slot at its next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  const JobInput input_;
  const Clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  JobProgress pending_;  // guarded by mutex_
};

}  // namespace kvrt::serve
