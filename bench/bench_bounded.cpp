// What an upto<N> extent saves: the MLP half of a pre-norm decoder block (rms_norm, x W1, gelu, W2,
// residual; width 128, hidden 512, the decoder example's sizes) over a [upto<64>, 128] activation at
// run-time lengths 1 to 64, against the same block over a static [64, 128] one. A prefill of n tokens
// should cost about n / 64 of the static one (plus reading the weights once), and the bounded block at
// its capacity the same as the static block (the run-time bounds cost nothing measurable).
//   build-bench/bench/tenfold_bench_bounded --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <tenfold/tenfold.hpp>

namespace tf = tenfold;
using tf::index_t;
using tf::shape;
using tf::Tensor;
using tf::upto;

namespace {
constexpr index_t T = 64, C = 128, H = 512;

struct weights {
  Tensor<float, shape<C>> g;
  Tensor<float, shape<C, H>> w1;
  Tensor<float, shape<H>> b1;
  Tensor<float, shape<H, C>> w2;
  weights() {
    tf::rng r(3);
    g = tf::uniform<shape<C>>(r) + 0.5f;
    w1 = tf::normal<shape<C, H>>(r) * 0.08f, b1 = tf::normal<shape<H>>(r) * 0.01f;
    w2 = tf::normal<shape<H, C>>(r) * 0.04f;
  }
};

template <class X, class Y>
void block(const weights& w, const X& x, Y& y) {
  y = tf::matmul(tf::gelu(tf::matmul(tf::rms_norm(x, w.g), w.w1) + w.b1), w.w2) + x;
}

void static_rows(benchmark::State& state) {
  const weights w;
  tf::rng r(4);
  const Tensor<float, shape<T, C>> x = tf::normal<shape<T, C>>(r);
  Tensor<float, shape<T, C>> y;
  for (auto _ : state) {
    block(w, x, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["rows"] = double(T);
}

void bounded_rows(benchmark::State& state) {
  const weights w;
  tf::rng r(4);
  const Tensor<float, shape<T, C>> full = tf::normal<shape<T, C>>(r);
  Tensor<float, shape<upto<T>, C>> x, y;
  std::copy(full.begin(), full.end(), x.begin());
  x.set_length(state.range(0));
  for (auto _ : state) {
    block(w, x, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["rows"] = double(state.range(0));
}
} // namespace

BENCHMARK(static_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(bounded_rows)->Arg(1)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
