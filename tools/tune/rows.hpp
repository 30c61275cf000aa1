#pragma once
// tools/tune's search of the row kernels' prefetch (cpu/elementwise_config.hpp: tee_ahead, tail_ahead,
// prefetch_l1_bytes): how many rows ahead softmax's tee rows and the norms' tail sweeps prefetch (0, 1 or
// 2), and up to which row size into L1 rather than L2. Timed through the kernel eval runs
// (cpu::run_elementwise_with on the prepared node, over the pool) on softmax and layer_norm rows of 256
// to 32768 floats, 8 MiB each. Every variant must write bitwise what the defaults write (a prefetch
// changes no value), and the defaults must match a double loop on three rows.
//
// A shape's kernel depends only on its own distance and level, so each shape is timed once per variant
// (none, 1 or 2 rows ahead into L1 or L2: five), and every configuration of the grid is scored from
// those timings (score_candidate: the geometric mean over the shapes, none more than 5% slower); the
// winner must then beat the defaults in the alternated comparison (confirm_into).
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common.hpp"

namespace tune {
// The fields of cpu::elementwise_config this search sets.
struct row_prefetch_choice {
  int tee_ahead = 1, tail_ahead = 1;
  index_t prefetch_l1_bytes = index_t(16) << 10;
  friend constexpr bool operator==(const row_prefetch_choice&, const row_prefetch_choice&) = default;
};
static_assert(row_prefetch_choice{}.tee_ahead == tenfold::cpu::elementwise_config{}.tee_ahead &&
                  row_prefetch_choice{}.tail_ahead == tenfold::cpu::elementwise_config{}.tail_ahead &&
                  row_prefetch_choice{}.prefetch_l1_bytes == tenfold::cpu::elementwise_config{}.prefetch_l1_bytes,
              "tools/tune: row_prefetch_choice's defaults are elementwise_config's");

inline std::string describe(const row_prefetch_choice& c) {
  return "{.tee_ahead = " + std::to_string(c.tee_ahead) + ", .tail_ahead = " + std::to_string(c.tail_ahead) +
         ", .prefetch_l1_bytes = " + std::to_string(c.prefetch_l1_bytes) + "}";
}

namespace detail_rows {
// The five kernels of one shape: none, then 1 and 2 rows ahead into L1 and into L2.
constexpr int variants = 5;
constexpr tenfold::cpu::elementwise_config variant_config(int v) {
  tenfold::cpu::elementwise_config c{};
  const int ahead = v == 0 ? 0 : v <= 2 ? 1 : 2;
  c.tee_ahead = c.tail_ahead = ahead;
  c.prefetch_l1_bytes = v % 2 == 1 ? index_t(1) << 40 : 0; // (odd: into L1 whatever the row's size)
  return c;
}
constexpr int variant_of(int ahead, bool l1) { return ahead == 0 ? 0 : (ahead == 1 ? 1 : 3) + (l1 ? 0 : 1); }

struct row_problem {
  std::string name;
  bool tee = false;  // softmax (tee_ahead) or layer_norm (tail_ahead)
  index_t bytes = 0; // of a row
  std::function<void(int)> run;
  std::function<bool()> same_as_default; // the last run's output, bitwise
};

template <bool Softmax, index_t C>
row_problem make_problem() {
  namespace tf = tenfold;
  constexpr index_t R = (index_t(2) << 20) / C; // 8 MiB of floats
  using S = tf::shape<R, C>;
  struct data {
    tf::Tensor<float, S> x, out, want;
    tf::Tensor<float, tf::shape<C>> gamma, beta;
  };
  auto d = std::shared_ptr<data>(new data);
  std::uint64_t s = 7 + C;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return float(s >> 40) * 0x1p-24f;
  };
  for (auto& v : d->x) v = next() * 16 - 8;
  for (auto& v : d->gamma) v = next() + 0.5f;
  for (auto& v : d->beta) v = next() - 0.5f;
  constexpr float eps = 1e-5f;
  auto expr = [&] {
    if constexpr (Softmax) return tf::softmax(d->x);
    else return tf::layer_norm(d->x, d->gamma, d->beta, eps);
  };
  const auto [dst, prepared] = prepared_for(d->out, expr());
  using N = std::remove_const_t<decltype(prepared)>;
  static_assert(tf::plan::nest_kind_v<N> == tf::plan::nest_node::map && !tf::plan::gemm_root_v<N>,
                "tools/tune: the row kernel no longer reaches cpu::run_elementwise");
  row_problem p;
  p.name = std::string(Softmax ? "softmax " : "layer_norm ") + std::to_string(R) + " x " + std::to_string(C);
  p.tee = Softmax;
  p.bytes = C * index_t(sizeof(float));
  p.run = [d, dst, prepared](int v) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((v == I ? tf::cpu::run_elementwise_with<variant_config(I)>(dst, prepared) : void()), ...);
    }(std::make_integer_sequence<int, variants>{});
  };
  // The defaults against a double loop on three rows; they are then what every variant must write.
  tf::cpu::run_elementwise(dst, prepared);
  for (index_t r : {index_t(0), R / 2, R - 1}) {
    const float* xr = d->x.data() + r * C;
    double a = 0, b = 0;
    if constexpr (Softmax) {
      a = -INFINITY;
      for (index_t j = 0; j < C; ++j) a = std::max(a, double(xr[j]));
      for (index_t j = 0; j < C; ++j) b += std::exp(double(xr[j]) - a);
    } else {
      for (index_t j = 0; j < C; ++j) a += double(xr[j]) / double(C);
      for (index_t j = 0; j < C; ++j) b += (double(xr[j]) - a) * (double(xr[j]) - a) / double(C);
    }
    for (index_t j = 0; j < C; ++j) {
      const double want = Softmax ? std::exp(double(xr[j]) - a) / b
                                  : (double(xr[j]) - a) / std::sqrt(b + double(eps)) * double(d->gamma.data()[j]) + double(d->beta.data()[j]);
      if (!(std::abs(double(d->out.data()[r * C + j]) - want) <= 1e-5 * (std::abs(want) + (Softmax ? 1e-30 : 1.0))))
        throw std::runtime_error(p.name + ": the row kernel is wrong on this machine: run the tests");
    }
  }
  d->want = d->out;
  p.same_as_default = [d] { return std::memcmp(d->out.data(), d->want.data(), sizeof(float) * std::size_t(R * C)) == 0; };
  return p;
}
} // namespace detail_rows

using rows_result = search_result<row_prefetch_choice>;

inline rows_result tune_rows(bool quick, double min_s) {
  using namespace detail_rows;
  std::vector<row_problem> probs;
  probs.push_back(make_problem<true, 1024>());
  probs.push_back(make_problem<false, 1024>());
  if (!quick) {
    probs.push_back(make_problem<true, 256>());
    probs.push_back(make_problem<false, 256>());
    probs.push_back(make_problem<true, 4096>());
    probs.push_back(make_problem<false, 4096>());
    probs.push_back(make_problem<true, 32768>());
    probs.push_back(make_problem<false, 32768>());
  }
  // Each shape's kernel under a configuration, and its time per variant, measured once.
  auto variant = [&](std::size_t i, const row_prefetch_choice& c) {
    return variant_of(probs[i].tee ? c.tee_ahead : c.tail_ahead, probs[i].bytes <= c.prefetch_l1_bytes);
  };
  std::map<std::pair<std::size_t, int>, double> timed;
  std::map<std::pair<std::size_t, int>, bool> right;
  auto measure = [&](std::size_t i, int v) {
    const auto key = std::pair{i, v};
    if (!timed.count(key)) {
      probs[i].run(v);
      right[key] = probs[i].same_as_default();
      timed[key] = seconds_per_call([&] { probs[i].run(v); }, min_s);
    }
  };
  rows_result r;
  std::vector<double> base(probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) {
    measure(i, variant(i, {}));
    base[i] = timed[{i, variant(i, {})}];
  }
  row_prefetch_choice best{};
  double best_score = 1.0;
  for (int tee : {0, 1, 2})
    for (int tail : {0, 1, 2})
      for (index_t l1 : {index_t(0), index_t(1) << 10, index_t(4) << 10, index_t(16) << 10, index_t(128) << 10}) {
        const row_prefetch_choice c{tee, tail, l1};
        if (c == row_prefetch_choice{}) continue;
        ++r.tried;
        const double sc = score_candidate(
            base,
            [&](std::size_t i) {
              measure(i, variant(i, c));
              return right[{i, variant(i, c)}];
            },
            [&](std::size_t i) { return timed[{i, variant(i, c)}]; }, r.rejected);
        if (sc < best_score) best_score = sc, best = c;
      }
  auto seconds = [&](std::size_t i, const row_prefetch_choice& c) {
    const int v = variant(i, c);
    return seconds_per_call([&] { probs[i].run(v); }, min_s);
  };
  confirm_into(
      r, best, probs.size(), quick ? 1 : 5, [&](std::size_t i) { return seconds(i, {}); }, [&](std::size_t i) { return seconds(i, best); },
      [&](std::size_t i) { return probs[i].name; });
  return r;
}
} // namespace tune
