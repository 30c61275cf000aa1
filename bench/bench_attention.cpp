// Attention: tenfold's tiled attention (online softmax, no Sq x Sk scores) against the materialised
// formula softmax(q kᵀ · scale) v written in tenfold (matmul, row-fused softmax, matmul, its arena
// planned and allocated once), the same formula on OpenBLAS (two sgemm per head around a scalar
// softmax), and naive loops; plus the machine's FMA peak measured in the same run.
//
// Shapes (B·H, S, D), f32, self-attention (Sq = Sk = S, Dv = D), causal and not. Names are
// attention/<impl>/bh<B·H>_s<S>_d<D>[_causal]; each reports "flops" as a rate: 4·B·H·S²·D per
// iteration, half of it for causal (the work a causal kernel can skip; the materialised versions do
// the full products and mask the scores, so their rate is counted on the same half).
//
// Threads: tenfold's pool reads TENFOLD_NUM_THREADS once per process, so bench/run_attention.sh runs
// this binary once per thread count, and OpenBLAS gets the same count. With one thread the time is the
// benchmark thread's CPU time (robust to other users of the machine); with more it is wall time.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include "fma_peak.hpp"

namespace tf = tenfold;
using tf::index_t;

namespace {

int bench_threads() {
  const char* e = std::getenv("TENFOLD_NUM_THREADS");
  return e && std::atoi(e) > 0 ? std::atoi(e) : int(tf::cpu::thread_pool::instance().size());
}

template <class T, class S>
void fill_uniform(tf::Tensor<T, S>& t, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = T(-1.0f + 2.0f * float(s >> 40) * 0x1p-24f);
  }
}

void set_rate(benchmark::State& st, double flops) {
  st.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// OpenBLAS's idle workers spin for a while after each call: let them sleep before timing anyone else.
void let_openblas_workers_sleep() {
  if (tf::cpu::thread_pool::instance().size() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

template <index_t BH, index_t S, index_t D>
struct operands {
  tf::Tensor<float, tf::shape<BH, S, D>> q, k, v, o;
  tf::Tensor<float, tf::shape<S, S>> mask; // 0 where a key is visible, -inf where causal hides it
  operands() {
    fill_uniform(q, 1), fill_uniform(k, 2), fill_uniform(v, 3);
    for (index_t i = 0; i < S; ++i)
      for (index_t j = 0; j < S; ++j) mask(i, j) = j <= i ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  static operands& get() {
    static operands x;
    return x;
  }
};

template <index_t BH, index_t S, index_t D>
constexpr double flops(bool causal) {
  return 4.0 * BH * double(S) * S * D * (causal ? 0.5 : 1.0);
}

template <index_t BH, index_t S, index_t D, bool Causal>
void bm_tiled(benchmark::State& st) {
  auto& x = operands<BH, S, D>::get();
  let_openblas_workers_sleep();
  for (auto _ : st) {
    if constexpr (Causal) x.o = tf::attention(x.q, x.k, x.v, tf::causal);
    else x.o = tf::attention(x.q, x.k, x.v);
    benchmark::DoNotOptimize(x.o.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, flops<BH, S, D>(Causal));
}

// The formula as a user writes it in tenfold; its scores and probabilities live in a planned arena,
// allocated once outside the timed loop.
template <index_t BH, index_t S, index_t D, bool Causal>
void bm_formula(benchmark::State& st) {
  auto& x = operands<BH, S, D>::get();
  const float scale = 1.0f / std::sqrt(float(D));
  auto expr = [&] {
    if constexpr (Causal) return tf::matmul(tf::softmax(tf::matmul(x.q, tf::swapaxes<1, 2>(x.k)) * scale + x.mask), x.v);
    else return tf::matmul(tf::softmax(tf::matmul(x.q, tf::swapaxes<1, 2>(x.k)) * scale), x.v);
  };
  using P = tf::arena_plan<decltype(tf::detail::as_node(expr()))>;
  auto* arena = static_cast<std::byte*>(::operator new[](P::bytes, std::align_val_t(64)));
  let_openblas_workers_sleep();
  for (auto _ : st) {
    tf::eval(x.o, expr(), std::span<std::byte>(arena, P::bytes));
    benchmark::DoNotOptimize(x.o.data());
    benchmark::ClobberMemory();
  }
  ::operator delete[](arena, std::align_val_t(64));
  st.counters["arena_MiB"] = double(P::bytes) / (1 << 20);
  set_rate(st, flops<BH, S, D>(Causal));
}

// Per head: S = scale · Q Kᵀ (sgemm), masked row softmax, O = P V (sgemm).
template <index_t BH, index_t S, index_t D, bool Causal>
void bm_openblas(benchmark::State& st) {
  auto& x = operands<BH, S, D>::get();
  std::vector<float> p(static_cast<std::size_t>(S * S));
  const float scale = 1.0f / std::sqrt(float(D));
  for (auto _ : st) {
    for (index_t h = 0; h < BH; ++h) {
      const float* q = x.q.data() + h * S * D;
      const float* k = x.k.data() + h * S * D;
      const float* v = x.v.data() + h * S * D;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, D, scale, q, D, k, D, 0.0f, p.data(), S);
      for (index_t i = 0; i < S; ++i) {
        float* r = p.data() + i * S;
        const index_t n = Causal ? i + 1 : S;
        float m = r[0];
        for (index_t j = 1; j < n; ++j) m = std::max(m, r[j]);
        float z = 0;
        for (index_t j = 0; j < n; ++j) z += r[j] = std::exp(r[j] - m);
        const float inv = 1.0f / z;
        for (index_t j = 0; j < n; ++j) r[j] *= inv;
        for (index_t j = n; j < S; ++j) r[j] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, D, S, 1.0f, p.data(), S, v, D, 0.0f, x.o.data() + h * S * D, D);
    }
    benchmark::DoNotOptimize(x.o.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, flops<BH, S, D>(Causal));
}

// Naive loops: one row of scores at a time, single-threaded.
template <index_t BH, index_t S, index_t D, bool Causal>
void bm_naive(benchmark::State& st) {
  auto& x = operands<BH, S, D>::get();
  std::vector<float> p(S), acc(D);
  const float scale = 1.0f / std::sqrt(float(D));
  for (auto _ : st) {
    for (index_t h = 0; h < BH; ++h)
      for (index_t i = 0; i < S; ++i) {
        const float* q = x.q.data() + (h * S + i) * D;
        const index_t n = Causal ? i + 1 : S;
        float m = -std::numeric_limits<float>::infinity();
        for (index_t j = 0; j < n; ++j) {
          const float* k = x.k.data() + (h * S + j) * D;
          float s = 0;
          for (index_t d = 0; d < D; ++d) s += q[d] * k[d];
          p[j] = s * scale;
          m = std::max(m, p[j]);
        }
        float z = 0;
        for (index_t j = 0; j < n; ++j) z += p[j] = std::exp(p[j] - m);
        for (index_t d = 0; d < D; ++d) acc[d] = 0;
        for (index_t j = 0; j < n; ++j) {
          const float* v = x.v.data() + (h * S + j) * D;
          for (index_t d = 0; d < D; ++d) acc[d] += p[j] * v[d];
        }
        float* o = x.o.data() + (h * S + i) * D;
        for (index_t d = 0; d < D; ++d) o[d] = acc[d] / z;
      }
    benchmark::DoNotOptimize(x.o.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, flops<BH, S, D>(Causal));
}

// ---- backward ----
// The gradient of sum(attention(q, k, v) · r) with respect to x = [q; k; v] ([3, B·H, S, D]), one
// expression as a training step evaluates it: tenfold's flash-style backward pass (the scores recomputed
// block by block, core/attention_grad_node.hpp), and at the smallest shape the backward pass autodiff
// builds from the formula (softmax(q kᵀ · scale + mask) v), which is pathologically slow (see below).
// "flops": 10·B·H·S²·D per iteration (five S x S x D products: the scores again, dP, dV, dQ and dK; half
// for causal), as FlashAttention-2 counts its backward pass.
template <index_t BH, index_t S, index_t D>
struct grad_operands {
  tf::Tensor<float, tf::shape<3, BH, S, D>> x, dx;
  tf::Tensor<float, tf::shape<BH, S, D>> r;
  tf::Tensor<float, tf::shape<S, S>> mask;
  grad_operands() {
    fill_uniform(x, 4), fill_uniform(r, 5);
    for (index_t i = 0; i < S; ++i)
      for (index_t j = 0; j < S; ++j) mask(i, j) = j <= i ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  static grad_operands& get() {
    static grad_operands g;
    return g;
  }
};

template <index_t BH, index_t S, index_t D, bool Causal, bool Flash>
void bm_backward(benchmark::State& st) {
  auto& g = grad_operands<BH, S, D>::get();
  const float scale = 1.0f / std::sqrt(float(D));
  auto part = [](const auto& x, auto i) {
    constexpr index_t I = decltype(i)::value;
    return tf::reshape<BH, S, D>(tf::slice<tf::range<I, I + 1>, tf::whole, tf::whole, tf::whole>(x));
  };
  auto loss = [&](const auto& x) {
    const auto q = part(x, std::integral_constant<index_t, 0>{}), k = part(x, std::integral_constant<index_t, 1>{}),
               v = part(x, std::integral_constant<index_t, 2>{});
    if constexpr (Flash) {
      if constexpr (Causal) return tf::sum(tf::attention(q, k, v, tf::causal) * g.r);
      else return tf::sum(tf::attention(q, k, v) * g.r);
    } else {
      auto s = tf::matmul(q, tf::swapaxes<1, 2>(k)) * scale;
      if constexpr (Causal) return tf::sum(tf::matmul(tf::softmax(s + g.mask), v) * g.r);
      else return tf::sum(tf::matmul(tf::softmax(s), v) * g.r);
    }
  };
  auto [value, dx] = tf::value_and_grad(loss, g.x);
  using P = tf::arena_plan<decltype(tf::detail::as_node(dx))>;
  auto* arena = static_cast<std::byte*>(::operator new[](P::bytes, std::align_val_t(64)));
  let_openblas_workers_sleep();
  for (auto _ : st) {
    tf::eval(g.dx, dx, std::span<std::byte>(arena, P::bytes));
    benchmark::DoNotOptimize(g.dx.data());
    benchmark::ClobberMemory();
  }
  ::operator delete[](arena, std::align_val_t(64));
  st.counters["arena_MiB"] = double(P::bytes) / (1 << 20);
  set_rate(st, 2.5 * flops<BH, S, D>(Causal));
}

// Peak: the FMA loop of bench/fma_peak.hpp, one per pool thread.
void bm_peak(benchmark::State& st) {
  auto& pool = tf::cpu::thread_pool::instance();
  auto task = [](int t) { tenfold_bench::fma_loop(float(t)); };
  let_openblas_workers_sleep();
  for (auto _ : st) pool.run(pool.size(), task);
  set_rate(st, tenfold_bench::fma_peak_flops(int(pool.size())));
}

template <index_t BH, index_t S, index_t D, bool Causal>
void add_case(bool single) {
  const std::string label = "bh" + std::to_string(BH) + "_s" + std::to_string(S) + "_d" + std::to_string(D) + (Causal ? "_causal" : "");
  auto reg = [&](const char* impl, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark(("attention/" + std::string(impl) + "/" + label).c_str(), fn);
    if (!single) b->UseRealTime();
  };
  reg("tiled", bm_tiled<BH, S, D, Causal>);
  reg("backward_flash", bm_backward<BH, S, D, Causal, true>);
  // The formula's backward pass took 3.8 s per iteration already at (48, 64, 32) (2026-11-27: something
  // in the gradient of the softmax formula is recomputed per element): only there, as a marker.
  if constexpr (S <= 64) reg("backward_formula", bm_backward<BH, S, D, Causal, false>);
  reg("formula", bm_formula<BH, S, D, Causal>);
  reg("openblas", bm_openblas<BH, S, D, Causal>);
  if (single) reg("naive", bm_naive<BH, S, D, Causal>);
}
template <index_t BH, index_t S, index_t D>
void add_shape(bool single) {
  add_case<BH, S, D, false>(single);
  add_case<BH, S, D, true>(single);
}
} // namespace

int main(int argc, char** argv) {
  const int threads = bench_threads();
  openblas_set_num_threads(threads);
  const bool single = threads == 1;
  std::printf("threads: tenfold %d, openblas %d\n", int(tf::cpu::thread_pool::instance().size()), openblas_get_num_threads());
  auto* peak = benchmark::RegisterBenchmark("attention/peak/fma", bm_peak);
  if (!single) peak->UseRealTime();
  add_shape<48, 64, 32>(single); // examples/decoder's attention: batch 12 x 4 heads, context 64
  add_shape<8, 128, 64>(single);
  add_shape<8, 512, 64>(single);
  add_shape<4, 1024, 64>(single);
  add_shape<2, 2048, 128>(single);
  benchmark::AddCustomContext("fma_peak", tenfold_bench::fma_peak_description());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
