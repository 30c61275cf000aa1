// The machine's measured peak, shared by the benchmarks that report "% of peak" (bench_gemm,
// bench_conv, bench_attention): independent FMA chains on the widest batch the build targets
// (tenfold::cpu::batch<float> is xsimd's default arch: AVX-512, AVX2+FMA, SSE2, NEON). Run once per
// pool thread, it gives the FLOP/s the cores reach in this very process.
#pragma once
#include <benchmark/benchmark.h>

#include <string>

#include <tenfold/tenfold.hpp>

namespace tenfold_bench {
// Vector registers the accumulators and the two constants must fit in: 32 with AVX-512 (zmm0-31) and
// on AArch64, 16 on x86-64 otherwise (ymm/xmm0-15).
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int vector_registers = 32;
#else
constexpr int vector_registers = 16;
#endif
// Enough chains to cover FMA latency x FMA pipes on current cores (Zen 3/4 and Skylake-X: 2 x 4 = 8,
// Haswell: 2 x 5 = 10), and few enough to stay in registers: 16 chains + 2 constants spilled 3
// accumulators to the stack with AVX2 and measured 58 GFLOP/s on a Zen 3 core that does 102 with 12
// (bench/RESULTS.md).
constexpr int fma_chains = vector_registers >= 32 ? 16 : 12;
static_assert(fma_chains + 2 <= vector_registers);
constexpr tenfold::index_t fma_steps = 1 << 20;
using fma_batch = tenfold::cpu::batch<float>;

inline void fma_loop(float seed) {
  fma_batch acc[fma_chains];
  for (int c = 0; c < fma_chains; ++c) acc[c] = fma_batch(seed + float(c));
  const fma_batch x(0.999999f), y(1e-6f);
  for (tenfold::index_t s = 0; s < fma_steps; ++s)
    for (int c = 0; c < fma_chains; ++c) acc[c] = xsimd::fma(acc[c], x, y);
  fma_batch sum = acc[0];
  for (int c = 1; c < fma_chains; ++c) sum += acc[c];
  benchmark::DoNotOptimize(sum);
}
// FLOPs of one fma_loop on every pool thread.
inline double fma_peak_flops(int threads) { return 2.0 * double(fma_batch::size) * fma_chains * fma_steps * threads; }
// For the benchmark's context: which loop measured the peak.
inline std::string fma_peak_description() {
  return std::to_string(fma_chains) + " chains of " + std::to_string(fma_batch::size) + " x f32 (" +
         fma_batch::arch_type::name() + ")";
}
} // namespace tenfold_bench
