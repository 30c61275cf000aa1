#pragma once
// tools/tune's search of softmax's pass structure (ops/softmax_config.hpp): the two-pass form (max, then
// exp(x - max) kept in the output row and summed, then scaled) against the online one (max and sum in one
// accumulation, then exp again into the output), on rows of 256 to 65536 floats, 8 MiB in all, over the
// pool as softmax runs. Each form's result is first checked against a double loop on three rows; a form
// that differs by more than softmax's tolerance is never taken. The online form is taken from the
// shortest row length at which it is at least keep_threshold faster there and at every longer length
// (the median of three alternated pairs per length).
#include <cstdio>
#include <memory>
#include <string>

#include "common.hpp"

namespace tune {
using tenfold::softmax_config;

struct softmax_result {
  softmax_config best;
  std::string summary; // what was measured, for the table's comment
};

namespace detail_softmax {
// The median over three alternated pairs of (two-pass seconds / online seconds) on rows of C floats,
// or 0 where either form is wrong.
template <index_t C>
double ratio(bool quick, double min_s) {
  namespace tf = tenfold;
  constexpr index_t R = (index_t(2) << 20) / C; // 8 MiB of floats
  using S = tf::shape<R, C>;
  auto x = std::make_unique<tf::Tensor<float, S>>(), two = std::make_unique<tf::Tensor<float, S>>(),
       online = std::make_unique<tf::Tensor<float, S>>();
  std::uint64_t s = 99;
  for (auto& v : *x) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = float(s >> 40) * 0x1p-24f * 16 - 8;
  }
  using last = tf::detail::mask_holder<tf::detail::canon(std::array<bool, 2>{false, true})>;
  auto run_two = [&] { *two = tf::detail::softmax_two_pass<last>(tf::detail::as_node(*x)); };
  auto run_online = [&] { *online = tf::detail::softmax_online<last>(tf::detail::as_node(*x)); };
  run_two();
  run_online();
  for (index_t r : {index_t(0), R / 2, R - 1}) {
    const float* xr = x->data() + r * C;
    double m = -INFINITY, sum = 0;
    for (index_t j = 0; j < C; ++j) m = std::max(m, double(xr[j]));
    for (index_t j = 0; j < C; ++j) sum += std::exp(double(xr[j]) - m);
    for (index_t j = 0; j < C; ++j) {
      const double want = std::exp(double(xr[j]) - m) / sum, tol = 1e-5 * want + 1e-30;
      if (!(std::abs(two->data()[r * C + j] - want) <= tol) || !(std::abs(online->data()[r * C + j] - want) <= tol))
        return 0;
    }
  }
  std::vector<double> ratios;
  for (int rep = 0; rep < (quick ? 1 : 3); ++rep) {
    const double t_two = seconds_per_call(run_two, min_s);
    ratios.push_back(t_two / seconds_per_call(run_online, min_s));
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}
} // namespace detail_softmax

inline softmax_result tune_softmax(bool quick, double min_s) {
  constexpr index_t lengths[] = {256, 1024, 4096, 16384, 65536};
  const double ratios[] = {detail_softmax::ratio<256>(quick, min_s), detail_softmax::ratio<1024>(quick, min_s),
                           detail_softmax::ratio<4096>(quick, min_s), detail_softmax::ratio<16384>(quick, min_s),
                           detail_softmax::ratio<65536>(quick, min_s)};
  softmax_result r;
  std::string seen;
  char line[96];
  index_t from = 0;
  bool wrong = false;
  for (std::size_t i = 0; i < std::size(lengths); ++i) {
    wrong = wrong || ratios[i] == 0;
    if (ratios[i] >= keep_threshold) {
      if (from == 0) from = lengths[i] * index_t(sizeof(float));
    } else from = 0;
    std::snprintf(line, sizeof line, "%s%ld: %.2f", seen.empty() ? "" : ", ", long(lengths[i]), ratios[i]);
    seen += line;
  }
  r.best.online_from_bytes = wrong ? 0 : from;
  std::snprintf(line, sizeof line, " -> %s",
                wrong  ? "a form was wrong: two-pass"
                : from ? "online from "
                       : "two-pass everywhere");
  std::string verdict = line;
  if (!wrong && from) verdict += std::to_string(from / index_t(sizeof(float))) + " floats";
  std::printf("softmax   two-pass / online seconds, by row length: %s%s\n", seen.c_str(), verdict.c_str());
  r.summary = "two-pass / online seconds by row length " + seen + verdict;
  return r;
}
} // namespace tune
