#include "serve/metrics.h"

#include <cstdio>

namespace kvrt::serve {
namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::prompt(int n_tokens, int n_cached) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += uint64_t(n_tokens);
  cached_tokens_ += uint64_t(n_cached);
}

void Metrics::generated(int n_tokens) {
  std::lock_guard lock(mutex_);
  generated_tokens_ += uint64_t(n_tokens);
}

void Metrics::first_token(double seconds) {
  std::lock_guard lock(mutex_);
  size_t b = 0;
  while (b < kTtftBounds.size() && seconds > kTtftBounds[b]) ++b;
  ++ttft_buckets_[b];
  ttft_sum_ += seconds;
  ++ttft_count_;
}

void Metrics::decode_step(int n_tokens, double seconds) {
  std::lock_guard lock(mutex_);
  if (seconds > 0) tokens_per_second_ = n_tokens / seconds;
}

void Metrics::cancelled() {
  std::lock_guard lock(mutex_);
  ++cancelled_;
}

void Metrics::state(int queue_depth, int busy_slots, size_t kv_bytes_in_use) {
  std::lock_guard lock(mutex_);
  queue_depth_ = queue_depth;
  busy_slots_ = busy_slots;
  kv_bytes_ = kv_bytes_in_use;
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "kvrt_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, n] : requests_)
    out += "kvrt_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  header(out, "kvrt_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.");
  out += "kvrt_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  header(out, "kvrt_prompt_tokens_cached_total", "counter",
         "Prompt tokens a slot held already (prefix reuse).");
  out += "kvrt_prompt_tokens_cached_total " + std::to_string(cached_tokens_) + "\n";
  header(out, "kvrt_generated_tokens_total", "counter", "Tokens generated.");
  out += "kvrt_generated_tokens_total " + std::to_string(generated_tokens_) + "\n";
  header(out, "kvrt_requests_cancelled_total", "counter",
         "Requests whose client went away before the end.");
  out += "kvrt_requests_cancelled_total " + std::to_string(cancelled_) + "\n";
  header(out, "kvrt_queue_depth", "gauge", "Requests waiting for a slot.");
  out += "kvrt_queue_depth " + std::to_string(queue_depth_) + "\n";
  header(out, "kvrt_slots_busy", "gauge", "Slots prefilling or decoding.");
  out += "kvrt_slots_busy " + std::to_string(busy_slots_) + "\n";
  header(out, "kvrt_kv_cache_bytes_in_use", "gauge",
         "KV cache bytes holding positions, over all slots.");
  out += "kvrt_kv_cache_bytes_in_use " + std::to_string(kv_bytes_) + "\n";
  header(out, "kvrt_decode_tokens_per_second", "gauge",
         "Tokens per second of the last decode step, all slots.");
  out += "kvrt_decode_tokens_per_second " + number(tokens_per_second_) + "\n";
  header(out, "kvrt_time_to_first_token_seconds", "histogram",
         "From a request's arrival to its first token.");
  uint64_t cumulative = 0;
  for (size_t b = 0; b < ttft_buckets_.size(); ++b) {
    cumulative += ttft_buckets_[b];
    const std::string le = b < kTtftBounds.size() ? number(kTtftBounds[b]) : "+Inf";
    out += "kvrt_time_to_first_token_seconds_bucket{le=\"" + le + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += "kvrt_time_to_first_token_seconds_sum " + number(ttft_sum_) + "\n";
  out += "kvrt_time_to_first_token_seconds_count " + std::to_string(ttft_count_) + "\n";
  return out;
}

}  // namespace kvrt::serve
