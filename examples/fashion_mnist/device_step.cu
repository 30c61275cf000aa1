// The CNN's training step on a CUDA device (device_step.hpp). It is trainer<B>::step (cnn.hpp) for one
// process, with every tensor a cuda::Tensor and every operand its device leaf (.expr()): forward, keeping
// each stage's output; backward stage by stage through the stages' vjps; batch norm's running
// statistics; Adam. The dropout mask is drawn as the CPU trainer draws it (Philox, same stream), so both
// train the same network on the same batches up to float rounding. Every expression is evaluated in one
// device arena of device_trainer::arena_bytes (each assignment's plan checked against it at compile time).
#include <tenfold/cuda.hpp>

#include "device_step.hpp"

namespace fashion {
namespace {
template <class S>
using dev = cuda::Tensor<float, S>;
constexpr index_t B = device_batch;
} // namespace

struct device_trainer {
  // parameters, batch norm's running statistics, Adam's moments
  dev<shape<3, 3, 1, C1>> w1;
  dev<shape<C1>> g1, b1, run_mean1, run_var1;
  dev<shape<3, 3, C1, C2>> w2;
  dev<shape<C2>> g2, b2, run_mean2, run_var2;
  dev<shape<flat, hidden>> w3;
  dev<shape<hidden>> b3;
  dev<shape<hidden, classes>> w4;
  dev<shape<classes>> b4;
  optim::moments_of<dev<shape<3, 3, 1, C1>>> s_w1;
  optim::moments_of<dev<shape<C1>>> s_g1, s_b1;
  optim::moments_of<dev<shape<3, 3, C1, C2>>> s_w2;
  optim::moments_of<dev<shape<C2>>> s_g2, s_b2;
  optim::moments_of<dev<shape<flat, hidden>>> s_w3;
  optim::moments_of<dev<shape<hidden>>> s_b3;
  optim::moments_of<dev<shape<hidden, classes>>> s_w4;
  optim::moments_of<dev<shape<classes>>> s_b4;
  // gradients
  dev<shape<3, 3, 1, C1>> d_w1;
  dev<shape<C1>> d_g1, d_b1, d_mean1, d_rstd1;
  dev<shape<3, 3, C1, C2>> d_w2;
  dev<shape<C2>> d_g2, d_b2, d_mean2, d_rstd2;
  dev<shape<flat, hidden>> d_w3;
  dev<shape<hidden>> d_b3;
  dev<shape<hidden, classes>> d_w4;
  dev<shape<classes>> d_b4;
  // the batch, the saved stage outputs and their gradients, the batch statistics
  dev<shape<B, 28, 28, 1>> x;
  cuda::Tensor<std::int64_t, shape<B>> labels;
  dev<shape<B, 28, 28, C1>> a1, ga1, r1, gr1;
  dev<shape<B, 14, 14, C1>> p1, gp1;
  dev<shape<B, 14, 14, C2>> a2, ga2, r2, gr2;
  dev<shape<B, 7, 7, C2>> p2, gp2;
  dev<shape<B, hidden>> h, gh, mask;
  dev<shape<C1>> mean1, var1, rstd1;
  dev<shape<C2>> mean2, var2, rstd2;
  dev<shape<B>> row_weight;
  cuda::Tensor<float> loss;
  // At least the largest plan among the step's expressions (they run one after another; set() checks
  // each at compile time): conv2's input padded [B, 16, 16, C1] and its windows [B, 14, 14, 3, 3, C1],
  // what its weight gradient gathered before it became a convolution over x transposed (x's size).
  static constexpr index_t arena_bytes = index_t(sizeof(float)) * B * (16 * 16 * C1 + 14 * 14 * 9 * C1);
  cuda::arena arena{std::size_t(arena_bytes)};

  template <class D, class E>
  void set(D& dst, E&& e) {
    static_assert(cuda::arena_bytes_for<D, E> <= arena_bytes, "device_trainer: the arena is too small for this expression");
    cuda::eval(dst, std::forward<E>(e), arena);
  }
  // The batch's mean and biased variance per channel of a [B, H, W, C] activation, and 1 / sqrt(var + eps).
  template <class A, class V>
  void statistics(const A& a, V& mean, V& var, V& rstd) {
    using S = typename A::shape_type;
    const float count = float(B * S::dims[1] * S::dims[2]);
    set(mean, sum(a.expr(), axes<0, 1, 2>) * (1.0f / count));
    set(var, sum(square(a.expr() - mean.expr()), axes<0, 1, 2>) * (1.0f / count));
    set(rstd, rsqrt(var.expr() + bn_eps));
  }
  // bn_relu's backward pass with the statistics' share (cnn.hpp's bn_relu_backward for one process): the
  // vjp told bn_relu's output r (relu's derivative reads it), and the mean's and rstd's gradients from
  // beta's and gamma's (d mean = -rstd gamma d beta, d rstd = gamma d gamma / rstd).
  template <class G, class A, class R, class V, class P, class DA, class DP>
  void bn_relu_backward(const G& grad, const A& a, const R& r, const V& mean, const V& rstd, const P& gamma, const P& beta,
                        DA& da, DP& dgamma, DP& dbeta, DP& dmean, DP& drstd) {
    using S = typename A::shape_type;
    const float count = float(B * S::dims[1] * S::dims[2]);
    const auto m = mean.expr(), rs = rstd.expr();
    auto [d_a, d_gamma, d_beta] = vjp_with_value(
        [&m, &rs](const auto& a_, const auto& g_, const auto& b_) { return bn_relu(a_, m, rs, g_, b_); }, r.expr(),
        grad.expr(), a, gamma, beta);
    set(dgamma, d_gamma), set(dbeta, d_beta);
    set(dmean, -(rs * gamma.expr()) * dbeta.expr()), set(drstd, gamma.expr() * dgamma.expr() / rs);
    set(da, d_a + (dmean.expr() * (1.0f / count) - drstd.expr() * rs * rs * rs * (a.expr() - m) * (1.0f / count)));
  }

  float step(optim::adam& opt, float lr, rng& dropout_rng) {
    // forward, keeping each stage's output
    set(a1, conv1(x.expr(), w1.expr()));
    statistics(a1, mean1, var1, rstd1);
    set(r1, bn_relu(a1.expr(), mean1.expr(), rstd1.expr(), g1.expr(), b1.expr()));
    set(p1, pool(r1.expr()));
    set(a2, conv2(p1.expr(), w2.expr()));
    statistics(a2, mean2, var2, rstd2);
    set(r2, bn_relu(a2.expr(), mean2.expr(), rstd2.expr(), g2.expr(), b2.expr()));
    set(p2, pool(r2.expr()));
    set(h, dense1<B>(p2.expr(), w3.expr(), b3.expr()));
    const float keep = 1.0f - dropout_p;
    const philox_stream draw = dropout_rng.reserve(std::uint64_t(B * hidden));
    rng mine(draw.seed);
    mine.advance(draw.offset);
    set(mask, where(bernoulli<shape<B, hidden>>(mine, keep), 1.0f / keep, 0.0f));
    // backward, stage by stage
    const auto m = mask.expr();
    const auto y = labels.expr();
    const auto rw = row_weight.expr();
    auto [l, dh, dw4, db4] = value_and_grad(
        [&](const auto& h_, const auto& w_, const auto& b_) { return head(h_, m, w_, b_, y, rw); }, h, w4, b4);
    set(loss, l), set(gh, dh), set(d_w4, dw4), set(d_b4, db4);
    // (told the layer's output h: relu's derivative reads it, and the matmul is not computed again)
    auto [dp2, dw3, db3] = vjp_with_value([](const auto& p_, const auto& w_, const auto& b_) { return dense1<B>(p_, w_, b_); },
                                          h.expr(), gh.expr(), p2, w3, b3);
    set(gp2, dp2), set(d_w3, dw3), set(d_b3, db3);
    auto [dr2] = vjp_with_value(pool, p2.expr(), gp2.expr(), r2); // the maxima read from p2
    set(gr2, dr2);
    bn_relu_backward(gr2, a2, r2, mean2, rstd2, g2, b2, ga2, d_g2, d_b2, d_mean2, d_rstd2);
    auto [dp1, dw2] = vjp(conv2, ga2.expr(), p1, w2);
    set(gp1, dp1), set(d_w2, dw2);
    auto [dr1] = vjp_with_value(pool, p1.expr(), gp1.expr(), r1);
    set(gr1, dr1);
    bn_relu_backward(gr1, a1, r1, mean1, rstd1, g1, b1, ga1, d_g1, d_b1, d_mean1, d_rstd1);
    const auto xe = x.expr();
    auto [dw1] = vjp([&xe](const auto& w_) { return conv1(xe, w_); }, ga1.expr(), w1);
    set(d_w1, dw1);
    // batch norm's running statistics (PyTorch's: the unbiased variance)
    const float n1 = float(B * 28 * 28), n2 = float(B * 14 * 14);
    set(run_mean1, run_mean1.expr() * (1 - bn_momentum) + mean1.expr() * bn_momentum);
    set(run_var1, run_var1.expr() * (1 - bn_momentum) + var1.expr() * (bn_momentum * n1 / (n1 - 1)));
    set(run_mean2, run_mean2.expr() * (1 - bn_momentum) + mean2.expr() * bn_momentum);
    set(run_var2, run_var2.expr() * (1 - bn_momentum) + var2.expr() * (bn_momentum * n2 / (n2 - 1)));
    // Adam
    opt.begin_step(lr);
    opt.update(w1, s_w1, d_w1), opt.update(g1, s_g1, d_g1), opt.update(b1, s_b1, d_b1);
    opt.update(w2, s_w2, d_w2), opt.update(g2, s_g2, d_g2), opt.update(b2, s_b2, d_b2);
    opt.update(w3, s_w3, d_w3), opt.update(b3, s_b3, d_b3), opt.update(w4, s_w4, d_w4), opt.update(b4, s_b4, d_b4);
    return cuda::to_host(loss)();
  }
};

void device_trainer_deleter::operator()(device_trainer* t) const { delete t; }

device_trainer_ptr make_device_trainer(const parameters& p) {
  if (!cuda::device_available()) throw error("fashion_mnist --device cuda: no CUDA device is available");
  device_trainer_ptr t(new device_trainer);
  t->w1.copy_from(p.w1), t->g1.copy_from(p.g1), t->b1.copy_from(p.b1), t->w2.copy_from(p.w2);
  t->g2.copy_from(p.g2), t->b2.copy_from(p.b2), t->w3.copy_from(p.w3), t->b3.copy_from(p.b3);
  t->w4.copy_from(p.w4), t->b4.copy_from(p.b4);
  t->run_mean1.copy_from(p.mean1), t->run_var1.copy_from(p.var1), t->run_mean2.copy_from(p.mean2), t->run_var2.copy_from(p.var2);
  Tensor<float, shape<B>> weight;
  for (auto& w : weight) w = 1.0f / float(B);
  t->row_weight.copy_from(weight);
  TENFOLD_CUDA_CHECK(cudaStreamSynchronize(nullptr)); // the host tensors may go before the copies are done
  return t;
}

float device_step(device_trainer& t, optim::adam& opt, float lr, const Tensor<float, shape<B, 28, 28, 1>>& x,
                  const Tensor<std::int64_t, shape<B>>& labels, rng& dropout_rng) {
  t.x.copy_from(x);
  t.labels.copy_from(labels);
  return t.step(opt, lr, dropout_rng);
}

void download(const device_trainer& t, parameters& p) {
  t.w1.copy_to(p.w1), t.g1.copy_to(p.g1), t.b1.copy_to(p.b1), t.w2.copy_to(p.w2), t.g2.copy_to(p.g2);
  t.b2.copy_to(p.b2), t.w3.copy_to(p.w3), t.b3.copy_to(p.b3), t.w4.copy_to(p.w4), t.b4.copy_to(p.b4);
  t.run_mean1.copy_to(p.mean1), t.run_var1.copy_to(p.var1), t.run_mean2.copy_to(p.mean2), t.run_var2.copy_to(p.var2);
}
} // namespace fashion
