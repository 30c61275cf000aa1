#pragma once
// A small persistent thread pool: threads are made once (on first use) and never per call. Work is
// handed out as task indices through an atomic counter; the calling thread takes tasks too. Launching
// allocates nothing (a function pointer and a context pointer), so evaluation stays allocation-free.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "tenfold/core/config.hpp"
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

// How long an idle worker spins for the next parallel region before it sleeps (microseconds).
#ifndef TENFOLD_POOL_SPIN_US
#define TENFOLD_POOL_SPIN_US 100
#endif

namespace tenfold::cpu {

class thread_pool {
 public:
  // TENFOLD_NUM_THREADS overrides the hardware count (1 disables threading).
  static thread_pool& instance() {
    static thread_pool pool(default_threads());
    return pool;
  }
  int size() const { return int(workers_.size()) + 1; }

  // Calls f(task) for every task in [0, tasks); returns when all are done.
  template <class F>
  void run(int tasks, F& f) {
    if (tasks <= 0) return;
    if (tasks == 1 || workers_.empty() || inside_task_) {
      for (int t = 0; t < tasks; ++t) f(t);
      return;
    }
    launch(tasks, trampoline<F>, &f, false);
  }

  // Calls f(i) for every i in [0, size()), i on the pool's thread i (0: the calling thread) every time:
  // work that each thread should keep finding in its own core's caches from one call to the next (the
  // few-row GEMMs of a decode step, each core holding its share of the weights in its L2). Inside a
  // task, or with one thread, the calling thread runs them all.
  template <class F>
  void run_on_own_threads(F& f) {
    const int n = size();
    if (n == 1 || inside_task_) {
      for (int t = 0; t < n; ++t) f(t);
      return;
    }
    launch(n, trampoline<F>, &f, true);
  }

  // Calls f() once on every thread of the pool (the calling thread included), each at the same time:
  // every task waits until all have started, so no thread takes two. For per-thread state
  // (cpu/scratch.hpp); inside a task, only on the calling thread.
  template <class F>
  void on_each_thread(F& f) {
    const int n = size();
    if (n == 1 || inside_task_) {
      f();
      return;
    }
    std::atomic<int> started{0};
    auto task = [&](int) {
      started.fetch_add(1);
      while (started.load() < n) std::this_thread::yield();
      f();
    };
    run(n, task);
  }

  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  static int default_threads() {
    if (const char* e = std::getenv("TENFOLD_NUM_THREADS")) {
      const int n = std::atoi(e);
      if (n >= 1) return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }
  explicit thread_pool(int n) {
    workers_.reserve(n - 1);
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { index_ = i, loop(); });
  }
  // The task of a region, called through fn_ with the callable as its context.
  template <class F>
  static void trampoline(void* c, int t) {
    (*static_cast<F*>(c))(t);
  }
  // One parallel region: tasks [0, tasks) taken from a counter by whichever thread comes first, or (own)
  // task i run by thread i. Not a template: only the trampoline above is instantiated per callable (the
  // region's locking and waiting were 5% of the code of a sanitized test build when they were).
  //
  // A region is open while region_ is odd. Workers that spin (the common case: regions come one after
  // another) enter it and leave it through atomics alone; the mutex is taken only to wake a sleeping
  // worker or a sleeping caller. (With the mutex taken on every entry and exit an empty region cost
  // 0.47-0.96 us on a 2-core guest, about 20 of them per decoded token.) The region's parameters are
  // written only while it is closed and no worker is inside: a worker counts itself in active_ and then
  // checks that the region it saw is still open, so the caller, which closes the region before it waits
  // for active_ to reach 0, either sees it counted or it sees the region closed and leaves untouched.
  void launch(int tasks, void (*fn)(void*, int), void* ctx, bool own) {
    std::lock_guard<std::mutex> serial(launch_mutex_); // one parallel region at a time
    fn_ = fn;
    ctx_ = ctx;
    tasks_ = tasks;
    own_ = own;
    next_.store(0, std::memory_order_relaxed);
    remaining_.store(tasks, std::memory_order_relaxed);
    const std::uint64_t open = region_.load(std::memory_order_relaxed) + 1;
    region_.store(open); // (seq_cst: ordered with the load of sleepers_ below, as a sleeper orders its two)
    if (sleepers_.load() != 0) {
      std::lock_guard<std::mutex> lk(m_); // (a sleeper checks region_ under it)
      wake_.notify_all();
    }
    work();
    // The others' tasks are short where they are many (a decode step): wait for them spinning a
    // little before sleeping on the condition variable (waking from it takes microseconds).
    for (int spin = 0; spin < 4096 && remaining_.load(std::memory_order_acquire) != 0; ++spin) pause();
    if (remaining_.load(std::memory_order_acquire) != 0) {
      caller_waits_.store(true);
      std::unique_lock<std::mutex> lk(m_);
      done_.wait(lk, [&] { return remaining_.load() == 0; });
      caller_waits_.store(false, std::memory_order_relaxed);
    }
    region_.store(open + 1);
    // Those still inside have finished their tasks and are on their way out.
    for (int spin = 1; active_.load() != 0; ++spin)
      if (spin % 1024 == 0) std::this_thread::yield(); // (one was preempted between its two checks)
      else pause();
  }
  void finish_task() {
    if (remaining_.fetch_sub(1) == 1 && caller_waits_.load()) {
      std::lock_guard<std::mutex> lk(m_);
      done_.notify_all();
    }
  }
  void work() {
    inside_task_ = true;
    if (own_) {
      fn_(ctx_, index_);
      finish_task();
    } else {
      for (int t; (t = next_.fetch_add(1)) < tasks_;) {
        fn_(ctx_, t);
        finish_task();
      }
    }
    inside_task_ = false;
  }
  void loop() {
    std::uint64_t seen = 0; // the last region this worker entered
    auto fresh = [&](std::uint64_t r) { return (r & 1) != 0 && r != seen; };
    for (;;) {
      // Spin a little before sleeping: a model runs one parallel region after another, and a worker
      // woken through the condition variable starts tens of microseconds late (a sixth of a 16-token
      // MiniLM pass was the kernel's wake-ups). After TENFOLD_POOL_SPIN_US without work it sleeps.
      // It yields its core now and then: with more threads than cores, the thread that owns a region's
      // task i (run_on_own_threads) may be waiting for one (4 threads on 2 cores: ~220 us a region
      // without the yield, 13-30 us with it; nothing measurable with a core each: bench/RESULTS.md).
      std::uint64_t r = region_.load(std::memory_order_acquire);
      const auto give_up = std::chrono::steady_clock::now() + spin_time;
      for (int spin = 1; !fresh(r) && !stop_.load(std::memory_order_relaxed); ++spin) {
        pause();
        if (spin % 64 == 0) {
          std::this_thread::yield();
          if (std::chrono::steady_clock::now() > give_up) {
            std::unique_lock<std::mutex> lk(m_);
            sleepers_.fetch_add(1);
            wake_.wait(lk, [&] { return stop_.load() || fresh(r = region_.load()); });
            sleepers_.fetch_sub(1);
            break;
          }
        }
        r = region_.load(std::memory_order_acquire);
      }
      if (stop_.load()) return;
      active_.fetch_add(1);
      if (region_.load() == r) { // still open: the caller waits for this worker before it closes
        seen = r;
        work();
      }
      active_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex launch_mutex_, m_;
  std::condition_variable wake_, done_;
  // The region's parameters (written by the caller while the region is closed and no worker is inside).
  void (*fn_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int tasks_ = 0;
  bool own_ = false; // this region's task i runs on thread i (run_on_own_threads)
  std::atomic<std::uint64_t> region_{0}; // odd while a region is open
  std::atomic<int> next_{0}, remaining_{0};
  std::atomic<int> active_{0}; // workers inside the open region
  std::atomic<int> sleepers_{0}; // workers asleep on wake_
  std::atomic<bool> caller_waits_{false}; // the caller asleep on done_
  std::atomic<bool> stop_{false};
  static constexpr auto spin_time = std::chrono::microseconds(TENFOLD_POOL_SPIN_US);
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }
  static inline thread_local bool inside_task_ = false;
  static inline thread_local int index_ = 0; // this thread's place in the pool (0: any caller)
};

// Splits [0, n) into at most one chunk per thread (each a multiple of `align`, at least `grain` long)
// and calls body(begin, end) for each.
template <class Body>
void parallel_for(index_t n, index_t grain, index_t align, Body&& body) {
  auto& pool = thread_pool::instance();
  const index_t max_chunks = std::max<index_t>(1, n / std::max<index_t>(grain, 1));
  const int chunks = int(std::min<index_t>(pool.size(), max_chunks));
  if (chunks <= 1) {
    body(index_t(0), n);
    return;
  }
  index_t step = (n + chunks - 1) / chunks;
  step = (step + align - 1) / align * align;
  auto task = [&](int t) {
    const index_t b = std::min(n, t * step), e = std::min(n, b + step);
    if (b < e) body(b, e);
  };
  pool.run(chunks, task);
}

// Flush denormal floats to zero (FTZ: results below FLT_MIN / DBL_MIN become 0; DAZ: such inputs are read
// as 0) on the calling thread and on every thread of the pool, or stop doing so (on = false). x86 only
// (MXCSR); returns false elsewhere, changing nothing. Opt-in, as PyTorch's set_flush_denormal: it changes
// results only below the smallest normal number, but each operation on a denormal takes a microcode
// assist, ~100x a plain one. Training with Adam meets them: a weight whose gradient stays 0 (a unit that
// never fires) has its first moment multiplied by 0.9 every step, denormal after ~800 steps, and then
// its update pass slows down (examples/fashion_mnist: the dense layer's Adam pass took 10% of three
// epochs' samples against 1.6% with them flushed, epochs 2-4 4.0 s against 3.2-3.5 s). Threads the pool
// makes later inherit the setting from the thread that made them.
inline bool flush_denormals(bool on = true) {
#if defined(__SSE__) || defined(_M_X64)
  constexpr unsigned bits = 0x8040; // FTZ (bit 15) | DAZ (bit 6)
  auto set = [on] { _mm_setcsr(on ? _mm_getcsr() | bits : _mm_getcsr() & ~bits); };
  thread_pool::instance().on_each_thread(set); // (the calling thread included)
  return true;
#else
  (void)on;
  return false;
#endif
}
} // namespace tenfold::cpu
