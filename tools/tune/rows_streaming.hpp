#pragma once
// tools/tune's search of the row-fused nests' streaming threshold (cpu/elementwise_config.hpp:
// rows_streaming_bytes): softmax and layer_norm rows of 1024 and 32768 floats, outputs of 4 to 32 MiB,
// each timed with its output streamed and not (the median of five alternated pairs), over the pool. The
// threshold is the smallest output from which streaming is at least `gain` faster (the geometric mean
// over the four problems) there and at every larger size measured; where it never is, 64 MiB (assumed,
// as for the flat loop: the larger the output, the more streaming saves). Streaming changes no value:
// each problem's two forms must write the same bits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace tune {

struct rows_streaming_result {
  index_t from_bytes = 0;
  std::string summary; // what was measured, for the table's comment
};

namespace detail_rows_streaming {
// Streamed over not streamed (the median of `reps` alternated pairs of seconds: not / streamed) for rows
// of C floats filling `bytes`, or 0 where the two forms write different bits.
template <bool Softmax, index_t C, index_t Bytes>
double ratio(int reps, double min_s) {
  namespace tf = tenfold;
  constexpr index_t R = Bytes / (C * index_t(sizeof(float)));
  using S = tf::shape<R, C>;
  struct data {
    tf::Tensor<float, S> x, out, first;
    tf::Tensor<float, tf::shape<C>> gamma, beta;
  };
  auto d = std::make_unique<data>();
  fill_rows(d->x, d->gamma, d->beta, 11 + C);
  auto expr = [&] {
    if constexpr (Softmax) return tf::softmax(d->x);
    else return tf::layer_norm(d->x, d->gamma, d->beta, 1e-5f);
  };
  const auto [dst, prepared] = prepared_for(d->out, expr());
  constexpr auto with = [](index_t from) {
    auto c = tf::cpu::elementwise_config_for();
    c.rows_streaming_bytes = from;
    return c;
  };
  auto run = [&](bool streamed) {
    if (streamed) tf::cpu::run_elementwise_with<with(1)>(dst, prepared);
    else tf::cpu::run_elementwise_with<with(index_t(1) << 40)>(dst, prepared);
  };
  run(false);
  d->first = d->out;
  run(true);
  if (std::memcmp(d->out.data(), d->first.data(), sizeof(float) * std::size_t(R * C)) != 0) return 0;
  std::vector<double> ratios;
  for (int rep = 0; rep < reps; ++rep) {
    const double plain = seconds_per_call([&] { run(false); }, min_s);
    ratios.push_back(plain / seconds_per_call([&] { run(true); }, min_s));
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}

// The geometric mean over softmax and layer_norm, rows of 1024 and 32768 floats, at one output size (0
// where a form was wrong).
template <index_t Bytes>
double mean_ratio(int reps, double min_s) {
  const double r[] = {ratio<true, 1024, Bytes>(reps, min_s), ratio<false, 1024, Bytes>(reps, min_s), ratio<true, 32768, Bytes>(reps, min_s),
                      ratio<false, 32768, Bytes>(reps, min_s)};
  double log_sum = 0;
  for (double x : r) {
    if (x == 0) return 0;
    log_sum += std::log(x);
  }
  return std::exp(log_sum / double(std::size(r)));
}
} // namespace detail_rows_streaming

inline rows_streaming_result tune_rows_streaming(bool quick) {
  using namespace detail_rows_streaming;
  const int reps = quick ? 1 : 5;
  const double min_s = quick ? 0.002 : 0.02;
  constexpr index_t MiB = index_t(1) << 20;
  std::vector<std::pair<index_t, double>> seen;
  if (quick) seen = {{8 * MiB, mean_ratio<8 * MiB>(reps, min_s)}};
  else
    seen = {{4 * MiB, mean_ratio<4 * MiB>(reps, min_s)},
            {8 * MiB, mean_ratio<8 * MiB>(reps, min_s)},
            {16 * MiB, mean_ratio<16 * MiB>(reps, min_s)},
            {32 * MiB, mean_ratio<32 * MiB>(reps, min_s)}};
  rows_streaming_result r;
  std::string line;
  index_t from = 0;
  bool wrong = false;
  char buf[64];
  for (const auto& [bytes, ratio] : seen) {
    wrong = wrong || ratio == 0;
    if (ratio >= keep_threshold) {
      if (from == 0) from = bytes;
    } else from = 0;
    std::snprintf(buf, sizeof buf, "%s%ld MiB: %.2f", line.empty() ? "" : ", ", long(bytes / MiB), ratio);
    line += buf;
  }
  if (wrong) throw std::runtime_error("rows streamed and not wrote different bits: run the tests");
  r.from_bytes = from > 0 ? from : 64 * MiB;
  std::snprintf(buf, sizeof buf, " -> from %ld MiB", long(r.from_bytes / MiB));
  r.summary = "rows' ordinary / streaming stores " + line + buf;
  std::printf("rows streaming: ordinary / streaming stores, by output: %s%s\n", line.c_str(), buf);
  return r;
}
} // namespace tune
