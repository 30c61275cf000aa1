#pragma once
// tools/tune's search of the elementwise evaluator's streaming threshold (cpu/elementwise_config.hpp):
// the smallest output from which streaming stores are at least `gain` faster than ordinary ones (the
// median of five alternated pairs), at that size and every larger one measured (2 to 64 MiB), timed on the flat path's own loop: out = a + b * 0.5
// by vectors over contiguous floats, cut over the pool by cpu::parallel_for, written as the evaluator
// writes (cpu::store_stream). The choice changes no result, so nothing is checked but the timing.
// Not searched: the task grain (cpu::parallel_grain). On Intel model 167 the pool beat one thread on
// this loop only from 131072 floats (1.00x at 65536), but a grain from it would leave the decoder's
// [768, 128] nests with exp and gelu, which the pool speeds up, on one thread: one element count cannot
// serve operations of different costs per element (a grain in estimated cycles could).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"

namespace tune {
using tenfold::cpu::elementwise_config;

struct elementwise_result {
  elementwise_config best;
  std::string summary; // what was measured, for the table's comment
};

inline elementwise_result tune_elementwise(bool quick) {
  namespace cpu = tenfold::cpu;
  using B = cpu::batch<float>;
  constexpr index_t W = index_t(B::size);
  constexpr double gain = 1.05;
  const index_t max_bytes = index_t(quick ? 4 : 64) << 20;
  const index_t max_n = max_bytes / index_t(sizeof(float));
  aligned_vector<float> a(std::size_t(max_n), 1.0f), b(std::size_t(max_n), 2.0f), out(std::size_t(max_n), 0.0f);
  auto body = [&](index_t i0, index_t i1, bool stream) {
    index_t i = i0;
    for (; i + W <= i1; i += W) {
      const B v = B::load_aligned(a.data() + i) + B::load_aligned(b.data() + i) * B(0.5f);
      if (stream) cpu::store_stream(out.data() + i, v);
      else v.store_aligned(out.data() + i);
    }
    for (; i < i1; ++i) out[std::size_t(i)] = a[std::size_t(i)] + b[std::size_t(i)] * 0.5f;
    if (stream) cpu::stream_fence();
  };
  auto pooled = [&](index_t n, bool stream) {
    cpu::parallel_for(n, 1, W, [&](index_t x, index_t y) { body(x, y, stream); });
  };
  const double min_s = quick ? 0.002 : 0.02;
  elementwise_result r;
  char line[160];

  // The streaming threshold: outputs of 2 .. 64 MiB.
  index_t from = 0;
  std::string seen;
  for (index_t bytes = index_t(2) << 20; bytes <= max_bytes; bytes *= 2) {
    const index_t n = bytes / index_t(sizeof(float));
    // (the median of five alternated pairs: one pair swung from 0.74 to 1.80 at 8 MiB between runs on
    // Zen 5, and a threshold of 16 MiB taken from such pairs ran layer_norm's 8 MiB rows 1.4-1.9x slower
    // there: bench/RESULTS.md)
    std::vector<double> ratios;
    for (int rep = 0; rep < (quick ? 1 : 5); ++rep) {
      const double plain = seconds_per_call([&] { pooled(n, false); }, min_s);
      ratios.push_back(plain / seconds_per_call([&] { pooled(n, true); }, min_s));
    }
    std::sort(ratios.begin(), ratios.end());
    const double ratio = ratios[ratios.size() / 2];
    if (ratio >= gain) {
      if (from == 0) from = bytes;
    } else from = 0;
    std::snprintf(line, sizeof line, "%s%ld MiB: %.2f", seen.empty() ? "" : ", ", long(bytes >> 20), ratio);
    seen += line;
  }
  // Where streaming never won up to the largest size, it is used from there (assumed: the larger the
  // output, the less of it the caches can hold and the more streaming saves).
  r.best.streaming_bytes = from > 0 ? from : max_bytes;
  std::printf("elementwise streaming: ordinary / streaming stores, by output: %s -> from %ld MiB\n", seen.c_str(),
              long(r.best.streaming_bytes >> 20));
  std::snprintf(line, sizeof line, " -> from %ld MiB", long(r.best.streaming_bytes >> 20));
  r.summary = "ordinary / streaming stores " + seen + line;
  return r;
}
} // namespace tune
