#pragma once
// What tools/tune's searches share: operands aligned as a Tensor holds them, and timing.
#include <tenfold/tenfold.hpp>

#include <algorithm>
#include <chrono>
#include <new>
#include <vector>

namespace tune {
using tenfold::index_t;
using clock_type = std::chrono::steady_clock;

// The operands as a Tensor holds them: 64-byte aligned (default_alignment). A std::vector's large blocks
// come from mmap 16 bytes past a page start, which puts every row of B across cache lines: there a
// few-rows configuration timed 1.1x faster than the defaults that runs at 0.6x of them on aligned memory
// (bench/RESULTS.md, the Intel model 167 kind).
template <class T>
struct aligned_allocator {
  using value_type = T;
  aligned_allocator() = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(tenfold::default_alignment)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(tenfold::default_alignment)); }
  friend bool operator==(const aligned_allocator&, const aligned_allocator&) { return true; }
};
template <class T>
using aligned_vector = std::vector<T, aligned_allocator<T>>;

// Seconds per call of f: the best of three runs of enough calls to take `min_s` each, after one call to
// warm up (buffers grown, the pool awake).
template <class F>
double seconds_per_call(F&& f, double min_s) {
  f();
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    index_t n = 0;
    const auto t0 = clock_type::now();
    double dt = 0;
    do {
      f();
      ++n;
      dt = std::chrono::duration<double>(clock_type::now() - t0).count();
    } while (dt < min_s);
    best = std::min(best, dt / double(n));
  }
  return best;
}
} // namespace tune
