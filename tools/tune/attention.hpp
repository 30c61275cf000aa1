#pragma once
// tools/tune's search of the CPU attention's tiles (cpu/attention_config.hpp): query rows per task and
// keys per block, every pair of row_panels 1-4 and key_panels 1, 2, 4, 8, each timed on the examples'
// attention shapes through the kernel eval runs (cpu::run_attention on the prepared node) and checked
// against a double-precision reference. A candidate more than 5% slower than the defaults on any shape
// is out; the fastest by the geometric mean over the shapes must then beat the defaults by 5% in an
// alternated comparison (the median of five paired ratios per shape) and lose no more than 5% on any
// shape, else the defaults stay.
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"

namespace tune {
using tenfold::cpu::attention_config;

struct attention_problem {
  std::string name;
  std::function<void(const attention_config&)> run; // out = attention(q, k, v) with these tiles
  std::function<bool()> correct;                    // the last run's output against the reference
  double seconds(const attention_config& cfg, double min_s) const {
    return seconds_per_call([&] { run(cfg); }, min_s);
  }
};

// q, k, v: [B, H, S, D] of values in [-1, 1), causal or not. The reference is the plain softmax(q kᵀ/√D) v
// in double for the first two (batch, head) slices; each element must be within 4 (D + S) u of it (the
// scores' D-term sums and the S-term weighted sums in float, |v| < 1).
template <tenfold::index_t B, tenfold::index_t H, tenfold::index_t S, tenfold::index_t D, bool Causal>
attention_problem make_attention_problem(const std::string& name) {
  namespace tf = tenfold;
  using Sh = tf::shape<B, H, S, D>;
  struct data {
    tf::Tensor<float, Sh> q, k, v, out;
    std::vector<double> ref;
  };
  auto d = std::make_shared<data>();
  std::uint64_t x = std::uint64_t(B * 1000003 + H * 1009 + S * 31 + D);
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return -1.0f + 2.0f * float(x >> 40) * 0x1p-24f;
  };
  for (tf::Tensor<float, Sh>* t : {&d->q, &d->k, &d->v})
    for (index_t i = 0; i < Sh::size; ++i) t->data()[i] = next();
  constexpr index_t slices = B * H < 2 ? B * H : 2;
  d->ref.assign(std::size_t(slices * S * D), 0.0);
  for (index_t sl = 0; sl < slices; ++sl) {
    const float *q = d->q.data() + sl * S * D, *k = d->k.data() + sl * S * D, *v = d->v.data() + sl * S * D;
    std::vector<double> p(static_cast<std::size_t>(S));
    for (index_t i = 0; i < S; ++i) {
      const index_t seen = Causal ? i + 1 : S;
      double m = -INFINITY, l = 0;
      for (index_t j = 0; j < seen; ++j) {
        double s = 0;
        for (index_t e = 0; e < D; ++e) s += double(q[i * D + e]) * double(k[j * D + e]);
        p[std::size_t(j)] = s / std::sqrt(double(D));
        m = std::max(m, p[std::size_t(j)]);
      }
      for (index_t j = 0; j < seen; ++j) l += (p[std::size_t(j)] = std::exp(p[std::size_t(j)] - m));
      double* r = &d->ref[std::size_t((sl * S + i) * D)];
      for (index_t j = 0; j < seen; ++j)
        for (index_t e = 0; e < D; ++e) r[e] += p[std::size_t(j)] / l * double(v[j * D + e]);
    }
  }
  auto expr = [&] {
    if constexpr (Causal) return tf::attention(d->q, d->k, d->v, tf::causal);
    else return tf::attention(d->q, d->k, d->v);
  };
  const auto [dst, prepared] = prepared_for(d->out, expr());
  static_assert(tf::detail::is_attention_node_v<std::remove_const_t<decltype(prepared)>>,
                "tools/tune: attention no longer reaches cpu::run_attention");
  attention_problem pr;
  pr.name = name;
  pr.run = [d, dst, prepared](const attention_config& cfg) { tf::cpu::run_attention(dst, prepared, cfg); };
  pr.correct = [d] {
    const double tol = 4.0 * double(D + S) * 0x1p-24;
    for (std::size_t i = 0; i < d->ref.size(); ++i)
      if (!(std::abs(double(d->out.data()[i]) - d->ref[i]) <= tol)) return false;
    return true;
  };
  return pr;
}

using attention_result = search_result<attention_config>;

inline attention_result tune_attention(bool quick, double min_s) {
  // The examples' attention: MiniLM (12 heads of 32 over 128 tokens, batch 1 and 32), the decoder's
  // training step (batch 12, 4 causal heads of 32 over 64), and a longer sequence (4 heads of 64 over 512).
  std::vector<attention_problem> probs;
  probs.push_back(make_attention_problem<12, 4, 64, 32, true>("decoder 12 x 4 x 64 x 32 causal"));
  if (!quick) {
    probs.push_back(make_attention_problem<1, 12, 128, 32, false>("MiniLM 1 x 12 x 128 x 32"));
    probs.push_back(make_attention_problem<32, 12, 128, 32, false>("MiniLM 32 x 12 x 128 x 32"));
    probs.push_back(make_attention_problem<2, 4, 512, 64, false>("2 x 4 x 512 x 64"));
  }
  attention_result r;
  std::vector<double> base(probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) {
    probs[i].run(attention_config{});
    if (!probs[i].correct())
      throw std::runtime_error("attention's default tiles are wrong on this machine: run the tests");
    base[i] = probs[i].seconds(attention_config{}, min_s);
  }
  auto score = [&](const attention_config& cfg) {
    ++r.tried;
    return score_candidate(
        base,
        [&](std::size_t i) {
          probs[i].run(cfg);
          return probs[i].correct();
        },
        [&](std::size_t i) { return probs[i].seconds(cfg, min_s); }, r.rejected);
  };
  attention_config best{};
  double best_score = 1.0;
  for (index_t rows : quick ? std::vector<index_t>{1, 2} : std::vector<index_t>{1, 2, 3, 4})
    for (index_t keys : quick ? std::vector<index_t>{2, 4} : std::vector<index_t>{1, 2, 4, 8}) {
      const attention_config cfg{rows, keys};
      if (cfg == attention_config{}) continue;
      const double sc = score(cfg);
      if (sc < best_score) best_score = sc, best = cfg;
    }
  confirm_into(
      r, best, probs.size(), quick ? 1 : 5, [&](std::size_t i) { return probs[i].seconds(attention_config{}, min_s); },
      [&](std::size_t i) { return probs[i].seconds(best, min_s); }, [&](std::size_t i) { return probs[i].name; });
  return r;
}
} // namespace tune
