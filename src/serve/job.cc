#include "serve/job.h"

namespace kvrt::serve {

void Job::emit(const std::string& text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_.text += text;
  }
  changed_.notify_all();
}

void Job::finish(FinishReason reason, const Usage& usage) {
  {
    std::lock_guard lock(mutex_);
    pending_.finished = true;
    pending_.reason = reason;
    pending_.usage = usage;
  }
  changed_.notify_all();
}

void Job::fail(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    pending_.finished = true;
    pending_.error = message;
  }
  changed_.notify_all();
}

JobProgress Job::take(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, wait, [&] { return pending_.finished || !pending_.text.empty(); });
  JobProgress out = pending_;
  pending_.text.clear();
  return out;
}

}  // namespace kvrt::serve
