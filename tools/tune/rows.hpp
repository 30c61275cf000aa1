#pragma once
// tools/tune's search of the row kernels' prefetch (cpu/elementwise_config.hpp: row_prefetch_config, one
// for softmax's tee rows and one for the other row-fused rows' tail sweeps): how many rows ahead (0, 1 or
// 2), up to which row size into L1 rather than L2, and whether the destination's row is prefetched for
// writing too. Timed through the kernel eval runs (cpu::run_elementwise_with on the prepared node, over
// the pool): the tee's on softmax rows, the tail's on layer_norm rows, of 256 to 32768 floats, 8 MiB each.
// Every variant must write bitwise what the defaults write (a prefetch changes no value), and the
// defaults must match a double loop on three rows.
//
// A shape's kernel depends only on its own variant (none; 1 or 2 rows ahead, into L1 or L2, with or
// without the destination: nine), so each shape is timed once per variant and every configuration of
// the grid is scored from those timings over its kind's shapes (score_candidate: the geometric mean,
// none more than 5% slower); each kind's winner must then beat the defaults in the alternated
// comparison (confirm_into). Then softmax's rows pipelined where not streamed (tee_pipeline_from_bytes:
// tune_tee_pipeline).
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common.hpp"

namespace tune {
using tenfold::cpu::row_prefetch_config;

inline std::string describe(const row_prefetch_config& c) {
  return "{.ahead = " + std::to_string(c.ahead) + ", .l1_bytes = " + std::to_string(c.l1_bytes) + ", .dst = " + (c.dst ? "true" : "false") + "}";
}

namespace detail_rows {
// The nine kernels of one shape: none, then 1 or 2 rows ahead, into L1 or L2, with or without the
// destination.
constexpr int variants = 9;
constexpr tenfold::cpu::elementwise_config variant_config(int v) {
  tenfold::cpu::elementwise_config c = tenfold::cpu::elementwise_config_for(); // (the machine's streaming threshold)
  row_prefetch_config p{};
  p.ahead = v == 0 ? 0 : 1 + (v - 1) / 4;
  p.l1_bytes = v > 0 && (v - 1) % 4 < 2 ? index_t(1) << 40 : 0; // (into L1, or L2, whatever the row's size)
  p.dst = v > 0 && (v - 1) % 2 == 1;
  c.tee = c.tail = p;
  return c;
}
inline int variant_of(const row_prefetch_config& p, index_t bytes) {
  return p.ahead == 0 ? 0 : 1 + (p.ahead - 1) * 4 + (bytes <= p.l1_bytes ? 0 : 2) + (p.dst ? 1 : 0);
}

struct row_problem {
  std::string name;
  index_t bytes = 0; // of a row
  std::function<void(int)> run;
  std::function<void(bool)> run_pipelined; // softmax: the defaults, pipelined or not (tee_pipeline_from_bytes)
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
  fill_rows(d->x, d->gamma, d->beta, 7 + C);
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
  p.bytes = C * index_t(sizeof(float));
  p.run = [d, dst, prepared](int v) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((v == I ? tf::cpu::run_elementwise_with<variant_config(I)>(dst, prepared) : void()), ...);
    }(std::make_integer_sequence<int, variants>{});
  };
  if constexpr (Softmax)
    p.run_pipelined = [d, dst, prepared](bool on) {
      // (the machine's configuration, with the tee rows pipelined from any length, or from none)
      constexpr auto with = [](index_t from) {
        auto c = tf::cpu::elementwise_config_for();
        c.tee_pipeline_from_bytes = from;
        return c;
      };
      if (on) tf::cpu::run_elementwise_with<with(0)>(dst, prepared);
      else tf::cpu::run_elementwise_with<with(tf::cpu::elementwise_config{}.tee_pipeline_from_bytes)>(dst, prepared);
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
// One kind's shapes: rows of 1024 floats (quick), or of 256 to 32768.
template <bool Softmax>
std::vector<row_problem> problems(bool quick) {
  std::vector<row_problem> probs;
  probs.push_back(make_problem<Softmax, 1024>());
  if (!quick) {
    probs.push_back(make_problem<Softmax, 256>());
    probs.push_back(make_problem<Softmax, 4096>());
    probs.push_back(make_problem<Softmax, 32768>());
  }
  return probs;
}
} // namespace detail_rows

struct rows_result {
  search_result<row_prefetch_config> tee, tail;
  index_t tee_pipeline_from_bytes = tenfold::cpu::elementwise_config{}.tee_pipeline_from_bytes;
  std::string pipeline_summary; // what was measured, for the table's comment
};

// From which row length softmax's tee rows are pipelined where not streamed: the shortest at which the
// pipelined form (each checked bitwise against the defaults) is at least keep_threshold faster there and
// at every longer length (the median of three alternated pairs per length), else never.
inline void tune_tee_pipeline(std::vector<detail_rows::row_problem>& probs, bool quick, double min_s, rows_result& r) {
  std::sort(probs.begin(), probs.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  index_t from = 0;
  char line[64];
  for (auto& p : probs) {
    p.run_pipelined(true);
    double ratio = 0; // (wrong: never taken)
    if (p.same_as_default()) {
      std::vector<double> ratios;
      for (int rep = 0; rep < (quick ? 1 : 3); ++rep) {
        const double plain = seconds_per_call([&] { p.run_pipelined(false); }, min_s);
        ratios.push_back(plain / seconds_per_call([&] { p.run_pipelined(true); }, min_s));
      }
      std::sort(ratios.begin(), ratios.end());
      ratio = ratios[ratios.size() / 2];
    }
    if (ratio >= keep_threshold) {
      if (from == 0) from = p.bytes;
    } else from = 0;
    std::snprintf(line, sizeof line, "%s%ld: %.2f", r.pipeline_summary.empty() ? "" : ", ", long(p.bytes / index_t(sizeof(float))), ratio);
    r.pipeline_summary += line;
  }
  if (from > 0) r.tee_pipeline_from_bytes = from;
  r.pipeline_summary = "softmax rows pipelined: plain / pipelined seconds by row length " + r.pipeline_summary +
                       (from > 0 ? " -> from " + std::to_string(from) + " bytes" : std::string(" -> never"));
}

inline rows_result tune_rows(bool quick, double min_s) {
  using namespace detail_rows;
  // One kind's search over its shapes (softmax rows: the tee; layer_norm rows: the tail).
  auto search = [&](std::vector<row_problem>& probs) {
    search_result<row_prefetch_config> r;
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
    std::vector<double> base(probs.size());
    for (std::size_t i = 0; i < probs.size(); ++i) {
      measure(i, variant_of({}, probs[i].bytes));
      base[i] = timed[{i, variant_of({}, probs[i].bytes)}];
    }
    row_prefetch_config best{};
    double best_score = 1.0;
    for (int ahead : {0, 1, 2})
      for (index_t l1 : {index_t(0), index_t(1) << 10, index_t(4) << 10, index_t(16) << 10, index_t(128) << 10})
        for (bool dst : {false, true}) {
          const row_prefetch_config c{ahead, l1, dst};
          if (c == row_prefetch_config{} || (ahead == 0 && (l1 != 0 || dst))) continue; // (ahead 0: one candidate)
          ++r.tried;
          const double sc = score_candidate(
              base,
              [&](std::size_t i) {
                measure(i, variant_of(c, probs[i].bytes));
                return right[{i, variant_of(c, probs[i].bytes)}];
              },
              [&](std::size_t i) { return timed[{i, variant_of(c, probs[i].bytes)}]; }, r.rejected);
          if (sc < best_score) best_score = sc, best = c;
        }
    auto seconds = [&](std::size_t i, const row_prefetch_config& c) {
      const int v = variant_of(c, probs[i].bytes);
      return seconds_per_call([&] { probs[i].run(v); }, min_s);
    };
    confirm_into(
        r, best, probs.size(), quick ? 1 : 5, [&](std::size_t i) { return seconds(i, {}); },
        [&](std::size_t i) { return seconds(i, best); }, [&](std::size_t i) { return probs[i].name; });
    return r;
  };
  rows_result r;
  std::vector<row_problem> tee = problems<true>(quick), tail = problems<false>(quick);
  r.tee = search(tee);
  r.tail = search(tail);
  tune_tee_pipeline(tee, quick, min_s, r);
  std::printf("%s\n", r.pipeline_summary.c_str());
  return r;
}
} // namespace tune
