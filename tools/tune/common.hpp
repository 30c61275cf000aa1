#pragma once
// What tools/tune's searches share: operands aligned as a Tensor holds them, and timing.
#include <tenfold/tenfold.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <utility>
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

// The destination leaf of y and the root of e, prepared as tenfold::eval prepares them (for an
// expression that needs no arena): a search then calls the kernel eval would call, with its own
// configuration.
template <class Y, class E>
auto prepared_for(Y& y, E&& e) {
  namespace tf = tenfold;
  auto root = tf::detail::expand_to<typename Y::shape_type>(tf::detail::as_node(std::forward<E>(e)));
  const auto dst = tf::detail::as_destination(y);
  using P = tf::arena_plan<decltype(root), std::remove_const_t<decltype(dst)>>;
  static_assert(P::bytes == 0, "tools/tune: this expression needs an arena");
  tf::cpu::arena_buffers slots{nullptr, P::offsets.data(), P::buffers};
  return std::pair{dst, tf::plan::prepare_root(std::move(root), slots)};
}

// Rows x and a norm's gamma and beta from a linear congruential generator seeded by `seed`: x in [-8, 8),
// gamma in [0.5, 1.5), beta in [-0.5, 0.5) (the row searches' inputs).
template <class X, class G>
void fill_rows(X& x, G& gamma, G& beta, std::uint64_t seed) {
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return float(seed >> 40) * 0x1p-24f;
  };
  for (auto& v : x) v = next() * 16 - 8;
  for (auto& v : gamma) v = next() + 0.5f;
  for (auto& v : beta) v = next() - 0.5f;
}

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

// A candidate configuration leaves the defaults only where it is at least this much faster, and is out
// where it is this much slower on any shape.
inline constexpr double keep_threshold = 1.05;

// The search's score of a candidate over a set of shapes: the geometric mean of its time over the
// defaults' (`base`), or infinity where it is wrong on a shape (`correct(i)` false, counted in `rejected`)
// or more than keep_threshold slower on one (no shape is traded for another).
template <class Correct, class Seconds>
double score_candidate(const std::vector<double>& base, Correct&& correct, Seconds&& seconds, int& rejected) {
  double log_sum = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (!correct(i)) {
      ++rejected;
      return double(INFINITY);
    }
    const double ratio = seconds(i) / base[i];
    if (ratio > keep_threshold) return double(INFINITY);
    log_sum += std::log(ratio);
  }
  return std::exp(log_sum / double(base.size()));
}

// The winner against the defaults once more, alternated, on every shape: the median of `reps` paired
// ratios (the defaults' seconds over the winner's) per shape, their geometric mean over the shapes and
// the worst shape's; kept only where the mean is at least keep_threshold and no shape's median is more
// than keep_threshold slower, so that a virtual machine's noise (+-30% from run to run on the bench
// machines) does not move a table off the defaults.
struct confirmation {
  double speedup = 1, worst = 1;
  bool kept = false;
  std::vector<double> per_shape; // each shape's median ratio
};
template <class DefaultSeconds, class WinnerSeconds>
confirmation confirm_winner(std::size_t shapes, int reps, DefaultSeconds&& t_default, WinnerSeconds&& t_winner) {
  double log_sum = 0, worst = INFINITY;
  std::vector<double> per_shape;
  for (std::size_t i = 0; i < shapes; ++i) {
    std::vector<double> ratios;
    for (int rep = 0; rep < reps; ++rep) {
      const double d = t_default(i);
      ratios.push_back(d / t_winner(i));
    }
    std::sort(ratios.begin(), ratios.end());
    log_sum += std::log(ratios[ratios.size() / 2]);
    worst = std::min(worst, ratios[ratios.size() / 2]);
    per_shape.push_back(ratios[ratios.size() / 2]);
  }
  confirmation c{std::exp(log_sum / double(shapes)), worst, false, per_shape};
  c.kept = c.speedup >= keep_threshold && c.worst * keep_threshold >= 1.0;
  return c;
}

// What a search of one configuration type found (the attention's, the convolutions').
template <class Config>
struct search_result {
  Config best;  // what the table gets: the search's winner, or the defaults
  Config found; // the search's winner
  double speedup = 1, worst = 1;
  int tried = 0, rejected = 0;
  std::string per_shape; // the winner's median ratio to the defaults on each measurement
  bool taken() const { return !(best == Config{}); }
  bool off_defaults() const { return !(found == Config{}); }
};

// The search's winner against the defaults (confirm_winner) over `measured` timings, into r; name(i):
// measurement i's label.
template <class Config, class DefaultSeconds, class WinnerSeconds, class Name>
void confirm_into(search_result<Config>& r, const Config& best, std::size_t measured, int reps, DefaultSeconds&& t_default,
                  WinnerSeconds&& t_winner, Name&& name) {
  if (best == Config{}) return;
  const confirmation c = confirm_winner(measured, reps, t_default, t_winner);
  r.found = best, r.speedup = c.speedup, r.worst = c.worst;
  if (c.kept) r.best = best;
  for (std::size_t i = 0; i < measured; ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "%s%s %.3f", i ? ", " : "", name(i).c_str(), c.per_shape[i]);
    r.per_shape += line;
  }
}
} // namespace tune
