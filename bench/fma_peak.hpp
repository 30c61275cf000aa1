// The machine's measured peak, shared by the benchmarks that report "% of peak" (bench_gemm,
// bench_conv): independent FMA chains, enough to cover latency x ports, on the widest batch xsimd
// compiles for. Run once per pool thread, it gives the FLOP/s the cores reach in this very process.
#pragma once
#include <benchmark/benchmark.h>

#include <tenfold/tenfold.hpp>

namespace tenfold_bench {
constexpr int fma_chains = 16;
constexpr tenfold::index_t fma_steps = 1 << 20;
inline void fma_loop(float seed) {
  using B = tenfold::cpu::batch<float>;
  B acc[fma_chains];
  for (int c = 0; c < fma_chains; ++c) acc[c] = B(seed + float(c));
  const B x(0.999999f), y(1e-6f);
  for (tenfold::index_t s = 0; s < fma_steps; ++s)
    for (int c = 0; c < fma_chains; ++c) acc[c] = xsimd::fma(acc[c], x, y);
  B sum = acc[0];
  for (int c = 1; c < fma_chains; ++c) sum += acc[c];
  benchmark::DoNotOptimize(sum);
}
// FLOPs of one fma_loop on every pool thread.
inline double fma_peak_flops(int threads) { return 2.0 * double(tenfold::cpu::batch<float>::size) * fma_chains * fma_steps * threads; }
} // namespace tenfold_bench
