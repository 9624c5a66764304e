// ThreadPool (common/thread_pool.h): every item runs exactly once whatever the pool's size, the
// thread indices are in range and never shared by two calls at once, calls made while the pool
// is busy (nested, or from another thread) run inline, an exception reaches the caller after the
// started items have finished, a pool whose worker is kept off the CPU still finishes, and a worker
// that straggles or shares the caller's CPU is moved without losing the CPUs it may run on.
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"

namespace {

using kvrt::ThreadPool;

// Runs n items on `pool` and checks each ran once, on a thread index in range.
void check_each_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(size_t(std::max<int64_t>(n, 1)));
  std::atomic<int> bad_thread{0};
  pool.run(n, [&](int64_t i, int t) {
    if (t < 0 || t >= pool.n_threads()) bad_thread.fetch_add(1);
    hits[size_t(i)].fetch_add(1);
  });
  int once = 0;
  for (int64_t i = 0; i < n; ++i) once += hits[size_t(i)].load() == 1;
  CHECK(once == n);
  CHECK(bad_thread.load() == 0);
}

}  // namespace

TEST_CASE("thread pool: every item once, for empty, single and large ranges") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    CHECK(pool.n_threads() == threads);
    int calls = 0;
    pool.run(0, [&](int64_t, int) { ++calls; });
    pool.run(-3, [&](int64_t, int) { ++calls; });
    CHECK(calls == 0);
    for (int64_t n : {1, 2, 3, 7, 64, 1000, 100000}) {
      INFO("threads " << threads << " items " << n);
      check_each_once(pool, n);
    }
  }
  CHECK(ThreadPool(0).n_threads() == 1);
}

TEST_CASE("thread pool: many short loops in a row, as a decode step runs them") {
  ThreadPool pool(2);
  std::vector<int64_t> sums(64);
  int64_t expected = 0, total = 0;
  for (int rep = 0; rep < 20000; ++rep) {
    const int64_t n = 1 + rep % 9;
    std::fill(sums.begin(), sums.end(), 0);
    pool.run(n, [&](int64_t i, int) { sums[size_t(i)] = i + rep; });
    for (int64_t i = 0; i < n; ++i) {
      expected += i + rep;
      total += sums[size_t(i)];
    }
  }
  CHECK(total == expected);
}

TEST_CASE("thread pool: no two calls at once share a thread index") {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> inside(4);
  std::atomic<int> clashes{0};
  for (int rep = 0; rep < 200; ++rep) {
    pool.run(64, [&](int64_t, int t) {
      if (inside[size_t(t)].fetch_add(1) != 0) clashes.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(5));
      inside[size_t(t)].fetch_sub(1);
    });
  }
  CHECK(clashes.load() == 0);
}

TEST_CASE("thread pool: a loop inside a loop runs inline, every item of both once") {
  ThreadPool pool(2);
  constexpr int kOuter = 16, kInner = 10;
  std::vector<std::atomic<int>> hits(kOuter * kInner);
  std::atomic<int> inner_threads_not_zero{0};
  pool.run(kOuter, [&](int64_t o, int) {
    pool.run(kInner, [&](int64_t i, int t) {
      if (t != 0) inner_threads_not_zero.fetch_add(1);
      hits[size_t(o * kInner + i)].fetch_add(1);
    });
  });
  int once = 0;
  for (auto& h : hits) once += h.load() == 1;
  CHECK(once == kOuter * kInner);
  CHECK(inner_threads_not_zero.load() == 0);
}

TEST_CASE("thread pool: callers on two threads share one pool") {
  ThreadPool pool(2);
  std::atomic<int64_t> sum_a{0}, sum_b{0};
  auto caller = [&](std::atomic<int64_t>& sum) {
    for (int rep = 0; rep < 500; ++rep) pool.run(100, [&](int64_t i, int) { sum.fetch_add(i); });
  };
  std::thread a(caller, std::ref(sum_a)), b(caller, std::ref(sum_b));
  a.join();
  b.join();
  CHECK(sum_a.load() == 500 * 4950);
  CHECK(sum_b.load() == 500 * 4950);
}

TEST_CASE("thread pool: an exception reaches the caller and the pool keeps working") {
  ThreadPool pool(2);
  for (int64_t bad : {int64_t(0), int64_t(5), int64_t(99)}) {
    std::atomic<int> running{0}, after_return{0};
    bool returned = false;
    try {
      pool.run(100, [&](int64_t i, int) {
        running.fetch_add(1);
        if (i == bad) throw std::runtime_error("item " + std::to_string(i));
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        running.fetch_sub(1);
      });
      returned = true;
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "item " + std::to_string(bad));
      // Every call that started has returned (the throwing one never decrements).
      after_return = running.load();
    }
    CHECK_FALSE(returned);
    CHECK(after_return.load() == 1);
    check_each_once(pool, 1000);
  }
}

TEST_CASE("thread pool: a worker that cannot run leaves its items to the caller") {
  // The item the worker claims first blocks it until the caller has run every other item; with a
  // static split the caller would wait for the worker's half, here it takes the rest itself.
  ThreadPool pool(2);
  for (int rep = 0; rep < 20; ++rep) {
    std::atomic<int> by_caller{0}, done{0};
    std::atomic<bool> worker_claimed{false};
    constexpr int kItems = 200;
    pool.run(kItems, [&](int64_t, int t) {
      if (t != 0 && !worker_claimed.exchange(true)) {
        while (done.load() < kItems - 1) std::this_thread::yield();  // held until the rest are done
      } else if (t == 0) {
        by_caller.fetch_add(1);
      }
      done.fetch_add(1);
    });
    CHECK(done.load() == kItems);
    CHECK(by_caller.load() == (worker_claimed.load() ? kItems - 1 : kItems));
  }
}

namespace {

bool same_cpus(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b); }

// The CPUs the calling thread may run on; none when they cannot be read.
cpu_set_t own_cpus() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) CPU_ZERO(&cpus);
  return cpus;
}

int count(const cpu_set_t& cpus) { return CPU_COUNT(&cpus); }

}  // namespace

TEST_CASE("thread pool: a worker held inside an item is brought to the waiting caller's CPU") {
  const cpu_set_t all = own_cpus();
  if (count(all) < 2) {
    MESSAGE("skipped: this process may run on one CPU only");
    return;
  }
  ThreadPool pool(2);
  // The worker's first item waits for every other item, then for the caller to pin it to one CPU
  // (the caller's items take microseconds, so after its 50 us of spinning it counts the worker as
  // descheduled), and records the CPUs it may run on meanwhile. A caller preempted while it runs
  // its own items (a loaded machine) takes them for long ones and pins nothing: then again.
  int held = 0;
  bool pinned = false;
  for (int rep = 0; rep < 50 && !pinned; ++rep) {
    constexpr int kItems = 64;
    std::atomic<int> done{0};
    std::atomic<bool> worker_claimed{false};
    int pinned_cpus = 0;
    pool.run(kItems, [&](int64_t, int t) {
      if (t != 0 && !worker_claimed.exchange(true)) {
        while (done.load() < kItems - 1) std::this_thread::yield();
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        do {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          pinned_cpus = count(own_cpus());
        } while (pinned_cpus != 1 && std::chrono::steady_clock::now() < end);
      }
      done.fetch_add(1);
    });
    held += worker_claimed.load();
    pinned = pinned_cpus == 1;
  }
  if (held == 0) {
    MESSAGE("skipped: the worker never claimed an item");
    return;
  }
  INFO("loops in which the worker was held: " << held);
  CHECK(pinned);
  CHECK(pool.stragglers_moved() >= 1);
  // After the loop the worker may run on every CPU again.
  bool restored = false, worker_ran = false;
  for (int again = 0; again < 100 && !worker_ran; ++again) {
    pool.run(64, [&](int64_t, int t) {
      if (t != 0 && !worker_ran) {  // one worker: no other thread writes these
        worker_ran = true;
        restored = same_cpus(own_cpus(), all);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
  }
  if (worker_ran) CHECK(restored);
}

TEST_CASE("thread pool: a worker placed on the caller's CPU leaves it with its CPUs unchanged") {
  const cpu_set_t all = own_cpus();
  if (count(all) < 2) {
    MESSAGE("skipped: this process may run on one CPU only");
    return;
  }
  ThreadPool pool(2);
  // The caller stays on one CPU; a worker item moves the worker there (as the scheduler may).
  const int cpu = sched_getcpu();
  REQUIRE(cpu >= 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  std::atomic<int> placed{0};
  std::vector<cpu_set_t> seen;
  std::mutex seen_lock;
  for (int rep = 0; rep < 200 && seen.size() < 20; ++rep) {
    pool.run(16, [&](int64_t, int t) {
      if (t == 0) {  // slow enough for the worker to join, and off the CPU now and then
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        return;
      }
      {
        std::lock_guard<std::mutex> lock(seen_lock);
        seen.push_back(own_cpus());
      }
      // Placed on the caller's CPU but allowed on all, for the next loop to find it there.
      if (sched_setaffinity(0, sizeof one, &one) == 0 && sched_getcpu() == cpu) placed.fetch_add(1);
      sched_setaffinity(0, sizeof all, &all);
    });
  }
  sched_setaffinity(0, sizeof all, &all);
  CHECK(placed.load() > 0);
  // Each time the worker joined a loop it may run on every CPU: leaving kept its own mask.
  for (const cpu_set_t& s : seen) CHECK(same_cpus(s, all));
}
