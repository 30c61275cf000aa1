// conv2d: tenfold (implicit im2col on its GEMM) against the classic explicit im2col + OpenBLAS
// cblas_sgemm and naive loops, on the same buffers and in the same process, plus the machine's peak
// from the FMA loop (bench/fma_peak.hpp), so that "% of peak" and the ratios survive a shared machine.
//
// Cases: the conv layers of a small CNN on 28x28 inputs (3x3, padding 1, stride 1, f32):
//   c1: 1 -> 32 at 28x28,  c2: 32 -> 64 at 28x28,  c3: 32 -> 64 at 14x14 (after a 2x2 pool)
// at batch 1 and 32, NCHW (weights [OC, C, 3, 3]) and NHWC (weights [3, 3, C, OC]). Names are
// conv/<impl>/<layer>_<layout>_b<batch>; each reports "flops" = 2 N OH OW OC C KH KW per iteration (a rate).
// im2col + sgemm: NCHW per image, W[OC, 9C] x col[9C, OH*OW] (Caffe's scheme); NHWC one product
// col[N*OH*OW, 9C] x W[9C, OC]; the im2col pass is timed with it. Naive loops run at batch 1 only
// (a batch-32 layer takes seconds). Eigen: Debian's libeigen3-dev has no SpatialConvolution (it is
// TensorFlow's header), and Tensor::convolve has no channel contraction, so Eigen is not a peer here.
//
// Threads: as bench_gemm (bench/run_conv.sh runs the binary once per TENFOLD_NUM_THREADS; OpenBLAS gets
// the same count; CPU time with one thread, wall time with more).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <tenfold/tenfold.hpp>

#include "fma_peak.hpp"

namespace tf = tenfold;
using tf::index_t;

namespace {

int bench_threads() {
  const char* e = std::getenv("TENFOLD_NUM_THREADS");
  return e && std::atoi(e) > 0 ? std::atoi(e) : int(tf::cpu::thread_pool::instance().size());
}
void let_openblas_workers_sleep() {
  if (tf::cpu::thread_pool::instance().size() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}
void set_rate(benchmark::State& st, double flops) {
  st.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}
template <class T, class S>
void fill_uniform(tf::Tensor<T, S>& t, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = T(-1.0f + 2.0f * float(s >> 40) * 0x1p-24f);
  }
}

constexpr index_t KS = 3, PAD = 1;

template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
struct layer {
  using xs = std::conditional_t<Nhwc, tf::shape<N, HW, HW, C>, tf::shape<N, C, HW, HW>>;
  using ws = std::conditional_t<Nhwc, tf::shape<KS, KS, C, OC>, tf::shape<OC, C, KS, KS>>;
  using ys = std::conditional_t<Nhwc, tf::shape<N, HW, HW, OC>, tf::shape<N, OC, HW, HW>>;
  static constexpr double flops = 2.0 * N * HW * HW * OC * C * KS * KS;
  static constexpr index_t K = C * KS * KS;
  tf::Tensor<float, xs> x;
  tf::Tensor<float, ws> w;
  tf::Tensor<float, ys> y;
  std::vector<float> col; // explicit im2col for the OpenBLAS peer
  layer() : col(std::size_t(Nhwc ? N * HW * HW * K : HW * HW * K)) { fill_uniform(x, 1), fill_uniform(w, 2); }
  static layer& get() {
    static layer l;
    return l;
  }
};

template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
void bm_tenfold(benchmark::State& st) {
  auto& l = layer<Nhwc, N, C, OC, HW>::get();
  let_openblas_workers_sleep();
  for (auto _ : st) {
    if constexpr (Nhwc) tf::eval(l.y, tf::conv2d(l.x, l.w, tf::padding<PAD>, tf::nhwc));
    else tf::eval(l.y, tf::conv2d(l.x, l.w, tf::padding<PAD>));
    benchmark::DoNotOptimize(l.y.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, layer<Nhwc, N, C, OC, HW>::flops);
}

template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
void bm_openblas(benchmark::State& st) {
  using L = layer<Nhwc, N, C, OC, HW>;
  auto& l = L::get();
  constexpr index_t K = L::K, P = HW * HW;
  let_openblas_workers_sleep();
  for (auto _ : st) {
    float* col = l.col.data();
    const float* x = l.x.data();
    if constexpr (Nhwc) {
      // col[(n, oh, ow), (kh, kw, c)]: one row per output position, runs of C channels.
      for (index_t n = 0; n < N; ++n)
        for (index_t oh = 0; oh < HW; ++oh)
          for (index_t ow = 0; ow < HW; ++ow) {
            float* row = col + ((n * HW + oh) * HW + ow) * K;
            for (index_t kh = 0; kh < KS; ++kh)
              for (index_t kw = 0; kw < KS; ++kw, row += C) {
                const index_t ih = oh - PAD + kh, iw = ow - PAD + kw;
                if (ih < 0 || ih >= HW || iw < 0 || iw >= HW) std::fill(row, row + C, 0.0f);
                else std::copy(x + ((n * HW + ih) * HW + iw) * C, x + ((n * HW + ih) * HW + iw) * C + C, row);
              }
          }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N * P, OC, K, 1.0f, col, K, l.w.data(), OC, 0.0f, l.y.data(), OC);
    } else {
      for (index_t n = 0; n < N; ++n) {
        // col[(c, kh, kw), (oh, ow)]: one row per tap, a shifted copy of an input plane.
        for (index_t c = 0; c < C; ++c)
          for (index_t kh = 0; kh < KS; ++kh)
            for (index_t kw = 0; kw < KS; ++kw) {
              float* row = col + ((c * KS + kh) * KS + kw) * P;
              const float* plane = x + (n * C + c) * P;
              for (index_t oh = 0; oh < HW; ++oh) {
                const index_t ih = oh - PAD + kh;
                for (index_t ow = 0; ow < HW; ++ow) {
                  const index_t iw = ow - PAD + kw;
                  row[oh * HW + ow] = ih < 0 || ih >= HW || iw < 0 || iw >= HW ? 0.0f : plane[ih * HW + iw];
                }
              }
            }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, OC, P, K, 1.0f, l.w.data(), K, col, P, 0.0f, l.y.data() + n * OC * P, P);
      }
    }
    benchmark::DoNotOptimize(l.y.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, L::flops);
}

template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
void bm_naive(benchmark::State& st) {
  using L = layer<Nhwc, N, C, OC, HW>;
  auto& l = L::get();
  const float* x = l.x.data();
  const float* w = l.w.data();
  for (auto _ : st) {
    float* y = l.y.data();
    for (index_t n = 0; n < N; ++n)
      for (index_t oc = 0; oc < OC; ++oc)
        for (index_t oh = 0; oh < HW; ++oh)
          for (index_t ow = 0; ow < HW; ++ow) {
            float acc = 0;
            for (index_t c = 0; c < C; ++c)
              for (index_t kh = 0; kh < KS; ++kh)
                for (index_t kw = 0; kw < KS; ++kw) {
                  const index_t ih = oh - PAD + kh, iw = ow - PAD + kw;
                  if (ih < 0 || ih >= HW || iw < 0 || iw >= HW) continue;
                  acc += Nhwc ? x[((n * HW + ih) * HW + iw) * C + c] * w[((kh * KS + kw) * C + c) * OC + oc]
                              : x[((n * C + c) * HW + ih) * HW + iw] * w[((oc * C + c) * KS + kh) * KS + kw];
                }
            y[Nhwc ? ((n * HW + oh) * HW + ow) * OC + oc : ((n * OC + oc) * HW + oh) * HW + ow] = acc;
          }
    benchmark::DoNotOptimize(l.y.data());
    benchmark::ClobberMemory();
  }
  set_rate(st, L::flops);
}

void bm_peak(benchmark::State& st) {
  auto& pool = tf::cpu::thread_pool::instance();
  auto task = [](int t) { tenfold_bench::fma_loop(float(t)); };
  let_openblas_workers_sleep();
  for (auto _ : st) pool.run(pool.size(), task);
  set_rate(st, tenfold_bench::fma_peak_flops(int(pool.size())));
}

template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
void add_case(const char* name, bool single) {
  const std::string label = std::string(name) + (Nhwc ? "_nhwc" : "_nchw") + "_b" + std::to_string(N);
  auto reg = [&](const char* impl, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark(("conv/" + std::string(impl) + "/" + label).c_str(), fn);
    if (!single) b->UseRealTime();
  };
  reg("tenfold", bm_tenfold<Nhwc, N, C, OC, HW>);
  reg("openblas", bm_openblas<Nhwc, N, C, OC, HW>);
  if (N == 1) reg("naive", bm_naive<Nhwc, N, C, OC, HW>);
}

template <bool Nhwc, index_t N>
void add_layers(bool single) {
  add_case<Nhwc, N, 1, 32, 28>("c1_1to32_28x28", single);
  add_case<Nhwc, N, 32, 64, 28>("c2_32to64_28x28", single);
  add_case<Nhwc, N, 32, 64, 14>("c3_32to64_14x14", single);
}
} // namespace

int main(int argc, char** argv) {
  const int threads = bench_threads();
  openblas_set_num_threads(threads);
  const bool single = threads == 1;
  std::printf("threads: tenfold %d, openblas %d\n", int(tf::cpu::thread_pool::instance().size()), openblas_get_num_threads());
  auto* peak = benchmark::RegisterBenchmark("conv/peak/fma", bm_peak);
  if (!single) peak->UseRealTime();
  add_layers<false, 1>(single);
  add_layers<true, 1>(single);
  add_layers<false, 32>(single);
  add_layers<true, 32>(single);
  benchmark::AddCustomContext("fma_peak", tenfold_bench::fma_peak_description());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
