#pragma once
// Op benchmarks generated from the op table (ops/table.hpp): for every entry of an op list, one benchmark
// per size, named op/<name>/f32/<size>. Operands are f32 drawn from the entry's test domain (so that log
// sees positive inputs and acos stays in [-1, 1]); where's condition is a bool tensor. Counters: bytes_per_second
// (every operand read once plus the result written once, in their own element sizes) and GFLOP/s (from the
// entry's bench_spec.flops per element).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <tenfold/tenfold.hpp>

namespace tenfold_bench {
namespace tf = tenfold;
using tf::index_t;

inline constexpr index_t small_elems = 1024;   // 4 KiB of f32
inline constexpr index_t large_elems = 262144; // 1 MiB of f32
inline const char* size_label(index_t n) { return n == small_elems ? "4KiB" : "1MiB"; }

template <class T, class S>
void fill(tf::Tensor<T, S>& t, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution d(0.5);
    for (auto& v : t) v = d(gen);
  } else {
    // Finite domains only: the table's domains reach 1e6 (log) but never infinity.
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& v : t) v = T(d(gen));
  }
}

template <class Run>
void register_one(const std::string& name, double bytes, double flops, Run run) {
  benchmark::RegisterBenchmark(name.c_str(), [run, bytes, flops](benchmark::State& st) { run(st, bytes, flops); })
      ->UseRealTime()
      ->MinTime(0.05);
}

template <class Body>
void time_loop(benchmark::State& st, double bytes, double flops, Body&& body) {
  body(); // warm
  for (auto _ : st) {
    body();
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(std::int64_t(bytes * double(st.iterations())));
  st.counters["bytes"] = bytes;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * double(st.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// The entry applied to its operands: f32 tensors, except where's condition (a bool tensor).
template <class Op, class F, class C>
auto apply_entry(F& x, F& y, F& z, C& c) {
  if constexpr (Op::arity == 1) return tf::detail::make_map<Op>(x);
  else if constexpr (Op::arity == 2) return tf::detail::make_map<Op>(x, y);
  else if constexpr (std::is_same_v<Op, tf::ops::where>) return tf::detail::make_map<Op>(c, x, y);
  else return tf::detail::make_map<Op>(x, y, z);
}

// Elementwise entries: unary, binary and ternary.
template <class Op, index_t N>
void register_elementwise() {
  using S = tf::shape<N>;
  using F = tf::Tensor<float, S>;
  using C = tf::Tensor<bool, S>;
  using E = decltype(apply_entry<Op>(std::declval<F&>(), std::declval<F&>(), std::declval<F&>(), std::declval<C&>()));
  using R = typename E::value_type;
  constexpr bool cond = std::is_same_v<Op, tf::ops::where>;
  const double bytes =
      double(N) * (double(Op::arity) * sizeof(float) - (cond ? sizeof(float) - sizeof(bool) : 0) + sizeof(R));
  const std::string name = "op/" + std::string(Op::name) + "/f32/" + size_label(N);
  register_one(name, bytes, Op::bench.flops * double(N), [](benchmark::State& st, double b, double f) {
    const auto spec = Op::test;
    const bool two_domains = spec.hi2 > spec.lo2;
    F x, y, z;
    C c;
    tf::Tensor<R, S> out;
    fill(x, spec.lo, spec.hi, 1);
    fill(y, Op::arity == 2 && two_domains ? spec.lo2 : spec.lo, Op::arity == 2 && two_domains ? spec.hi2 : spec.hi, 2);
    fill(z, Op::arity == 3 && two_domains ? spec.lo2 : spec.lo, Op::arity == 3 && two_domains ? spec.hi2 : spec.hi, 3);
    fill(c, 0, 1, 4);
    time_loop(st, b, f, [&] { tf::eval(out, apply_entry<Op>(x, y, z, c)); });
  });
}

// Reduction entries: the whole tensor to one value.
template <class Op, index_t N>
void register_reduction() {
  using S = tf::shape<N>;
  using E = decltype(tf::detail::reduce<Op, false>(std::declval<tf::Tensor<float, S>&>(), tf::axes_t<>{}));
  using R = typename E::value_type;
  const double bytes = double(N) * sizeof(float) + sizeof(R);
  const std::string name = "op/" + std::string(Op::name) + "/f32/" + size_label(N);
  register_one(name, bytes, Op::bench.flops * double(N), [](benchmark::State& st, double b, double f) {
    tf::Tensor<float, S> x;
    tf::Tensor<R> out;
    fill(x, Op::test.lo, Op::test.hi, 1);
    time_loop(st, b, f, [&] {
      tf::eval(out, tf::detail::reduce<Op, false>(x, tf::axes_t<>{}));
      benchmark::DoNotOptimize(out.data()[0]);
    });
  });
}

template <class List>
void register_elementwise_list() {
  List::for_each([]<class Op>() {
    register_elementwise<Op, small_elems>();
    register_elementwise<Op, large_elems>();
  });
}

// One per translation unit (bench_ops_*.cpp), so the three lists compile in parallel.
void register_unary();
void register_binary_ternary();
void register_reductions();
} // namespace tenfold_bench
