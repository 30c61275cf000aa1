// The persistent thread pool (cpu/thread_pool.hpp): every task runs exactly once per region, its writes
// are seen by the caller when the region returns, task i of run_on_own_threads runs on the same thread
// every time, and this holds whether the workers are spinning (regions back to back), asleep (a pause
// longer than their spin), slower than the caller (long tasks), nested, or launched from two threads.
// Registered again with TENFOLD_NUM_THREADS=4: more threads than the CI machine's cores.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tenfold/cpu/thread_pool.hpp"

using tenfold::cpu::thread_pool;

namespace {
// Runs `regions` regions of `tasks` tasks; each task adds 1 to its own counter (atomically) and writes
// its region number to a plain int the caller checks after the region returns.
void every_task_once(int tasks, int regions, std::chrono::microseconds pause_between = {},
                     std::chrono::microseconds task_time = {}) {
  auto& pool = thread_pool::instance();
  std::vector<std::atomic<int>> calls(tasks);
  std::vector<int> last(tasks, -1);
  int region = 0;
  auto task = [&](int t) {
    if (task_time.count() > 0) std::this_thread::sleep_for(task_time);
    calls[t].fetch_add(1, std::memory_order_relaxed);
    last[t] = region;
  };
  int wrong = 0;
  for (region = 0; region < regions; ++region) {
    pool.run(tasks, task);
    for (int t = 0; t < tasks; ++t) wrong += last[t] != region || calls[t].load() != region + 1;
    if (pause_between.count() > 0) std::this_thread::sleep_for(pause_between);
  }
  CHECK(wrong == 0);
}
} // namespace

TEST_CASE("thread_pool: every task runs once per region, its writes seen after", "[thread_pool]") {
  for (int tasks : {2, 3, 7, 64}) every_task_once(tasks, 3000);
}

TEST_CASE("thread_pool: regions after the workers fell asleep, and tasks longer than the caller's wait",
          "[thread_pool]") {
  every_task_once(5, 12, std::chrono::microseconds(3000)); // > TENFOLD_POOL_SPIN_US: asleep each time
  every_task_once(3, 6, {}, std::chrono::microseconds(4000)); // the caller sleeps until the last is done
}

TEST_CASE("thread_pool: run_on_own_threads runs task i on one thread, every time", "[thread_pool]") {
  auto& pool = thread_pool::instance();
  const int n = pool.size();
  std::vector<std::thread::id> first(n), now(n);
  std::vector<int> calls(n, 0);
  auto own = [&](int t) {
    now[t] = std::this_thread::get_id();
    ++calls[t];
  };
  pool.run_on_own_threads(own);
  first = now;
  CHECK(first[0] == std::this_thread::get_id()); // task 0: the calling thread
  CHECK(std::set<std::thread::id>(first.begin(), first.end()).size() == std::size_t(n));
  int moved = 0;
  for (int region = 1; region < 3000; ++region) {
    pool.run_on_own_threads(own);
    moved += now != first;
    if (region % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2)); // asleep too
  }
  CHECK(moved == 0);
  for (int t = 0; t < n; ++t) CHECK(calls[t] == 3000);
}

TEST_CASE("thread_pool: a region inside a task runs on that task's thread", "[thread_pool]") {
  auto& pool = thread_pool::instance();
  std::array<std::atomic<int>, 8> inner_calls{};
  std::atomic<int> elsewhere{0};
  auto outer = [&](int t) {
    const auto me = std::this_thread::get_id();
    auto inner = [&](int i) {
      inner_calls[i].fetch_add(1);
      elsewhere += std::this_thread::get_id() != me;
    };
    pool.run(8, inner);
    (void)t;
  };
  for (int region = 0; region < 200; ++region) pool.run(4, outer);
  CHECK(elsewhere.load() == 0);
  for (auto& c : inner_calls) CHECK(c.load() == 200 * 4);
}

TEST_CASE("thread_pool: two threads launching regions at once", "[thread_pool]") {
  auto& pool = thread_pool::instance();
  std::atomic<long> sum{0};
  auto caller = [&] {
    for (int region = 0; region < 2000; ++region) {
      std::array<int, 6> seen{};
      auto task = [&](int t) { seen[t] = t + 1; };
      pool.run(6, task);
      long s = 0;
      for (int v : seen) s += v;
      sum += s;
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  CHECK(sum.load() == 2L * 2000 * 21);
}

TEST_CASE("thread_pool: on_each_thread calls every thread once", "[thread_pool]") {
  auto& pool = thread_pool::instance();
  std::mutex m;
  std::set<std::thread::id> ids;
  int calls = 0;
  auto each = [&] {
    std::lock_guard<std::mutex> lk(m);
    ids.insert(std::this_thread::get_id());
    ++calls;
  };
  pool.on_each_thread(each);
  CHECK(calls == pool.size());
  CHECK(ids.size() == std::size_t(pool.size()));
}
