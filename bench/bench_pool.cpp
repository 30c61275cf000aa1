// max_pool2d on [32, 64, 56, 56] (ResNet's first pool: 3x3 stride 2 padding 1; and 2x2 stride 2), NCHW and
// NHWC: tenfold against naive loops (the obvious six nested loops, compiled with the same flags, so the
// compiler may vectorise them) and the copy bound (memcpy of the input to another buffer: a pool reads
// the input once and writes a quarter of it, so it cannot beat one read plus one write of the input by
// much). Every implementation is checked against the naive loops (bit for bit) before it is timed.
//
// Names are pool/layout/impl; the "bytes" counter is input + output bytes for the pools and 2 x input for
// copy. CPU time (Google Benchmark's default): the machine is shared. Run single-threaded:
//   TENFOLD_NUM_THREADS=1 build-bench/bench/tenfold_bench_pool --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include <tenfold/tenfold.hpp>

namespace tf = tenfold;
using tf::hw;
using tf::index_t;

namespace {
constexpr index_t N = 32, C = 64, H = 56, W = 56;

template <class L>
using in_shape = std::conditional_t<std::is_same_v<L, tf::nhwc_t>, tf::shape<N, H, W, C>, tf::shape<N, C, H, W>>;

template <class L, index_t K, index_t S, index_t P>
struct data {
  static constexpr index_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  using out_shape = std::conditional_t<std::is_same_v<L, tf::nhwc_t>, tf::shape<N, OH, OW, C>, tf::shape<N, C, OH, OW>>;
  // Heap: 25 MB of input is too much for the stack, and Tensor stores inline.
  std::unique_ptr<tf::Tensor<float, in_shape<L>>> x = std::make_unique<tf::Tensor<float, in_shape<L>>>();
  std::unique_ptr<tf::Tensor<float, in_shape<L>>> scratch = std::make_unique<tf::Tensor<float, in_shape<L>>>();
  std::unique_ptr<tf::Tensor<float, out_shape>> out = std::make_unique<tf::Tensor<float, out_shape>>();
  std::unique_ptr<tf::Tensor<float, out_shape>> want = std::make_unique<tf::Tensor<float, out_shape>>();
  data() {
    std::uint64_t s = 12345;
    for (auto& v : *x) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      v = float(s >> 40) * 0x1p-24f * 8 - 4;
    }
  }
  static data& get() {
    static data d;
    return d;
  }
};

// The naive loops, one output element at a time, over the window clipped to the input.
template <class L, index_t K, index_t S, index_t P>
void naive(const float* x, float* y) {
  constexpr bool last = std::is_same_v<L, tf::nhwc_t>;
  constexpr index_t OH = data<L, K, S, P>::OH, OW = data<L, K, S, P>::OW;
  for (index_t n = 0; n < N; ++n)
    for (index_t a = 0; a < (last ? OH : C); ++a)
      for (index_t b = 0; b < (last ? OW : OH); ++b)
        for (index_t e = 0; e < (last ? C : OW); ++e) {
          const index_t c = last ? e : a, oh = last ? a : b, ow = last ? b : e;
          float m = -std::numeric_limits<float>::infinity();
          for (index_t i = 0; i < K; ++i)
            for (index_t j = 0; j < K; ++j) {
              const index_t h = oh * S - P + i, w = ow * S - P + j;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              const float v = last ? x[((n * H + h) * W + w) * C + c] : x[((n * C + c) * H + h) * W + w];
              m = v > m ? v : m;
            }
          (last ? y[((n * OH + oh) * OW + ow) * C + c] : y[((n * C + c) * OH + oh) * OW + ow]) = m;
        }
}

enum class impl { tenfold, naive, copy };

template <class L, index_t K, index_t S, index_t P, impl I>
void run_once(data<L, K, S, P>& d) {
  if constexpr (I == impl::tenfold) *d.out = tf::max_pool2d<K, S, P>(*d.x, L{});
  else if constexpr (I == impl::naive) naive<L, K, S, P>(d.x->data(), d.out->data());
  else std::memcpy(d.scratch->data(), d.x->data(), sizeof(float) * in_shape<L>::size);
}

template <class L, index_t K, index_t S, index_t P, impl I>
void bench(benchmark::State& st) {
  auto& d = data<L, K, S, P>::get();
  using O = typename data<L, K, S, P>::out_shape;
  if constexpr (I != impl::copy) {
    naive<L, K, S, P>(d.x->data(), d.want->data());
    run_once<L, K, S, P, I>(d);
    if (std::memcmp(d.out->data(), d.want->data(), sizeof(float) * O::size) != 0) {
      st.SkipWithError("result differs from the naive loops");
      return;
    }
  }
  for (auto _ : st) {
    run_once<L, K, S, P, I>(d);
    benchmark::DoNotOptimize(d.out->data());
    benchmark::DoNotOptimize(d.scratch->data());
    benchmark::ClobberMemory();
  }
  const index_t bytes = I == impl::copy ? 2 * in_shape<L>::size : in_shape<L>::size + O::size;
  st.SetBytesProcessed(st.iterations() * bytes * index_t(sizeof(float)));
}

template <class L, index_t K, index_t S, index_t P>
void register_all(const char* layout) {
  const std::string name = "max_pool" + std::to_string(K) + "x" + std::to_string(K) + "s" + std::to_string(S) + "p" +
                           std::to_string(P) + "/" + layout + "/";
  benchmark::RegisterBenchmark((name + "tenfold").c_str(), bench<L, K, S, P, impl::tenfold>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "naive").c_str(), bench<L, K, S, P, impl::naive>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "copy").c_str(), bench<L, K, S, P, impl::copy>)->Unit(benchmark::kMillisecond);
}
} // namespace

int main(int argc, char** argv) {
  register_all<tf::nchw_t, 2, 2, 0>("nchw");
  register_all<tf::nhwc_t, 2, 2, 0>("nhwc");
  register_all<tf::nchw_t, 3, 2, 1>("nchw");
  register_all<tf::nhwc_t, 3, 2, 1>("nhwc");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
