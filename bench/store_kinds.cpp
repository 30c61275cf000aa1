// What the rows' copy bound is made of: memcpy against a vector loop writing with ordinary stores and
// with streaming (non-temporal) stores, as the evaluator writes (cpu::store_stream), by output size, one
// or two inputs (out = a * 0.5, out = a + b * 0.5), on one thread and on the pool (TENFOLD_NUM_THREADS,
// else every core). bench/run_rows.sh's copy
// bound is memcpy; a loop that computes and stores vectors meets what a vector loop can write.
//   build/bench/tenfold_store_kinds [MiB...]      (default 4 8 16)
// Prints a Markdown table: microseconds per pass (medians of 7 alternated rounds) and the ratio
// ordinary / streaming (above 1: streaming faster). bench/RESULTS.md (fifty-sixth session).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <tenfold/tenfold.hpp>

namespace {
using B = tenfold::cpu::batch<float>;
using tenfold::index_t;

struct buffers {
  float *a, *b, *out;
  index_t n;
  explicit buffers(index_t floats) : n(floats) {
    const std::size_t bytes = std::size_t(floats) * sizeof(float);
    a = static_cast<float*>(std::aligned_alloc(64, bytes)), b = static_cast<float*>(std::aligned_alloc(64, bytes));
    out = static_cast<float*>(std::aligned_alloc(64, bytes));
    for (index_t i = 0; i < floats; ++i) a[i] = float(i % 1000), b[i] = 1.0f, out[i] = 0.0f;
  }
  ~buffers() { std::free(a), std::free(b), std::free(out); }
};

// One pass over [i0, i1): ordinary or streaming stores, one or two inputs.
void pass(const buffers& d, index_t i0, index_t i1, bool stream, int inputs) {
  constexpr index_t W = index_t(B::size);
  for (index_t i = i0; i < i1; i += W) {
    const B x = B::load_aligned(d.a + i);
    const B v = inputs == 2 ? xsimd::fma(B::load_aligned(d.b + i), B(0.5f), x) : x * B(0.5f);
    if (stream) tenfold::cpu::store_stream(d.out + i, v);
    else v.store_aligned(d.out + i);
  }
  if (stream) tenfold::cpu::stream_fence();
}

template <class F>
void on_threads(int threads, index_t n, F&& f) { // one thread, or cut over tenfold's pool
  if (threads == 1) return f(index_t(0), n);
  tenfold::cpu::parallel_for(n, 1, index_t(B::size), f);
}

template <class F>
double micros(F&& f) {
  f();
  const auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  do f(), ++reps;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(40));
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
}
} // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {4, 8, 16};
  std::printf("| output MiB | inputs | threads | touched MiB | memcpy us | ordinary us | streaming us | ordinary / streaming |\n");
  std::printf("|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (int mib : sizes) {
    const buffers d(index_t(mib) << 18);
    for (int inputs : {1, 2})
      for (int threads : {1, tenfold::cpu::thread_pool::instance().size()}) {
        std::vector<double> copy, plain, stream;
        for (int round = 0; round < 7; ++round) {
          copy.push_back(micros([&] { on_threads(threads, d.n, [&](index_t i0, index_t i1) { std::memcpy(d.out + i0, d.a + i0, std::size_t(i1 - i0) * sizeof(float)); }); }));
          plain.push_back(micros([&] { on_threads(threads, d.n, [&](index_t i0, index_t i1) { pass(d, i0, i1, false, inputs); }); }));
          stream.push_back(micros([&] { on_threads(threads, d.n, [&](index_t i0, index_t i1) { pass(d, i0, i1, true, inputs); }); }));
        }
        auto median = [](std::vector<double>& v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
        const double c = median(copy), p = median(plain), s = median(stream);
        std::printf("| %d | %d | %d | %d | %.0f | %.0f | %.0f | %.2f |\n", mib, inputs, threads, mib * (inputs + 1), c, p, s, p / s);
      }
  }
}
