#pragma once
// tools/tune's search of the CPU convolutions' lowering and blocking (cpu/conv_config.hpp), timed on
// convolutions themselves: the small CNN's 3x3 layers of bench/bench_conv.cpp (c1: 1 -> 32 at 28x28,
// c2: 32 -> 64 at 28x28, c3: 32 -> 64 at 14x14) at batch 32 and 1, NHWC and NCHW, and
// examples/fashion_mnist's two (1 -> 16 at 28x28, 16 -> 32 at 14x14, batch 64), each through the kernel
// eval runs (cpu::run_conv on the prepared node), over the pool and on one thread, and checked against
// a double-precision sum at every 53rd output. First the lowerings (windows read in place or packed;
// NCHW turned into NHWC or not) at the default blocking, then, with the fastest, the blocking one
// parameter at a time (kc, rows per block, parts per thread, the split's axis). The rules are the
// GEMM's (common.hpp: no shape over 5% slower, 5% over the set in a final alternated run, else the
// defaults stay).
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"

namespace tune {
using tenfold::cpu::conv_config;

struct conv_problem {
  std::string name;
  std::function<void(const conv_config&)> run; // y = conv2d(x, w) with this configuration
  std::function<bool()> correct;               // the last run's output at the sampled positions
  // Seconds per convolution over the pool, or on one thread while the others wait (run_on_own_threads'
  // task 0: inside a task every parallel loop stays on its thread).
  double seconds(const conv_config& cfg, double min_s, bool one_thread = false) const {
    if (!one_thread) return seconds_per_call([&] { run(cfg); }, min_s);
    auto alone = [&](int t) {
      if (t == 0) run(cfg);
    };
    return seconds_per_call([&] { tenfold::cpu::thread_pool::instance().run_on_own_threads(alone); }, min_s);
  }
};

// A 3x3 convolution with padding 1 of a batch of N images of C channels at HW x HW into OC channels.
template <bool Nhwc, index_t N, index_t C, index_t OC, index_t HW>
conv_problem make_conv_problem() {
  namespace tf = tenfold;
  constexpr index_t KS = 3;
  using XS = std::conditional_t<Nhwc, tf::shape<N, HW, HW, C>, tf::shape<N, C, HW, HW>>;
  using WS = std::conditional_t<Nhwc, tf::shape<KS, KS, C, OC>, tf::shape<OC, C, KS, KS>>;
  using YS = std::conditional_t<Nhwc, tf::shape<N, HW, HW, OC>, tf::shape<N, OC, HW, HW>>;
  struct data {
    tf::Tensor<float, XS> x;
    tf::Tensor<float, WS> w;
    tf::Tensor<float, YS> y;
    std::vector<index_t> at;        // the sampled outputs (flat indices of y)
    std::vector<double> ref, bound; // their double-precision values and error bounds
  };
  auto d = std::make_shared<data>();
  std::uint64_t s = std::uint64_t(N * 1000003 + C * 1009 + OC * 31 + HW + (Nhwc ? 7 : 0));
  auto next = [&s] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return -1.0f + 2.0f * float(s >> 40) * 0x1p-24f;
  };
  for (auto& v : d->x) v = next();
  for (auto& v : d->w) v = next();
  const auto xv = [&](index_t n, index_t c, index_t h, index_t w) {
    return double(Nhwc ? d->x.data()[((n * HW + h) * HW + w) * C + c] : d->x.data()[((n * C + c) * HW + h) * HW + w]);
  };
  const auto wv = [&](index_t o, index_t c, index_t kh, index_t kw) {
    return double(Nhwc ? d->w.data()[((kh * KS + kw) * C + c) * OC + o]
                       : d->w.data()[((o * C + c) * KS + kh) * KS + kw]);
  };
  for (index_t i = 0; i < YS::size; i += 53) {
    index_t n, o, oh, ow;
    if constexpr (Nhwc) n = i / (HW * HW * OC), oh = i / (HW * OC) % HW, ow = i / OC % HW, o = i % OC;
    else n = i / (OC * HW * HW), o = i / (HW * HW) % OC, oh = i / HW % HW, ow = i % HW;
    double sum = 0, mag = 0;
    for (index_t c = 0; c < C; ++c)
      for (index_t kh = 0; kh < KS; ++kh)
        for (index_t kw = 0; kw < KS; ++kw) {
          const index_t h = oh + kh - 1, w = ow + kw - 1;
          if (h < 0 || h >= HW || w < 0 || w >= HW) continue;
          const double p = xv(n, c, h, w) * wv(o, c, kh, kw);
          sum += p, mag += std::abs(p);
        }
    d->at.push_back(i), d->ref.push_back(sum), d->bound.push_back(4.0 * double(C * KS * KS) * 0x1p-24 * mag + 1e-30);
  }
  auto expr = [&] {
    if constexpr (Nhwc) return tf::conv2d(d->x, d->w, tf::padding<1>, tf::nhwc);
    else return tf::conv2d(d->x, d->w, tf::padding<1>);
  };
  const auto [dst, prepared] = prepared_for(d->y, expr());
  static_assert(tf::plan::gemm_root_v<std::remove_const_t<decltype(prepared)>>,
                "tools/tune: conv2d no longer reaches cpu::run_conv");
  conv_problem pr;
  pr.name = std::string(Nhwc ? "NHWC" : "NCHW") + " " + std::to_string(C) + " -> " + std::to_string(OC) + " at " +
            std::to_string(HW) + ", batch " + std::to_string(N);
  pr.run = [d, dst, prepared](const conv_config& c) {
    if (c.read_in_place && c.turn_nchw) tf::cpu::run_conv<true, true>(dst, prepared, c.blocking);
    else if (c.read_in_place) tf::cpu::run_conv<true, false>(dst, prepared, c.blocking);
    else tf::cpu::run_conv<false, false>(dst, prepared, c.blocking);
  };
  pr.correct = [d] {
    for (std::size_t k = 0; k < d->at.size(); ++k)
      if (!(std::abs(double(d->y.data()[d->at[k]]) - d->ref[k]) <= d->bound[k])) return false;
    return true;
  };
  return pr;
}

using conv_result = search_result<conv_config>;

inline conv_result tune_conv(bool quick, double min_s) {
  using tenfold::cpu::gemm_split_axis;
  std::vector<conv_problem> probs;
  probs.push_back(make_conv_problem<true, 1, 32, 64, 14>());
  probs.push_back(make_conv_problem<false, 1, 32, 64, 14>());
  if (!quick) {
    probs.push_back(make_conv_problem<true, 32, 1, 32, 28>());
    probs.push_back(make_conv_problem<true, 32, 32, 64, 28>());
    probs.push_back(make_conv_problem<true, 32, 32, 64, 14>());
    probs.push_back(make_conv_problem<false, 32, 32, 64, 28>());
    probs.push_back(make_conv_problem<false, 32, 32, 64, 14>());
    // examples/fashion_mnist's two convolutions (batch 64, NHWC)
    probs.push_back(make_conv_problem<true, 64, 1, 16, 28>());
    probs.push_back(make_conv_problem<true, 64, 16, 32, 14>());
  }
  conv_result r;
  // Each shape timed twice, over the pool and on one thread (a user's TENFOLD_NUM_THREADS=1, or a pool
  // busy with other work): measured index i is shape i / 2, on one thread where i is odd.
  const std::size_t measured = 2 * probs.size();
  auto seconds = [&](std::size_t i, const conv_config& cfg) { return probs[i / 2].seconds(cfg, min_s, i % 2 == 1); };
  std::vector<double> base(measured);
  for (std::size_t i = 0; i < probs.size(); ++i) {
    probs[i].run(conv_config{});
    if (!probs[i].correct())
      throw std::runtime_error("the convolutions' default configuration is wrong on this machine: run the tests");
  }
  for (std::size_t i = 0; i < measured; ++i) base[i] = seconds(i, conv_config{});
  auto score = [&](const conv_config& cfg) {
    ++r.tried;
    return score_candidate(
        base,
        [&](std::size_t i) {
          probs[i / 2].run(cfg);
          return probs[i / 2].correct();
        },
        [&](std::size_t i) { return seconds(i, cfg); }, r.rejected);
  };
  conv_config best{};
  double best_score = 1.0;
  auto try_config = [&](const conv_config& cfg) {
    if (cfg == best) return;
    const double sc = score(cfg);
    if (sc < best_score) best_score = sc, best = cfg;
  };
  // The lowerings at the default blocking: windows read in place but NCHW not turned; windows packed.
  try_config(conv_config{.read_in_place = true, .turn_nchw = false});
  try_config(conv_config{.read_in_place = false, .turn_nchw = false});
  // The blocking, one parameter at a time from the best so far.
  auto sweep = [&](const std::vector<index_t>& values, index_t tenfold::cpu::gemm_config::*field) {
    const conv_config from = best;
    for (index_t v : values) {
      conv_config cfg = from;
      cfg.blocking.*field = v;
      try_config(cfg);
    }
  };
  sweep(quick ? std::vector<index_t>{128, 256} : std::vector<index_t>{128, 192, 256, 384},
        &tenfold::cpu::gemm_config::kc);
  sweep(quick ? std::vector<index_t>{8, 24} : std::vector<index_t>{8, 12, 16, 24, 32, 48},
        &tenfold::cpu::gemm_config::mc_panels);
  if (!quick) sweep({1, 2, 3, 4}, &tenfold::cpu::gemm_config::parts_per_thread);
  {
    const conv_config from = best;
    for (gemm_split_axis axis : {gemm_split_axis::automatic, gemm_split_axis::rows, gemm_split_axis::columns}) {
      conv_config cfg = from;
      cfg.blocking.split = axis;
      try_config(cfg);
    }
  }
  confirm_into(
      r, best, measured, quick ? 1 : 5, [&](std::size_t i) { return seconds(i, conv_config{}); },
      [&](std::size_t i) { return seconds(i, best); },
      [&](std::size_t i) { return probs[i / 2].name + (i % 2 ? " (one thread)" : ""); });
  return r;
}
} // namespace tune
