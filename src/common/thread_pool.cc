#include "common/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <string>
#include <system_error>

#include "common/error.h"

namespace kvrt {
namespace {

// How long a worker spins for the next loop before it sleeps, and the caller for joined workers
// to finish their items before it sleeps. A decode step's loops come a few microseconds apart, so
// workers stay awake through a step; between steps (sampling, I/O) and when another process holds
// the core they sleep, and a sleeping worker costs the caller one futex wake and nothing else.
constexpr std::chrono::microseconds kSpin{50};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

using Clock = std::chrono::steady_clock;

// Spins until done() or kSpin has passed since `from`; true when done.
template <class Done>
bool spin_until(Done done, Clock::time_point from) {
  const auto end = from + kSpin;
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0 && Clock::now() > end) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), inside_(size_t(n_threads_ - 1)) {
  cpu_set_t cpus;
  can_move_ = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
  try {
    workers_.reserve(size_t(n_threads_ - 1));
    for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker(t); });
  } catch (const std::system_error& e) {
    shutdown();
    throw Error("could not start " + std::to_string(n_threads_) + " threads: " + e.what() +
                    " (use fewer with -t)",
                ErrorKind::kResource);
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  stop_.store(true, std::memory_order_seq_cst);
  posted_.fetch_add(1, std::memory_order_seq_cst);
  posted_.notify_all();
  for (std::thread& w : workers_)
    if (w.joinable()) w.join();
  workers_.clear();
}

void ThreadPool::fail(std::exception_ptr e) {
  bool expected = false;
  if (failed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) error_ = e;
}

int64_t ThreadPool::claim_items(int thread) {
  int64_t ran = 0;
  while (!failed_.load(std::memory_order_relaxed)) {
    const int64_t item = next_.fetch_add(1, std::memory_order_relaxed);
    if (item >= n_items_) break;
    ++ran;
    try {
      fn_(ctx_, item, thread);
    } catch (...) {
      fail(std::current_exception());
      break;
    }
  }
  return ran;
}

void ThreadPool::run_items(int64_t n_items, ItemFn fn, void* ctx) {
  if (n_items <= 0) return;
  if (n_threads_ == 1 || n_items == 1 || busy_.exchange(true, std::memory_order_acquire)) {
    for (int64_t i = 0; i < n_items; ++i) fn(ctx, i, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  n_items_ = n_items;
  next_.store(0, std::memory_order_relaxed);
  left_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  ++loop_;
  caller_cpu_ = can_move_ ? sched_getcpu() : -1;
  entry_.store(uint64_t(loop_) << 32, std::memory_order_release);  // open: workers may join
  posted_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) posted_.notify_all();

  const Clock::time_point opened = Clock::now();
  const int64_t own = claim_items(0);
  const Clock::time_point claimed = Clock::now();
  // No item is left to claim: close the loop, then wait only for the workers that joined it.
  const uint32_t joined =
      uint32_t(entry_.fetch_or(kClosed, std::memory_order_acq_rel) & (kClosed - 1));
  if (!spin_until([&] { return left_.load(std::memory_order_acquire) == joined; }, claimed)) {
    // A worker still inside an item after longer than the caller took per item is most likely
    // descheduled, waiting behind another process: bring it to this CPU, idle while the caller
    // sleeps. (Prefill's items take milliseconds; a worker inside one is left where it runs.)
    const bool straggling = own > 0 && claimed - opened < kSpin * own;
    const bool moved = straggling && move_stragglers_here();
    caller_asleep_.store(true, std::memory_order_seq_cst);
    for (uint32_t left; (left = left_.load(std::memory_order_seq_cst)) != joined;)
      left_.wait(left, std::memory_order_seq_cst);
    caller_asleep_.store(false, std::memory_order_relaxed);
    if (moved) release_stragglers();
  }
  const std::exception_ptr error = failed_.load(std::memory_order_acquire) ? error_ : nullptr;
  busy_.store(false, std::memory_order_release);
  if (error) std::rethrow_exception(error);
}

bool ThreadPool::move_stragglers_here() {
  const int cpu = can_move_ ? sched_getcpu() : -1;
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  bool any = false;
  for (size_t w = 0; w < workers_.size(); ++w) {
    Inside& inside = inside_[w];
    if (!inside.flag.load(std::memory_order_relaxed)) continue;
    const pthread_t handle = workers_[w].native_handle();
    inside.moved = pthread_getaffinity_np(handle, sizeof inside.cpus, &inside.cpus) == 0 &&
                   CPU_ISSET(cpu, &inside.cpus) &&
                   pthread_setaffinity_np(handle, sizeof here, &here) == 0;
    if (inside.moved) stragglers_moved_.fetch_add(1, std::memory_order_relaxed);
    any = any || inside.moved;
  }
  return any;
}

void ThreadPool::release_stragglers() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    Inside& inside = inside_[w];
    if (!inside.moved) continue;
    pthread_setaffinity_np(workers_[w].native_handle(), sizeof inside.cpus, &inside.cpus);
    inside.moved = false;
  }
}

void ThreadPool::leave_cpu(int cpu) {
  cpu_set_t mine, others;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || !CPU_ISSET(cpu, &mine)) return;
  others = mine;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0) return;
  sched_setaffinity(0, sizeof mine, &mine);
}

void ThreadPool::worker(int thread) {
  uint32_t seen = 0;  // posted_ when this worker last looked
  for (;;) {
    if (!spin_until([&] { return posted_.load(std::memory_order_acquire) != seen; },
                    Clock::now())) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      posted_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = posted_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    // Join the open loop, if it still is: a worker that woke late finds it closed and goes back
    // to waiting, never touching a loop the caller may already have finished.
    uint64_t e = entry_.load(std::memory_order_acquire);
    bool joined = false;
    while (!joined && !(e & kClosed))
      joined = entry_.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel,
                                            std::memory_order_acquire);
    if (!joined) continue;
    // On the caller's CPU (moved there as a straggler, or placed there by the scheduler) the
    // two would take turns: move to another one while the caller waits to run.
    if (caller_cpu_ >= 0 && sched_getcpu() == caller_cpu_) leave_cpu(caller_cpu_);
    Inside& inside = inside_[size_t(thread - 1)];
    inside.flag.store(true, std::memory_order_relaxed);
    claim_items(thread);
    inside.flag.store(false, std::memory_order_relaxed);
    left_.fetch_add(1, std::memory_order_seq_cst);
    if (caller_asleep_.load(std::memory_order_seq_cst)) left_.notify_one();
  }
}

}  // namespace kvrt
