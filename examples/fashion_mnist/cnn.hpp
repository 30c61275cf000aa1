#pragma once
// The Fashion-MNIST CNN as a C++ program: two blocks of conv 3x3 -> batch norm -> ReLU -> 2x2 max pool,
// then linear -> ReLU -> dropout -> linear, trained with Adam on cross-entropy.
//
//   x [B, 28, 28, 1] -> conv 1->16 -> [B, 28, 28, 16] -> bn, relu, pool -> [B, 14, 14, 16]
//                    -> conv 16->32 -> [B, 14, 14, 32] -> bn, relu, pool -> [B, 7, 7, 32]
//                    -> linear 1568->128, relu, dropout(0.25) -> linear 128->10 -> logits
//
// The forward pass is written once per stage (the functions below), as expressions. A training step
// runs the stages forward keeping each stage's output in a tensor, then runs them backward: each
// stage's gradients are `vjp` of the same function (autodiff/backward.hpp), built at compile time.
// Inside a stage, values are recomputed where the backward pass reads them; across stages they are
// read from the saved tensors. The layout is NHWC (channels innermost): batch norm's per-channel
// statistics are then column sums and the pools' windows are runs of channels, both vectorised.
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>

namespace fashion {
using namespace tenfold;

inline constexpr index_t C1 = 16, C2 = 32, hidden = 128, classes = 10, flat = C2 * 7 * 7;
inline constexpr float dropout_p = 0.25f, bn_eps = 1e-5f, bn_momentum = 0.1f;

// ---- the stages (the same functions run forward and are differentiated) ----
inline constexpr auto conv1 = [](const auto& x, const auto& w) { return conv2d(x, w, padding<1>, nhwc); };
inline constexpr auto conv2 = [](const auto& x, const auto& w) { return conv2d(x, w, padding<1>, nhwc); };
// batch norm (batch statistics) -> relu, then a 2x2 max pool: two stages, so that the pool's
// backward pass reads relu's output from memory rather than recomputing the normalisation per window
inline constexpr auto bn_relu = [](const auto& a, const auto& gamma, const auto& beta) {
  return relu(batch_norm_train<-1>(a, gamma, beta, bn_eps));
};
inline constexpr auto pool = [](const auto& r) { return max_pool2d<2>(r, nhwc); };
template <index_t B>
auto dense1(const auto& p, const auto& w, const auto& b) {
  return relu(matmul(reshape<B, flat>(p), w) + b);
}
// dropout's mask (0 or 1 / keep) is an input, drawn per step from Philox
inline constexpr auto head = [](const auto& h, const auto& mask, const auto& w, const auto& b, const auto& labels) {
  return cross_entropy(matmul(h * mask, w) + b, labels);
};

struct parameters {
  Tensor<float, shape<3, 3, 1, C1>> w1; // HWIO
  Tensor<float, shape<C1>> g1, b1;
  Tensor<float, shape<3, 3, C1, C2>> w2;
  Tensor<float, shape<C2>> g2, b2;
  Tensor<float, shape<flat, hidden>> w3;
  Tensor<float, shape<hidden>> b3;
  Tensor<float, shape<hidden, classes>> w4;
  Tensor<float, shape<classes>> b4;
  // batch norm's running statistics (state, not trained)
  Tensor<float, shape<C1>> mean1, var1;
  Tensor<float, shape<C2>> mean2, var2;

  // PyTorch's default initialisation: weights and biases uniform in +-1/sqrt(fan_in), gamma 1, beta 0,
  // running mean 0 and variance 1; drawn from Philox, so the same on every machine.
  explicit parameters(std::uint64_t seed) {
    rng g(seed);
    auto fill = [&g](auto& t, float fan_in) {
      using S = typename std::remove_cvref_t<decltype(t)>::shape_type;
      const float bound = 1.0f / std::sqrt(fan_in);
      t = uniform<S>(g, -bound, bound);
    };
    fill(w1, 9), fill(w2, C1 * 9), fill(w3, flat), fill(b3, flat), fill(w4, hidden), fill(b4, hidden);
    g1 = full<float, shape<C1>>(1.0f), b1 = zeros<float, shape<C1>>();
    g2 = full<float, shape<C2>>(1.0f), b2 = zeros<float, shape<C2>>();
    mean1 = zeros<float, shape<C1>>(), var1 = full<float, shape<C1>>(1.0f);
    mean2 = zeros<float, shape<C2>>(), var2 = full<float, shape<C2>>(1.0f);
  }
  // Trained tensors and their names (for the optimizer and the weights file), then the running statistics.
  template <class F>
  void each_trained(F&& f) {
    f("conv1.weight", w1), f("bn1.weight", g1), f("bn1.bias", b1), f("conv2.weight", w2), f("bn2.weight", g2),
        f("bn2.bias", b2), f("fc1.weight", w3), f("fc1.bias", b3), f("fc2.weight", w4), f("fc2.bias", b4);
  }
  template <class F>
  void each(F&& f) {
    each_trained(f);
    f("bn1.running_mean", mean1), f("bn1.running_var", var1), f("bn2.running_mean", mean2), f("bn2.running_var", var2);
  }
};

// Adam's moments, one pair per trained tensor.
struct optimizer_state {
  optim::moments<float, shape<3, 3, 1, C1>> w1;
  optim::moments<float, shape<C1>> g1, b1;
  optim::moments<float, shape<3, 3, C1, C2>> w2;
  optim::moments<float, shape<C2>> g2, b2;
  optim::moments<float, shape<flat, hidden>> w3;
  optim::moments<float, shape<hidden>> b3;
  optim::moments<float, shape<hidden, classes>> w4;
  optim::moments<float, shape<classes>> b4;
};

// One training step's tensors: the saved stage outputs and the gradients, held between steps; every
// expression of a step is evaluated in one arena whose size is a compile-time constant (each
// assignment checks its own plan against it at compile time), so a step allocates nothing.
template <index_t B>
struct trainer {
  // The largest plan among the step's expressions (they run one after another, so this is the step's
  // lower bound): conv2's weight gradient, which pads its input [B, 16, 16, C1] and gathers the windows
  // [B, 14, 14, 3, 3, C1] in the GEMM's order. set() checks every expression's plan against it.
  static constexpr index_t arena_bytes = index_t(sizeof(float)) * B * (16 * 16 * C1 + 14 * 14 * 9 * C1);
  struct aligned_free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<std::byte[], aligned_free> arena{static_cast<std::byte*>(::operator new[](std::size_t(arena_bytes), std::align_val_t(64)))};
  template <class D, class E>
  void set(D& dst, E&& e) {
    static_assert(eval_arena_bytes<D, E> <= arena_bytes, "trainer::arena_bytes is too small for this expression");
    eval(dst, std::forward<E>(e), std::span<std::byte>(arena.get(), std::size_t(arena_bytes)));
  }

  Tensor<float, shape<B, 28, 28, C1>> a1, ga1, r1, gr1;
  Tensor<float, shape<B, 14, 14, C1>> p1, gp1;
  Tensor<float, shape<B, 14, 14, C2>> a2, ga2, r2, gr2;
  Tensor<float, shape<B, 7, 7, C2>> p2, gp2;
  Tensor<float, shape<B, hidden>> h, gh, mask;
  Tensor<float, shape<3, 3, 1, C1>> gw1;
  Tensor<float, shape<C1>> gg1, gb1, bm1, bv1;
  Tensor<float, shape<3, 3, C1, C2>> gw2;
  Tensor<float, shape<C2>> gg2, gb2, bm2, bv2;
  Tensor<float, shape<flat, hidden>> gw3;
  Tensor<float, shape<hidden>> gb3;
  Tensor<float, shape<hidden, classes>> gw4;
  Tensor<float, shape<classes>> gb4;
  Tensor<float> loss;

  // One step of Adam on the batch (x, labels); returns the batch's mean loss.
  float step(parameters& p, optimizer_state& s, optim::adam& opt, float lr, const Tensor<float, shape<B, 28, 28, 1>>& x,
             const Tensor<std::int64_t, shape<B>>& labels, rng& dropout_rng) {
    // forward, keeping each stage's output
    set(a1, conv1(x, p.w1));
    set(r1, bn_relu(a1, p.g1, p.b1));
    set(p1, pool(r1));
    set(a2, conv2(p1, p.w2));
    set(r2, bn_relu(a2, p.g2, p.b2));
    set(p2, pool(r2));
    set(h, dense1<B>(p2, p.w3, p.b3));
    const float keep = 1.0f - dropout_p;
    set(mask, where(bernoulli<shape<B, hidden>>(dropout_rng, keep), 1.0f / keep, 0.0f));
    // backward, stage by stage
    auto [l, dh, dw4, db4] = value_and_grad([&](const auto& h_, const auto& w_, const auto& b_) { return head(h_, mask, w_, b_, labels); },
                                            h, p.w4, p.b4);
    set(loss, l), set(gh, dh), set(gw4, dw4), set(gb4, db4);
    auto [dp2, dw3, db3] = vjp([](const auto& p_, const auto& w_, const auto& b_) { return dense1<B>(p_, w_, b_); }, gh, p2, p.w3, p.b3);
    set(gp2, dp2), set(gw3, dw3), set(gb3, db3);
    auto [dr2] = vjp(pool, gp2, r2);
    set(gr2, dr2);
    auto [da2, dg2, db2] = vjp(bn_relu, gr2, a2, p.g2, p.b2);
    set(ga2, da2), set(gg2, dg2), set(gb2, db2);
    auto [dp1, dw2] = vjp(conv2, ga2, p1, p.w2);
    set(gp1, dp1), set(gw2, dw2);
    auto [dr1] = vjp(pool, gp1, r1);
    set(gr1, dr1);
    auto [da1, dg1, db1] = vjp(bn_relu, gr1, a1, p.g1, p.b1);
    set(ga1, da1), set(gg1, dg1), set(gb1, db1);
    auto [dw1] = vjp([&x](const auto& w_) { return conv1(x, w_); }, ga1, p.w1);
    set(gw1, dw1);
    // batch norm's running statistics
    auto [m1, v1] = batch_statistics<-1>(a1);
    set(bm1, m1), set(bv1, v1);
    set(p.mean1, p.mean1 * (1 - bn_momentum) + bm1 * bn_momentum), set(p.var1, p.var1 * (1 - bn_momentum) + bv1 * bn_momentum);
    auto [m2, v2] = batch_statistics<-1>(a2);
    set(bm2, m2), set(bv2, v2);
    set(p.mean2, p.mean2 * (1 - bn_momentum) + bm2 * bn_momentum), set(p.var2, p.var2 * (1 - bn_momentum) + bv2 * bn_momentum);
    // Adam
    opt.begin_step(lr);
    opt.update(p.w1, s.w1, gw1), opt.update(p.g1, s.g1, gg1), opt.update(p.b1, s.b1, gb1);
    opt.update(p.w2, s.w2, gw2), opt.update(p.g2, s.g2, gg2), opt.update(p.b2, s.b2, gb2);
    opt.update(p.w3, s.w3, gw3), opt.update(p.b3, s.b3, gb3), opt.update(p.w4, s.w4, gw4), opt.update(p.b4, s.b4, gb4);
    return loss();
  }
};

// Inference: batch norm with the running statistics, no dropout; the logits of a batch.
template <index_t B>
auto logits(const parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x) {
  auto b1 = max_pool2d<2>(relu(batch_norm<-1>(conv2d(x, p.w1, padding<1>, nhwc), p.mean1, p.var1, p.g1, p.b1, bn_eps)), nhwc);
  auto b2 = max_pool2d<2>(relu(batch_norm<-1>(conv2d(b1, p.w2, padding<1>, nhwc), p.mean2, p.var2, p.g2, p.b2, bn_eps)), nhwc);
  return matmul(relu(matmul(reshape<B, flat>(b2), p.w3) + p.b3), p.w4) + p.b4;
}
} // namespace fashion
