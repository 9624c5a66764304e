// The threads of a session: a caller and n_threads - 1 workers that share parallel loops by
// claiming items from one counter. The caller never waits for a worker that has not started: it
// runs items itself until none is left, and then waits only for workers that joined this loop
// and are still running an item. A worker descheduled by another process therefore costs nothing
// (its share is taken by the caller), unlike a fork-join team with a static split, whose join waits
// for every thread of the team (libgomp's spinning joins: decode on 2 threads below 1 thread's
// speed when another process shares the cores).
//
// When other processes share the cores, a worker may still be descheduled inside an item it
// claimed, and the loop cannot end before it runs again, a time slice later. A caller that has
// waited longer than its own items took moves such a straggler onto its CPU, idle while the
// caller sleeps, and gives the worker back its CPUs after the loop; a worker that joins a loop on
// the caller's CPU moves itself off, so that the two do not take turns on one core while another
// is free for them to share with the other process.
//
// Waiting: a worker spins for a short while after each loop (a decode step runs tens of loops
// microseconds apart), then sleeps on a futex (std::atomic::wait) until the next one; the caller
// wakes sleepers only when there are some. Outputs do not depend on which thread runs an item, so
// callers that cut their work into items independent of the thread count get the same numbers on
// any number of threads.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

namespace kvrt {

class ThreadPool {
 public:
  // n_threads: the caller and n_threads - 1 workers, started here (at least 1).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }
  // Workers the callers found descheduled inside an item and moved to their own CPU (see run).
  uint64_t stragglers_moved() const { return stragglers_moved_.load(std::memory_order_relaxed); }

  // Calls fn(item, thread) for every item in [0, n_items), each exactly once, and returns when
  // every call has returned; `thread` is in [0, n_threads) and no two calls running at the same
  // time get the same one (an index for per-thread scratch). The caller is thread 0. A call made
  // while the pool runs another loop (from inside fn, or from another thread) runs all its items
  // on the calling thread as thread 0. The first exception thrown by fn is rethrown here after
  // every started call has returned; items not started by then are skipped.
  template <class Fn>
  void run(int64_t n_items, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run_items(
        n_items, [](void* f, int64_t item, int thread) { (*static_cast<F*>(f))(item, thread); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using ItemFn = void (*)(void* ctx, int64_t item, int thread);
  static constexpr uint64_t kClosed = uint64_t(1) << 31;  // entry_: no worker joins any more

  void run_items(int64_t n_items, ItemFn fn, void* ctx);
  int64_t claim_items(int thread);  // runs items until the counter passes n_items_; how many
  // Pins the workers still inside the loop to the caller's CPU; true if it moved one.
  bool move_stragglers_here();
  void release_stragglers();       // gives the moved workers back their CPUs
  static void leave_cpu(int cpu);  // the calling worker moves itself off `cpu`
  void worker(int thread);
  void fail(std::exception_ptr e);
  void shutdown();  // stops and joins the workers

  const int n_threads_;
  // The counters each sit on a cache line of their own: the claim counter changes with every
  // item, and workers spinning on posted_ or the loop's fields must not pull it away each time.
  static constexpr size_t kLine = 64;

  // The loop being run, written by the caller before it opens the loop in entry_ (release) and
  // read by workers that joined it (acquire); unchanged until every joined worker has left.
  alignas(kLine) ItemFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_items_ = 0;
  int caller_cpu_ = -1;  // where the caller opened the loop; -1 when unknown
  alignas(kLine) std::atomic<int64_t> next_{0};  // the next item to claim
  alignas(kLine) std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // the first exception, written by whoever set failed_

  std::atomic<bool> busy_{false};  // a loop runs: other calls run inline
  uint32_t loop_ = 0;              // the caller's count of loops, in entry_'s high half
  // (loop << 32) | kClosed? | workers that joined the loop. Workers join by compare-exchange while
  // the loop is open; the caller closes it when no item is left, and waits for the joined ones.
  alignas(kLine) std::atomic<uint64_t> entry_{kClosed};
  std::atomic<uint32_t> left_{0};  // joined workers that have left the loop
  alignas(kLine) std::atomic<uint32_t> posted_{
      0};                         // bumped with every loop and at shutdown: workers sleep on it
  std::atomic<int> sleepers_{0};  // workers asleep (or about to sleep) on posted_
  std::atomic<bool> caller_asleep_{false};  // the caller sleeps on left_
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;

  // Per worker: inside the current loop (set by the worker); moved by the caller that waits for
  // it, and the CPUs it may run on, given back once the loop is over.
  struct alignas(kLine) Inside {
    std::atomic<bool> flag{false};
    bool moved = false;
    cpu_set_t cpus;
  };
  std::vector<Inside> inside_;
  bool can_move_ = false;  // the pool may run on more than one CPU
  std::atomic<uint64_t> stragglers_moved_{0};
};

}  // namespace kvrt
