// GEMM: tenfold's matmul against OpenBLAS (cblas_sgemm) and Eigen (Matrix product), on the same buffers
// and in the same process, plus the machine's peak measured with an FMA loop in the same run, so that
// "% of peak" and the ratios to the peers survive a noisy, shared machine.
//
// Cases (f32, row-major, C = A B): square n = 4..2048; tall-skinny M = 1..16 with K = N = 4096 (the
// inference case: a few tokens through a weight matrix); the same through a weight stored [N, K], plain
// and prepacked (M = 16 and 64, "_wT" and "_wT-prepacked"); the products of examples/decoder's training
// step (M, K, N of 128 to 768), also with an operand stored transposed as its backward pass reads them
// ("_aT", "_bT"). Names are gemm/<impl>/<case>; each reports
// "flops" (2 M N K per iteration, as a rate: FLOP/s).
//
// Threads: tenfold's pool reads TENFOLD_NUM_THREADS once per process, so bench/run_gemm.sh runs this
// binary once per thread count; OpenBLAS is set to the same count. Eigen (no OpenMP) is single-threaded
// and only runs when the count is 1. With one thread the time is the benchmark thread's CPU time (robust
// to other users of the machine); with more it is wall time.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

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

template <index_t M, index_t K, index_t N>
struct operands {
  tf::Tensor<float, tf::shape<M, K>> a;
  tf::Tensor<float, tf::shape<K, N>> b;
  tf::Tensor<float, tf::shape<M, N>> c;
  operands() { fill_uniform(a, 1), fill_uniform(b, 2); }
  static operands& get() {
    static operands o;
    return o;
  }
};

// OpenBLAS's idle workers spin (sched_yield) for a while after each call; a benchmark that follows one
// would share the cores with them. Waiting first (outside the timed loop) gives every implementation an
// idle machine, as OpenBLAS itself gets (tenfold's pool sleeps on a condition variable at once).
void let_openblas_workers_sleep() {
  if (tf::cpu::thread_pool::instance().size() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

void set_rate(benchmark::State& st, double flops) {
  st.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

template <index_t M, index_t K, index_t N>
void bm_tenfold(benchmark::State& st) {
  auto& o = operands<M, K, N>::get();
  let_openblas_workers_sleep();
  for (auto _ : st) {
    o.c = tf::matmul(o.a, o.b);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}

template <index_t M, index_t K, index_t N>
void bm_openblas(benchmark::State& st) {
  auto& o = operands<M, K, N>::get();
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, o.a.data(), K, o.b.data(), N, 0.0f, o.c.data(), N);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}

template <index_t M, index_t K, index_t N>
void bm_eigen(benchmark::State& st) {
  auto& o = operands<M, K, N>::get();
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> a(o.a.data(), M, K), b(o.b.data(), K, N);
  Eigen::Map<Mat> c(o.c.data(), M, N);
  for (auto _ : st) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}

// The same products with an operand stored transposed, as a training step's backward pass reads them:
// "_aT" C = Aᵀ B with A stored [K, M] (a weight's gradient xᵀ g over the tokens), "_bT" C = A Bᵀ with B
// stored [N, K] (the input's gradient g wᵀ of x w). OpenBLAS runs the same with CblasTrans.
template <index_t M, index_t K, index_t N, bool TA, bool TB>
struct transposed_operands {
  tf::Tensor<float, std::conditional_t<TA, tf::shape<K, M>, tf::shape<M, K>>> a;
  tf::Tensor<float, std::conditional_t<TB, tf::shape<N, K>, tf::shape<K, N>>> b;
  tf::Tensor<float, tf::shape<M, N>> c;
  transposed_operands() { fill_uniform(a, 1), fill_uniform(b, 2); }
  static transposed_operands& get() {
    static transposed_operands o;
    return o;
  }
};
template <index_t M, index_t K, index_t N, bool TA, bool TB>
void bm_tenfold_transposed(benchmark::State& st) {
  auto& o = transposed_operands<M, K, N, TA, TB>::get();
  let_openblas_workers_sleep();
  auto op = [](const auto& t, auto flag) -> decltype(auto) {
    if constexpr (decltype(flag)::value) return tf::transpose(t);
    else return (t);
  };
  for (auto _ : st) {
    o.c = tf::matmul(op(o.a, std::bool_constant<TA>{}), op(o.b, std::bool_constant<TB>{}));
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}
template <index_t M, index_t K, index_t N, bool TA, bool TB>
void bm_openblas_transposed(benchmark::State& st) {
  auto& o = transposed_operands<M, K, N, TA, TB>::get();
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, TA ? CblasTrans : CblasNoTrans, TB ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, o.a.data(),
                TA ? M : K, o.b.data(), TB ? K : N, 0.0f, o.c.data(), N);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}

// A layer as models use it: relu(x wᵀ + b) with w stored [out, in] (PyTorch's layout, B transposed),
// the bias and activation in tenfold's store. OpenBLAS runs the same product (CblasTrans) and then the
// bias + relu as a second pass, which is what a BLAS call leaves to its caller.
template <index_t N>
struct layer_operands {
  tf::Tensor<float, tf::shape<N, N>> x, w, y;
  tf::Tensor<float, tf::shape<N>> bias;
  layer_operands() { fill_uniform(x, 3), fill_uniform(w, 4), fill_uniform(bias, 5); }
  static layer_operands& get() {
    static layer_operands o;
    return o;
  }
};
template <index_t N>
void bm_tenfold_layer(benchmark::State& st) {
  auto& o = layer_operands<N>::get();
  let_openblas_workers_sleep();
  for (auto _ : st) {
    o.y = tf::relu(tf::matmul(o.x, tf::transpose(o.w)) + o.bias);
    benchmark::DoNotOptimize(o.y.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * N * N * N);
}
template <index_t N>
void bm_openblas_layer(benchmark::State& st) {
  auto& o = layer_operands<N>::get();
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, o.x.data(), N, o.w.data(), N, 0.0f, o.y.data(), N);
    float* y = o.y.data();
    const float* b = o.bias.data();
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) y[i * N + j] = std::max(y[i * N + j] + b[j], 0.0f);
    benchmark::DoNotOptimize(o.y.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * N * N * N);
}

// A few rows through a weight stored [N, K] (PyTorch's layout: C = A wᵀ), as inference runs it: tenfold
// with the plain tensor (wᵀ packed on every call, or read in place for a few rows), tenfold with the
// weight Prepacked once (cpu/prepacked.hpp), and OpenBLAS's sgemm with CblasTrans on the same w (it packs
// on every call: BLAS has no packed-operand interface).
template <index_t M, index_t K, index_t N>
struct weight_operands {
  tf::Tensor<float, tf::shape<M, K>> a;
  tf::Tensor<float, tf::shape<N, K>> w;
  tf::Prepacked<float, tf::shape<N, K>> packed;
  tf::Tensor<float, tf::shape<M, N>> c;
  weight_operands() {
    fill_uniform(a, 1), fill_uniform(w, 2);
    packed = w;
  }
  static weight_operands& get() {
    static weight_operands o;
    return o;
  }
};
template <index_t M, index_t K, index_t N, bool Prepacked>
void bm_tenfold_weight(benchmark::State& st) {
  auto& o = weight_operands<M, K, N>::get();
  let_openblas_workers_sleep();
  for (auto _ : st) {
    if constexpr (Prepacked) o.c = tf::matmul(o.a, tf::transpose(o.packed));
    else o.c = tf::matmul(o.a, tf::transpose(o.w));
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}
template <index_t M, index_t K, index_t N>
void bm_openblas_weight(benchmark::State& st) {
  auto& o = weight_operands<M, K, N>::get();
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, o.a.data(), K, o.w.data(), K, 0.0f, o.c.data(), N);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, 2.0 * M * N * K);
}

// Peak: the FMA loop of bench/fma_peak.hpp, one per pool thread.
using tenfold_bench::fma_loop;
void bm_peak(benchmark::State& st) {
  auto& pool = tf::cpu::thread_pool::instance();
  auto task = [](int t) { fma_loop(float(t)); };
  let_openblas_workers_sleep();
  for (auto _ : st) pool.run(pool.size(), task);
  set_rate(st, tenfold_bench::fma_peak_flops(int(pool.size())));
}

template <index_t M, index_t K, index_t N>
void add_case(const char* label, bool single) {
  auto reg = [&](const char* impl, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark((std::string("gemm/") + impl + "/" + label).c_str(), fn);
    if (!single) b->UseRealTime();
  };
  reg("tenfold", bm_tenfold<M, K, N>);
  reg("openblas", bm_openblas<M, K, N>);
  if (single) reg("eigen", bm_eigen<M, K, N>);
}

template <index_t M, index_t K, index_t N, bool TA, bool TB>
void add_transposed_case(const char* label, bool single) {
  auto reg = [&](const char* impl, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark((std::string("gemm/") + impl + "/" + label).c_str(), fn);
    if (!single) b->UseRealTime();
  };
  reg("tenfold", bm_tenfold_transposed<M, K, N, TA, TB>);
  reg("openblas", bm_openblas_transposed<M, K, N, TA, TB>);
}

template <index_t... Ns>
void add_layers(bool single) {
  auto reg = [&](std::string name, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn);
    if (!single) b->UseRealTime();
  };
  ((reg("gemm/tenfold/layer" + std::to_string(Ns), bm_tenfold_layer<Ns>),
    reg("gemm/openblas/layer" + std::to_string(Ns), bm_openblas_layer<Ns>)),
   ...);
}

template <index_t... Ms>
void add_weights(bool single) {
  auto reg = [&](std::string name, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn);
    if (!single) b->UseRealTime();
  };
  ((reg("gemm/tenfold/m" + std::to_string(Ms) + "_k4096_n4096_wT", bm_tenfold_weight<Ms, 4096, 4096, false>),
    reg("gemm/openblas/m" + std::to_string(Ms) + "_k4096_n4096_wT", bm_openblas_weight<Ms, 4096, 4096>),
    reg("gemm/tenfold/m" + std::to_string(Ms) + "_k4096_n4096_wT-prepacked", bm_tenfold_weight<Ms, 4096, 4096, true>),
    reg("gemm/openblas/m" + std::to_string(Ms) + "_k4096_n4096_wT-prepacked", bm_openblas_weight<Ms, 4096, 4096>)),
   ...);
}

template <index_t... Ns>
void add_squares(bool single) {
  (add_case<Ns, Ns, Ns>(("n" + std::to_string(Ns)).c_str(), single), ...);
}
template <index_t... Ms>
void add_skinny(bool single) {
  (add_case<Ms, 4096, 4096>(("m" + std::to_string(Ms) + "_k4096_n4096").c_str(), single), ...);
}
} // namespace

int main(int argc, char** argv) {
  const int threads = bench_threads();
  openblas_set_num_threads(threads);
  const bool single = threads == 1;
  std::printf("threads: tenfold %d, openblas %d\n", int(tf::cpu::thread_pool::instance().size()), openblas_get_num_threads());
  auto* peak = benchmark::RegisterBenchmark("gemm/peak/fma", bm_peak);
  if (!single) peak->UseRealTime();
  add_squares<4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048>(single);
  add_skinny<1, 2, 4, 8, 16>(single);
  add_layers<256, 1024>(single);
  add_weights<4, 8, 16, 64>(single);
  // a transformer's training products at examples/decoder's sizes (12 x 64 tokens, width 128): forward
  // x w (qkv, proj, up, down), and the backward's weight gradient xᵀ g (K = the 768 tokens)
  add_case<768, 128, 384>("m768_k128_n384", single);
  add_case<768, 128, 512>("m768_k128_n512", single);
  add_case<768, 512, 128>("m768_k512_n128", single);
  add_case<128, 768, 384>("m128_k768_n384", single);
  add_case<512, 768, 128>("m512_k768_n128", single);
  // and as the backward pass reads them: the weights' gradients xᵀ g, the inputs' g wᵀ
  add_transposed_case<512, 768, 128, true, false>("m512_k768_n128_aT", single);
  add_transposed_case<128, 768, 512, true, false>("m128_k768_n512_aT", single);
  add_transposed_case<128, 768, 384, true, false>("m128_k768_n384_aT", single);
  add_transposed_case<768, 512, 128, false, true>("m768_k512_n128_bT", single);
  add_transposed_case<768, 128, 512, false, true>("m768_k128_n512_bT", single);
  add_transposed_case<768, 384, 128, false, true>("m768_k384_n128_bT", single);
  benchmark::AddCustomContext("fma_peak", tenfold_bench::fma_peak_description());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
