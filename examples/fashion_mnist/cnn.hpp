#pragma once
// The Fashion-MNIST CNN as a C++ program: two blocks of conv 3x3 -> batch norm -> ReLU -> 2x2 max pool,
// then linear -> ReLU -> dropout -> linear, trained with Adam on cross-entropy.
//
//   x [B, 28, 28, 1] -> conv 1->16 -> [B, 28, 28, 16] -> bn, relu, pool -> [B, 14, 14, 16]
//                    -> conv 16->32 -> [B, 14, 14, 32] -> bn, relu, pool -> [B, 7, 7, 32]
//                    -> linear 1568->128, relu, dropout(0.25) -> linear 128->10 -> logits
//
// The forward pass is written once per stage (the functions below), as expressions. A training step
// runs the stages forward keeping each stage's output in a slot, then runs them backward: each
// stage's gradients are `vjp` of the same function (autodiff/backward.hpp), built at compile time.
// Inside a stage, values are recomputed where the backward pass reads them; across stages they are
// read from the saved slots. The whole step is one list of statements (core/step.hpp), planned as one
// arena at compile time (trainer<B>::plan_for<Comm>). The layout is NHWC (channels innermost): batch norm's per-channel
// statistics are then column sums and the pools' windows are runs of channels, both vectorised.
//
// Data-parallel training (dist/): each rank runs a step on its shard of the global batch, and the step
// is the single-process step of the whole batch, up to float summation order: batch norm's statistics
// are summed over every rank's rows (and so are the two sums its backward pass needs: a synchronised
// batch norm), each rank draws the dropout mask of its own rows of the global draw, the loss weighs
// every row 1 / (global batch), and the gradients, laid out by the step's plan, are summed over the
// ranks by allreduce in the buckets the plan cuts (two here). With one process the communicator is
// dist::single_process and every collective is a no-op.
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>
#include <tenfold/dist/sharded_adam.hpp>
#include <tenfold/tenfold.hpp>

#include <array>
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
// batch norm -> relu, then a 2x2 max pool: two stages, so that the pool's backward pass reads relu's
// output from memory rather than recomputing the normalisation per window. The batch statistics (the
// mean and 1 / sqrt(var + eps) per channel) are inputs: they are the whole global batch's, computed
// over every rank (sync_statistics), and the backward pass adds their gradients' share by hand.
inline constexpr auto bn_relu = [](const auto& a, const auto& mean, const auto& rstd, const auto& gamma, const auto& beta) {
  return relu((a - mean) * rstd * gamma + beta);
};
inline constexpr auto pool = [](const auto& r) { return max_pool2d<2>(r, nhwc); };
template <index_t B>
auto dense1(const auto& p, const auto& w, const auto& b) {
  return relu(matmul(reshape<B, flat>(p), w) + b);
}
// dropout's mask (0 or 1 / keep) is an input, drawn per step from Philox. Cross-entropy per row, weighted
// by row_weight: 1 / (global batch) for this rank's rows, 0 for the padding rows of an uneven shard.
inline constexpr auto head = [](const auto& h, const auto& mask, const auto& w, const auto& b, const auto& labels,
                                const auto& row_weight) {
  auto one_hot = eq(unsqueeze<-1>(labels), arange<std::int64_t, classes>());
  auto nll = -sum(where(one_hot, log_softmax(matmul(h * mask, w) + b), 0.0f), axis<-1>);
  return sum(nll * row_weight);
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

// The trained tensors' gradients and the batch's loss: the step's results (kept slots, core/step.hpp).
// The plan lays them out at the front of the step's arena in the order the backward pass finishes them
// and cuts them into buckets of at least bucket_bytes; run_step hands each bucket over as soon as its
// last gradient is written, and its allreduce (summing over the ranks, no copy) runs while the rest of
// the backward pass goes on. Here: the loss and the dense layers' (98% of the floats) first, the
// convolution blocks' second.
struct gradient_slots {
  slot<float, shape<3, 3, 1, C1>, kept<struct w1_>> w1;
  slot<float, shape<C1>, kept<struct g1_>> g1;
  slot<float, shape<C1>, kept<struct b1_>> b1;
  slot<float, shape<3, 3, C1, C2>, kept<struct w2_>> w2;
  slot<float, shape<C2>, kept<struct g2_>> g2;
  slot<float, shape<C2>, kept<struct b2_>> b2;
  slot<float, shape<flat, hidden>, kept<struct w3_>> w3;
  slot<float, shape<hidden>, kept<struct b3_>> b3;
  slot<float, shape<hidden, classes>, kept<struct w4_>> w4;
  slot<float, shape<classes>, kept<struct b4_>> b4;
  slot<float, shape<>, kept<struct loss_>> loss;
};
inline constexpr index_t bucket_bytes = 64 << 10;

// Which rows of the global batch this rank's step holds: `count` rows (at most the trainer's B; the rest
// are padding) starting at row `first` of `global`.
struct shard {
  index_t first, count, global;
  // Rank r of n's rows of a global batch: the first global % n ranks take one row more.
  static shard of(int r, int n, index_t global) {
    const index_t base = global / n, extra = global % n;
    return {r * base + std::min<index_t>(r, extra), base + (r < extra), global};
  }
};

// The values of one training step that live only during it: the forward stages' outputs that the
// backward pass reads, the gradients of those outputs, the batch statistics. Each is a slot of the
// step (core/step.hpp): the planner gives it a place in the step's one arena, alive from the statement
// that writes it to the last that reads it, so activations and their gradients share the arena over
// time. (The tags are the slots' names; one step's tags differ.)
template <index_t B>
struct step_values {
  slot<float, shape<B, 28, 28, C1>, struct a1_> a1;
  slot<float, shape<B, 28, 28, C1>, struct r1_> r1;
  slot<float, shape<B, 14, 14, C1>, struct p1_> p1;
  slot<float, shape<B, 14, 14, C2>, struct a2_> a2;
  slot<float, shape<B, 14, 14, C2>, struct r2_> r2;
  slot<float, shape<B, 7, 7, C2>, struct p2_> p2;
  slot<float, shape<B, hidden>, struct h_> h;
  slot<float, shape<B, hidden>, struct mask_> mask;
  slot<float, shape<B, hidden>, struct gh_> gh;
  slot<float, shape<B, 7, 7, C2>, struct gp2_> gp2;
  slot<float, shape<B, 14, 14, C2>, struct gr2_> gr2;
  slot<float, shape<B, 14, 14, C2>, struct ga2_> ga2;
  slot<float, shape<B, 14, 14, C1>, struct gp1_> gp1;
  slot<float, shape<B, 28, 28, C1>, struct gr1_> gr1;
  slot<float, shape<B, 28, 28, C1>, struct ga1_> ga1;
  // batch norm: the global batch's mean, biased variance and 1 / sqrt(var + eps); the gradients of the
  // loss with respect to the mean and rstd, side by side (summed over the ranks together: one allreduce)
  slot<float, shape<C1>, struct mean1_> mean1;
  slot<float, shape<C1>, struct var1_> var1;
  slot<float, shape<C1>, struct rstd1_> rstd1;
  slot<float, shape<2 * C1>, struct dstat1_> dstat1;
  slot<float, shape<C2>, struct mean2_> mean2;
  slot<float, shape<C2>, struct var2_> var2;
  slot<float, shape<C2>, struct rstd2_> rstd2;
  slot<float, shape<2 * C2>, struct dstat2_> dstat2;
};

// What run_step calls as each bucket of gradients completes (bucket k, its elements in the arena): one
// function type for every use, so that the step is compiled once (a plain allreduce or ZeRO's
// reduce-scatter, chosen at run time).
struct bucket_callback {
  void* self;
  void (*call)(void*, int, std::span<float>);
  void operator()(int k, std::span<float> b) const { call(self, k, b); }
  template <class F>
  static bucket_callback of(F& f) {
    return {&f, [](void* s, int k, std::span<float> b) { (*static_cast<F*>(s))(k, b); }};
  }
};

// One training step as statements over step_values and gradient_slots (planned as one arena:
// trainer<B>::plan_for), and what lasts between steps: the row weights of the shard, and the arena
// (whose front holds the gradients after a step).
template <index_t B>
struct trainer {
  // The step's statements for a communicator of type Comm; their plan is a compile-time constant.
  template <class Comm>
  auto statements(parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x,
                  const Tensor<std::int64_t, shape<B>>& labels, rng& dropout, Comm& comm);
  template <class Comm>
  using plan_for = step_plan<decltype(std::declval<trainer&>().template statements<Comm>(
      std::declval<parameters&>(), std::declval<const Tensor<float, shape<B, 28, 28, 1>>&>(),
      std::declval<const Tensor<std::int64_t, shape<B>>&>(), std::declval<rng&>(), std::declval<Comm&>()))>;

  arena_buffer arena; // made by the first step, of the plan's size
  // per row: 1 for this rank's rows, 0 for padding; the loss weight, 1 / (global batch) or 0
  Tensor<float, shape<B>> row_mask, row_weight;
  shard rows{0, 0, 0};
  gradient_slots g; // (names only: the values lie in the arena)

  // Adam with its moments sharded over the ranks (ZeRO stage 1, dist/sharded_adam.hpp).
  template <class Comm>
  using sharded_optimizer = dist::sharded_adam<Comm, plan_for<Comm>, bucket_bytes>;

  // The step's statements on this rank's rows of the global batch (x, labels; rows past rows.count are
  // padding, any finite values), calling on_bucket(k, span) as each bucket of gradients completes.
  // dropout_rng is the global draw's (the same on every rank).
  template <class Comm>
  void run(parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x, const Tensor<std::int64_t, shape<B>>& labels,
           const shard& part, rng& dropout_rng, Comm& comm, bucket_callback on_bucket);

  // One step of Adam: the gradients allreduced bucket by bucket, then every parameter updated; returns
  // the global batch's mean loss.
  template <class Comm>
  float step(parameters& p, optimizer_state& s, optim::adam& opt, float lr, const Tensor<float, shape<B, 28, 28, 1>>& x,
             const Tensor<std::int64_t, shape<B>>& labels, const shard& part, rng& dropout_rng, Comm& comm);
  // The same step with ZeRO-1: each bucket's gradients reduce-scattered as it completes, Adam on this
  // rank's share, the parameters all-gathered. The same parameters as step() after every step, with a
  // share of Adam's moments per rank.
  template <class Comm>
  float step(parameters& p, sharded_optimizer<Comm>& opt, float lr, const Tensor<float, shape<B, 28, 28, 1>>& x,
             const Tensor<std::int64_t, shape<B>>& labels, const shard& part, rng& dropout_rng, Comm& comm);

 private:
  // The global batch's mean and biased variance per channel of a [B, H, W, C] activation, over every
  // rank's rows (two passes, each one sum allreduced), and 1 / sqrt(var + eps).
  template <class Comm, class A, class R, class M, class V, class D>
  auto statistics(Comm& comm, const A& a, const R& rows4, const M& mean, const V& var, const D& rstd) const {
    using S = typename A::shape_type;
    const float count = float(rows.global * S::dims[1] * S::dims[2]);
    auto allreduce = [&comm](auto m) { comm.allreduce(m); };
    return tenfold::statements(assign(mean, sum(a * rows4, axes<0, 1, 2>)), host(allreduce, mean), assign(mean, mean * (1.0f / count)),
                      assign(var, sum(square(a - mean) * rows4, axes<0, 1, 2>)), host(allreduce, var),
                      assign(var, var * (1.0f / count)), assign(rstd, rsqrt(var + bn_eps)));
  }
  // bn_relu's backward pass: its vjp gives gamma's and beta's gradients, and from them the loss's
  // gradients with respect to the mean and rstd over this rank's rows; summed over the ranks, they add
  // their share to every row's gradient (d mean / d a = 1 / n; d rstd / d a =
  // -rstd^3 (a - mean) / n, n the count over the global batch).
  template <class Comm, class G, class A, class R, class M, class V, class P, class DA, class DG, class DB, class DS>
  auto bn_relu_backward(Comm& comm, const G& grad, const A& a, const R& rows4, const M& mean, const V& rstd,
                        const P& gamma, const P& beta, const DA& da, const DG& dgamma, const DB& dbeta,
                        const DS& dstat) const {
    using S = typename A::shape_type;
    constexpr index_t C = S::dims[3];
    const float count = float(rows.global * S::dims[1] * S::dims[2]);
    auto [d_a, d_gamma, d_beta] = vjp(
        [&mean, &rstd](const auto& a_, const auto& g_, const auto& b_) { return bn_relu(a_, mean, rstd, g_, b_); }, grad, a,
        gamma, beta);
    auto dmean = slice<range<0, C>>(dstat), drstd = slice<range<C, 2 * C>>(dstat);
    // The mean's and rstd's gradients are the same column sums as beta's and gamma's, scaled per channel:
    // d mean = sum(g relu' * -rstd gamma) = -rstd gamma d beta, d rstd = sum(g relu' (a - mean) gamma) =
    // gamma d gamma / rstd. The two sums together: one pass over [B, H, W, C] from memory instead of four.
    return tenfold::statements(together(assign(dgamma, d_gamma), assign(dbeta, d_beta)), assign(dmean, -(rstd * gamma) * dbeta),
                               assign(drstd, gamma * dgamma / rstd),
                      host([&comm](auto m) { comm.allreduce(m); }, dstat),
                      assign(da, d_a + rows4 * (dmean * (1.0f / count) -
                                                drstd * rstd * rstd * rstd * (a - mean) * (1.0f / count))));
  }
};

template <index_t B>
template <class Comm>
auto trainer<B>::statements(parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x,
                            const Tensor<std::int64_t, shape<B>>& labels, rng& dropout, Comm& comm) {
  const step_values<B> v;
  auto rows4 = reshape<B, 1, 1, 1>(row_mask);
  const float keep = 1.0f - dropout_p;
  // backward, stage by stage: each stage's gradients are vjp of its forward function
  auto [l, dh, dw4, db4] = value_and_grad(
      [&](const auto& h_, const auto& w_, const auto& b_) { return head(h_, v.mask, w_, b_, labels, row_weight); }, v.h,
      p.w4, p.b4);
  // (told dense1's value h: relu's derivative reads h > 0, so the product is not computed again)
  auto [dp2, dw3, db3] = vjp_with_value([](const auto& p_, const auto& w_, const auto& b_) { return dense1<B>(p_, w_, b_); },
                                        v.h, v.gh, v.p2, p.w3, p.b3);
  auto [dr2] = vjp_with_value(pool, v.p2, v.gp2, v.r2); // the pooled maxima read from p2, not recomputed
  auto [dp1, dw2] = vjp(conv2, v.ga2, v.p1, p.w2);
  auto [dr1] = vjp_with_value(pool, v.p1, v.gp1, v.r1);
  auto [dw1] = vjp([&x](const auto& w_) { return conv1(x, w_); }, v.ga1, p.w1);
  // batch norm's running statistics (PyTorch's: the unbiased variance)
  const float n1 = float(rows.global * 28 * 28), n2 = float(rows.global * 14 * 14);
  return tenfold::statements(
      // forward, keeping each stage's output
      assign(v.a1, conv1(x, p.w1)), statistics(comm, v.a1, rows4, v.mean1, v.var1, v.rstd1),
      assign(v.r1, bn_relu(v.a1, v.mean1, v.rstd1, p.g1, p.b1)), assign(v.p1, pool(v.r1)),
      assign(v.a2, conv2(v.p1, p.w2)), statistics(comm, v.a2, rows4, v.mean2, v.var2, v.rstd2),
      assign(v.r2, bn_relu(v.a2, v.mean2, v.rstd2, p.g2, p.b2)), assign(v.p2, pool(v.r2)),
      assign(v.h, dense1<B>(v.p2, p.w3, p.b3)),
      assign(v.mask, where(bernoulli<shape<B, hidden>>(dropout, keep), 1.0f / keep, 0.0f)),
      // backward (run_step starts each bucket's allreduce once it is complete). The product that several
      // gradients read (the logits) is computed once.
      tenfold::save_forward<struct dense_products>(
          tenfold::statements(assign(g.loss, l), assign(v.gh, dh), assign(g.w4, dw4), assign(g.b4, db4),
                              assign(v.gp2, dp2), assign(g.w3, dw3), assign(g.b3, db3))),
      assign(v.gr2, dr2),
      bn_relu_backward(comm, v.gr2, v.a2, rows4, v.mean2, v.rstd2, p.g2, p.b2, v.ga2, g.g2, g.b2, v.dstat2),
      assign(v.gp1, dp1), assign(g.w2, dw2), assign(v.gr1, dr1),
      bn_relu_backward(comm, v.gr1, v.a1, rows4, v.mean1, v.rstd1, p.g1, p.b1, v.ga1, g.g1, g.b1, v.dstat1),
      assign(g.w1, dw1),
      // the running statistics, while the gradients travel
      assign(p.mean1, p.mean1 * (1 - bn_momentum) + v.mean1 * bn_momentum),
      assign(p.var1, p.var1 * (1 - bn_momentum) + v.var1 * (bn_momentum * n1 / (n1 - 1))),
      assign(p.mean2, p.mean2 * (1 - bn_momentum) + v.mean2 * bn_momentum),
      assign(p.var2, p.var2 * (1 - bn_momentum) + v.var2 * (bn_momentum * n2 / (n2 - 1))));
}

// Defined outside the class, so not inline: a file can declare their instantiations `extern template`
// and leave them to another (main.cpp and step_64.cpp / step_32.cpp: the steps are most of the example's
// compile time, and two files build in parallel).
template <index_t B>
template <class Comm>
void trainer<B>::run(parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x,
                     const Tensor<std::int64_t, shape<B>>& labels, const shard& part, rng& dropout_rng, Comm& comm,
                     bucket_callback on_bucket) {
  using plan = plan_for<Comm>;
  if (part.count < 1 || part.count > B)
    throw error(detail::message("fashion_mnist: a shard of ", part.count, " rows in a trainer of ", B));
  if (part.first != rows.first || part.count != rows.count || part.global != rows.global) {
    rows = part;
    for (index_t i = 0; i < B; ++i) row_mask(i) = i < rows.count ? 1.0f : 0.0f;
    row_weight = row_mask * (1.0f / float(rows.global));
  }
  if (arena.size() < std::size_t(plan::bytes)) arena = arena_buffer(std::size_t(plan::bytes)); // the first step: the arena, once
  // this rank's rows of the global batch's dropout mask
  const philox_stream global_draw = dropout_rng.reserve(std::uint64_t(rows.global * hidden));
  rng mine(global_draw.seed);
  mine.advance(global_draw.offset + std::uint64_t(rows.first * hidden));
  const std::span<std::byte> a = arena.span();
  run_step(statements(p, x, labels, mine, comm), a, on_buckets<float, bucket_bytes>(on_bucket));
}

template <index_t B>
template <class Comm>
float trainer<B>::step(parameters& p, optimizer_state& s, optim::adam& opt, float lr,
                       const Tensor<float, shape<B, 28, 28, 1>>& x, const Tensor<std::int64_t, shape<B>>& labels,
                       const shard& part, rng& dropout_rng, Comm& comm) {
  using plan = plan_for<Comm>;
  std::array<typename Comm::pending, plan::template buckets<bucket_bytes>.count> buckets{};
  auto start = [&](int k, std::span<float> b) { buckets[std::size_t(k)] = comm.allreduce_start(b); };
  run(p, x, labels, part, dropout_rng, comm, bucket_callback::of(start));
  for (auto& b : buckets) comm.wait(b);
  const std::span<std::byte> a = arena.span();
  auto d = [&a](const auto& slot) { return plan::kept(a, slot); };
  opt.begin_step(lr);
  opt.update(p.w1, s.w1, d(g.w1)), opt.update(p.g1, s.g1, d(g.g1)), opt.update(p.b1, s.b1, d(g.b1));
  opt.update(p.w2, s.w2, d(g.w2)), opt.update(p.g2, s.g2, d(g.g2)), opt.update(p.b2, s.b2, d(g.b2));
  opt.update(p.w3, s.w3, d(g.w3)), opt.update(p.b3, s.b3, d(g.b3)), opt.update(p.w4, s.w4, d(g.w4)),
      opt.update(p.b4, s.b4, d(g.b4));
  return d(g.loss)();
}

template <index_t B>
template <class Comm>
float trainer<B>::step(parameters& p, sharded_optimizer<Comm>& opt, float lr,
                       const Tensor<float, shape<B, 28, 28, 1>>& x, const Tensor<std::int64_t, shape<B>>& labels,
                       const shard& part, rng& dropout_rng, Comm& comm) {
  using dist::trained;
  auto start = [&opt](int k, std::span<float> b) { opt.start_bucket(k, b); };
  run(p, x, labels, part, dropout_rng, comm, bucket_callback::of(start));
  const std::span<std::byte> a = arena.span();
  opt.update(lr, a, trained(p.w1, g.w1), trained(p.g1, g.g1), trained(p.b1, g.b1), trained(p.w2, g.w2),
             trained(p.g2, g.g2), trained(p.b2, g.b2), trained(p.w3, g.w3), trained(p.b3, g.b3), trained(p.w4, g.w4),
             trained(p.b4, g.b4));
  // (the summed loss lies in one rank's share; the arena holds this rank's own)
  float loss[1] = {plan_for<Comm>::kept(a, g.loss)()};
  comm.allreduce(std::span(loss));
  return loss[0];
}

// Inference: batch norm with the running statistics, no dropout; the logits of a batch.
template <index_t B>
auto logits(const parameters& p, const Tensor<float, shape<B, 28, 28, 1>>& x) {
  auto b1 = max_pool2d<2>(relu(batch_norm<-1>(conv2d(x, p.w1, padding<1>, nhwc), p.mean1, p.var1, p.g1, p.b1, bn_eps)), nhwc);
  auto b2 = max_pool2d<2>(relu(batch_norm<-1>(conv2d(b1, p.w2, padding<1>, nhwc), p.mean2, p.var2, p.g2, p.b2, bn_eps)), nhwc);
  return matmul(relu(matmul(reshape<B, flat>(b2), p.w3) + p.b3), p.w4) + p.b4;
}
} // namespace fashion
