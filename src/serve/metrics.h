// The server's counters, rendered for GET /metrics in Prometheus's text format (version 0.0.4):
// requests by endpoint and status, prompt and generated tokens, queue depth, busy slots, time to
// first token (a histogram), the last decode step's tokens per second and the KV bytes in use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace kvrt::serve {

class Metrics {
 public:
  void request(const std::string& endpoint, int status);
  void prompt(int n_tokens, int n_cached);
  void generated(int n_tokens);
  void first_token(double seconds);
  void decode_step(int n_tokens, double seconds);
  void cancelled();
  // The scheduler's state after each step.
  void state(int queue_depth, int busy_slots, size_t kv_bytes_in_use);
  std::string render() const;

 private:
  // Upper bounds of the time-to-first-token buckets, in seconds (the last is +Inf).
  static constexpr std::array<double, 10> kTtftBounds = {0.01, 0.025, 0.05, 0.1, 0.25,
                                                         0.5,  1,     2.5,  5,   10};

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) -> count
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0, cancelled_ = 0;
  std::array<uint64_t, kTtftBounds.size() + 1> ttft_buckets_{};  // not cumulative; the last is +Inf
  double ttft_sum_ = 0;
  uint64_t ttft_count_ = 0;
  double tokens_per_second_ = 0;
  int queue_depth_ = 0, busy_slots_ = 0;
  size_t kv_bytes_ = 0;
};

}  // namespace kvrt::serve
