// The backward pass on the device: every elementwise derivative of the op table (its vjp, as
// grad_ops_test checks it on the CPU against finite differences) and value_and_grad of whole losses
// with cuda::Tensor parameters (an embedding's scatter-add among them), each against the CPU evaluator on
// the same inputs. The CPU's gradients
// are checked against long-double references by the CPU tests; here the device must agree with them
// within a few float roundings of the device's libm and of another summation order.
#include "cuda_test_support.hpp"

#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>

#include <string>

using namespace tenfold;

using test::check_close;

namespace {
using S = shape<37, 129>; // not a multiple of any vector width or warp

template <class Op>
constexpr ops::test_spec grad_domain() {
  if constexpr (requires { Op::grad_test; }) return Op::grad_test;
  else return Op::test;
}
template <class Op>
double lo(int k) {
  constexpr ops::test_spec s = grad_domain<Op>();
  return (k == Op::arity - 1 && Op::arity > 1 && s.hi2 > s.lo2) ? s.lo2 : s.lo;
}
template <class Op>
double hi(int k) {
  constexpr ops::test_spec s = grad_domain<Op>();
  return (k == Op::arity - 1 && Op::arity > 1 && s.hi2 > s.lo2) ? s.hi2 : s.hi;
}

template <class Op, int K, class X, class Y, class G>
auto entry_vjp(const X& x, const Y& y, const G& g) {
  if constexpr (Op::arity == 1) return Op::vjp(x[0], y, g);
  else if constexpr (Op::arity == 2) return Op::template vjp<K>(x[0], x[1], y, g);
  else return Op::template vjp<K>(x[0], x[1], x[2], y, g);
}

template <class Op, int K>
void check_operand(const Tensor<float, S> (&x)[3], const Tensor<float, S>& y, const Tensor<float, S>& g) {
  const auto dev_x = std::array<cuda::Tensor<float, S>, 3>{cuda::to_device(x[0]), cuda::to_device(x[1]), cuda::to_device(x[2])};
  const auto dev_y = cuda::to_device(y);
  const auto dev_g = cuda::to_device(g);
  const std::array<decltype(dev_y.expr()), 3> dx = {dev_x[0].expr(), dev_x[1].expr(), dev_x[2].expr()};
  const auto expr = entry_vjp<Op, K>(dx, dev_y.expr(), dev_g.expr());
  if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(expr)>, ops::no_gradient>) {
    const Tensor<float, S> cpu = entry_vjp<Op, K>(x, y, g);
    cuda::Tensor<float, S> out;
    out = expr;
    // The device evaluates tanh, erf, exp... with its own libm (a few ulp from the CPU's), and formulas
    // such as 1 - tanh(x)^2 lose relative accuracy where they cancel: there the error is a few ulp of the
    // terms, |g| (1 + x^2) at most for the table's derivatives, not of the result.
    const Tensor<float, S> dev = cuda::to_host(out);
    double worst = 0;
    index_t at = 0;
    for (index_t i = 0; i < S::size; ++i) {
      const double a = cpu.data()[i], b = dev.data()[i];
      double terms = 1;
      for (int k = 0; k < Op::arity; ++k) terms = std::max(terms, 1 + double(x[k].data()[i]) * double(x[k].data()[i]));
      const double allowed = 1e-5 * std::max(std::fabs(a), 1e-3) + 8 * 0x1p-23 * std::fabs(double(g.data()[i])) * terms;
      const double err = (std::isnan(a) && std::isnan(b)) || a == b ? 0 : std::fabs(a - b) / allowed;
      if (!(err <= worst)) worst = err, at = i;
    }
    INFO(Op::name << " d/d(operand " << K << "): worst error " << worst << " of the allowed, at " << at << " (x "
                  << x[0].data()[at] << ", g " << g.data()[at] << ", CPU " << cpu.data()[at] << ", device "
                  << dev.data()[at] << ")");
    CHECK(worst <= 1);
  }
}

template <class Op>
void check_entry() {
  Tensor<float, S> x[3];
  for (int k = 0; k < Op::arity; ++k) x[k] = test::random_tensor<float, S>(lo<Op>(k), hi<Op>(k), 21 + unsigned(k));
  const Tensor<float, S> g = test::random_tensor<float, S>(-2, 2, 25);
  Tensor<float, S> y;
  if constexpr (Op::arity == 1) y = detail::make_map<Op>(x[0]);
  else if constexpr (Op::arity == 2) y = detail::make_map<Op>(x[0], x[1]);
  else y = detail::make_map<Op>(x[0], x[1], x[2]);
  check_operand<Op, 0>(x, y, g);
  if constexpr (Op::arity > 1) check_operand<Op, 1>(x, y, g);
  if constexpr (Op::arity > 2) check_operand<Op, 2>(x, y, g);
}

// (a functor, not a template lambda: nvcc warns, #445-D, that a lambda's conversion to a function
// pointer does not use the template parameter its call operator takes)
struct check_each {
  template <class Op>
  void operator()() const {
    if constexpr (ops::has_vjp<Op>) check_entry<Op>();
  }
};
template <class List>
void check_all() {
  List::for_each(check_each{});
}

template <class T, class Sh>
void check_grad(const Tensor<T, Sh>& cpu, const cuda::Tensor<T, Sh>& dev, const char* what) {
  check_close(cpu, cuda::to_host(dev), 1e-4, what, 1e-3);
}

// The MLP of the tests below (one closure type, so the training test reuses the gradient test's kernels).
constexpr index_t B = 16, I = 20, H = 33, C = 10;
constexpr auto mlp = [](const auto& x_, const auto& y_) {
  return [&x_, &y_](const auto& w1_, const auto& b1_, const auto& w2_, const auto& b2_) {
    return mse_loss(matmul(relu(matmul(x_, w1_) + b1_), w2_) + b2_, y_);
  };
};
} // namespace

TEST_CASE("every elementwise derivative of the table on the device matches the CPU", "[grad]") {
  TENFOLD_REQUIRE_DEVICE();
  check_all<ops::unary_ops>();
  check_all<ops::binary_ops>();
  check_all<ops::ternary_ops>();
}

// (A loss of mse rather than cross-entropy: cross-entropy's row kernels inside each of the MLP's five
// gradient expressions took nvcc 6 minutes of CPU; its own gradient is checked on logits just below.)
TEST_CASE("value_and_grad with device parameters: an MLP matches the CPU", "[grad]") {
  TENFOLD_REQUIRE_DEVICE();
  const auto x = test::random_tensor<float, shape<B, I>>(-1, 1, 31);
  const auto w1 = test::random_tensor<float, shape<I, H>>(-0.5, 0.5, 32);
  const auto b1 = test::random_tensor<float, shape<H>>(-0.1, 0.1, 33);
  const auto w2 = test::random_tensor<float, shape<H, C>>(-0.5, 0.5, 34);
  const auto b2 = test::random_tensor<float, shape<C>>(-0.1, 0.1, 35);
  const auto y = test::random_tensor<float, shape<B, C>>(-1, 1, 36);
  auto [l, g1, gb1, g2, gb2] = value_and_grad(mlp(x, y), w1, b1, w2, b2);
  const auto dx = cuda::to_device(x);
  const auto dy = cuda::to_device(y);
  const auto dw1 = cuda::to_device(w1);
  const auto db1 = cuda::to_device(b1);
  const auto dw2 = cuda::to_device(w2);
  const auto db2 = cuda::to_device(b2);
  const auto dxe = dx.expr();
  const auto dye = dy.expr();
  auto [dev_l, dev_g1, dev_gb1, dev_g2, dev_gb2] = value_and_grad(mlp(dxe, dye), dw1, db1, dw2, db2);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, shape<I, H>> o1;
  cuda::Tensor<float, shape<H>> ob1;
  cuda::Tensor<float, shape<H, C>> o2;
  cuda::Tensor<float, shape<C>> ob2;
  loss = dev_l, o1 = dev_g1, ob1 = dev_gb1, o2 = dev_g2, ob2 = dev_gb2;
  check_grad(Tensor<float>(l), loss, "loss");
  check_grad(Tensor<float, shape<I, H>>(g1), o1, "d w1");
  check_grad(Tensor<float, shape<H>>(gb1), ob1, "d b1");
  check_grad(Tensor<float, shape<H, C>>(g2), o2, "d w2");
  check_grad(Tensor<float, shape<C>>(gb2), ob2, "d b2");
}

TEST_CASE("value_and_grad with device parameters: cross-entropy's gradient on logits matches the CPU", "[grad]") {
  TENFOLD_REQUIRE_DEVICE();
  using Z = shape<16, 37>;
  const auto z = test::random_tensor<float, Z>(-3, 3, 37);
  Tensor<std::int64_t, shape<16>> labels;
  for (index_t i = 0; i < 16; ++i) labels(i) = (i * 7) % 37;
  auto [l, gz] = value_and_grad([&](const auto& z_) { return cross_entropy(z_, labels); }, z);
  const auto dz = cuda::to_device(z);
  const auto dl = cuda::to_device(labels);
  const auto dle = dl.expr();
  auto [dev_l, dev_gz] = value_and_grad([&](const auto& z_) { return cross_entropy(z_, dle); }, dz);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, Z> oz;
  loss = dev_l, oz = dev_gz;
  check_grad(Tensor<float>(l), loss, "loss");
  check_grad(Tensor<float, Z>(gz), oz, "d logits");
}

// An embedding table's gradient: take's adjoint, a scatter-add of g's rows into the rows the ids name
// (ids repeat, so rows accumulate; rows no id names get 0).
TEST_CASE("value_and_grad with device parameters: an embedding table's gradient (scatter-add) matches the CPU", "[grad]") {
  TENFOLD_REQUIRE_DEVICE();
  using E = shape<23, 40>;
  const auto table = test::random_tensor<float, E>(-1, 1, 41);
  const auto r = test::random_tensor<float, shape<6, 9, 40>>(-1, 1, 42);
  Tensor<std::int32_t, shape<6, 9>> ids;
  for (index_t i = 0; i < 54; ++i) ids.data()[i] = std::int32_t((i * i + 3 * i) % 23);
  auto [l, gt] = value_and_grad([&](const auto& t_) { return sum(embedding(t_, ids) * r); }, table);
  const auto dt = cuda::to_device(table);
  const auto dr = cuda::to_device(r);
  const auto di = cuda::to_device(ids);
  const auto dre = dr.expr();
  const auto die = di.expr();
  auto [dev_l, dev_gt] = value_and_grad([&](const auto& t_) { return sum(embedding(t_, die) * dre); }, dt);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, E> ot;
  loss = dev_l, ot = dev_gt;
  check_grad(Tensor<float>(l), loss, "loss");
  check_grad(Tensor<float, E>(gt), ot, "d table");
}

// (softmax's own gradient is left out: cross-entropy's above has its row structure, and in this loss it
// cost nvcc 21 s of CPU.)
TEST_CASE("value_and_grad with device parameters: row composites, reductions, scans and views match the CPU", "[grad]") {
  TENFOLD_REQUIRE_DEVICE();
  using P = shape<12, 40>;
  const auto p = test::random_tensor<float, P>(-2, 2, 41);
  const auto gamma = test::random_tensor<float, shape<40>>(0.5, 1.5, 42);
  const auto r = test::random_tensor<float, P>(-1, 1, 43);
  const auto q = test::random_tensor<float, shape<40, 12>>(-1, 1, 44);
  const auto f = [](const auto& r_, const auto& q_) {
    return [&r_, &q_](const auto& p_, const auto& gamma_) {
      return sum(layer_norm(p_, gamma_, gamma_ * 0.5f) * r_) + mean(max(p_, axis<0>)) +
             sum(cumsum(transpose(p_ * 0.25f), axis<1>) * q_) + sum(flip<1>(slice<range<1, 12, 2>, whole>(p_)) * 0.5f);
    };
  };
  auto [l, gp, gg] = value_and_grad(f(r, q), p, gamma);
  const auto dr = cuda::to_device(r);
  const auto dq = cuda::to_device(q);
  const auto dp = cuda::to_device(p);
  const auto dgamma = cuda::to_device(gamma);
  const auto dre = dr.expr();
  const auto dqe = dq.expr();
  auto [dev_l, dev_gp, dev_gg] = value_and_grad(f(dre, dqe), dp, dgamma);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, P> op;
  cuda::Tensor<float, shape<40>> og;
  loss = dev_l, op = dev_gp, og = dev_gg;
  check_grad(Tensor<float>(l), loss, "loss");
  check_grad(Tensor<float, P>(gp), op, "d p");
  check_grad(Tensor<float, shape<40>>(gg), og, "d gamma");
}

// Training where the parameters live: the optimizers' updates are assignments, so with cuda::Tensor
// parameters, moments and gradients every update is a device kernel. Eight steps of AdamW and of SGD with
// Nesterov momentum and clipping by global norm, on the device and on the CPU from the same start, end
// at the same parameters, and the loss falls. (eps 1e-4 for Adam: where a gradient component is rounding
// noise around zero, eps 1e-8 would turn its sign into a step of +-lr on either side.)
TEST_CASE("training on the device: AdamW and SGD steps match the CPU's, and the loss falls", "[grad][train]") {
  TENFOLD_REQUIRE_DEVICE();
  const auto x = test::random_tensor<float, shape<B, I>>(-1, 1, 51);
  const auto y = test::random_tensor<float, shape<B, C>>(-1, 1, 52);
  const auto dx = cuda::to_device(x);
  const auto dy = cuda::to_device(y);
  const auto dxe = dx.expr();
  const auto dye = dy.expr();
  for (const bool use_adam : {true, false}) {
    INFO((use_adam ? "AdamW" : "SGD, Nesterov, clipping"));
    Tensor<float, shape<I, H>> w1 = test::random_tensor<float, shape<I, H>>(-0.5, 0.5, 53);
    Tensor<float, shape<H>> b1 = test::random_tensor<float, shape<H>>(-0.1, 0.1, 54);
    Tensor<float, shape<H, C>> w2 = test::random_tensor<float, shape<H, C>>(-0.5, 0.5, 55);
    Tensor<float, shape<C>> b2 = test::random_tensor<float, shape<C>>(-0.1, 0.1, 56);
    auto dw1 = cuda::to_device(w1);
    auto db1 = cuda::to_device(b1);
    auto dw2 = cuda::to_device(w2);
    auto db2 = cuda::to_device(b2);
    optim::moments<float, shape<I, H>> s1;
    optim::moments<float, shape<H>> sb1;
    optim::moments<float, shape<H, C>> s2;
    optim::moments<float, shape<C>> sb2;
    optim::moments_of<cuda::Tensor<float, shape<I, H>>> ds1;
    optim::moments_of<cuda::Tensor<float, shape<H>>> dsb1;
    optim::moments_of<cuda::Tensor<float, shape<H, C>>> ds2;
    optim::moments_of<cuda::Tensor<float, shape<C>>> dsb2;
    optim::adam adam({.lr = 0.02f, .eps = 1e-4f, .weight_decay = 0.01f, .decoupled = true});
    optim::sgd sgd({.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f, .nesterov = true});
    const auto step = [&](auto& p1, auto& q1, auto& p2, auto& q2, auto& m1, auto& n1, auto& m2, auto& n2, auto& g1,
                          auto& h1, auto& g2, auto& h2) {
      if (use_adam) {
        adam.update(p1, m1, g1), adam.update(q1, n1, h1), adam.update(p2, m2, g2), adam.update(q2, n2, h2);
      } else {
        sgd.update(p1, m1, g1), sgd.update(q1, n1, h1), sgd.update(p2, m2, g2), sgd.update(q2, n2, h2);
      }
    };
    float first = 0, last = 0;
    for (int t = 0; t < 8; ++t) {
      auto [l, g1, gb1, g2, gb2] = value_and_grad(mlp(x, y), w1, b1, w2, b2);
      Tensor<float> loss = l;
      Tensor<float, shape<I, H>> G1 = g1;
      Tensor<float, shape<H>> Gb1 = gb1;
      Tensor<float, shape<H, C>> G2 = g2;
      Tensor<float, shape<C>> Gb2 = gb2;
      auto [dev_l, dev_g1, dev_gb1, dev_g2, dev_gb2] = value_and_grad(mlp(dxe, dye), dw1, db1, dw2, db2);
      cuda::Tensor<float> dloss;
      cuda::Tensor<float, shape<I, H>> D1;
      cuda::Tensor<float, shape<H>> Db1;
      cuda::Tensor<float, shape<H, C>> D2;
      cuda::Tensor<float, shape<C>> Db2;
      dloss = dev_l, D1 = dev_g1, Db1 = dev_gb1, D2 = dev_g2, Db2 = dev_gb2;
      check_grad(loss, dloss, "loss");
      (t == 0 ? first : last) = loss();
      adam.begin_step();
      sgd.begin_step();
      if (!use_adam) {
        const double norm = optim::clip_grad_norm(0.5, G1, Gb1, G2, Gb2);
        const double dnorm = optim::clip_grad_norm(0.5, D1, Db1, D2, Db2);
        CHECK(std::fabs(norm - dnorm) <= 1e-5 * norm);
        CHECK(norm > 0.5); // the clipping acts
      }
      step(w1, b1, w2, b2, s1, sb1, s2, sb2, G1, Gb1, G2, Gb2);
      step(dw1, db1, dw2, db2, ds1, dsb1, ds2, dsb2, D1, Db1, D2, Db2);
    }
    check_grad(w1, dw1, "w1 after 8 steps");
    check_grad(b1, db1, "b1 after 8 steps");
    check_grad(w2, dw2, "w2 after 8 steps");
    check_grad(b2, db2, "b2 after 8 steps");
    check_grad(s1.m, ds1.m, "w1's first moment");
    if (use_adam) check_grad(s1.v, ds1.v, "w1's second moment");
    INFO("loss " << first << " -> " << last);
    CHECK(last < 0.8f * first);
  }
}
