// A whole CNN's parameter gradients — conv -> batch norm (batch statistics) -> relu -> max pool ->
// linear -> relu -> dropout mask -> linear -> cross-entropy, the form of examples/fashion_mnist — taken
// stage by stage with vjp (as the example trains), against central
// differences of a long-double forward pass written here from the definitions. Then the optimizers
// against their update rules written out in long double. (The whole network in one value_and_grad
// gives the same gradients, but its expression took GCC 12 over 20 GB of memory to compile with the
// sanitizers at -Og: each gradient repeats the forward tree it reads. Stages keep it at 3.5 GB.)
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>
#include <tenfold/tenfold.hpp>

#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

using namespace tenfold;
using ld = long double;

namespace {
constexpr index_t N = 3, H = 6, W = 6, C = 2, K = 3, P = 3, F = P * P * C, D = 4, Q = 3; // P: pooled extent

template <class T, class S>
void fill(Tensor<T, S>& t, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (auto& v : t) v = T(u(g));
}

struct net {
  Tensor<double, shape<N, H, W, 1>> x;
  Tensor<std::int64_t, shape<N>> labels{2, 0, 1};
  Tensor<double, shape<N, D>> mask; // dropout: 0 or 1 / keep
  Tensor<double, shape<K, K, 1, C>> w1;
  Tensor<double, shape<C>> gamma, beta;
  Tensor<double, shape<F, D>> w3;
  Tensor<double, shape<D>> b3;
  Tensor<double, shape<D, Q>> w4;
  Tensor<double, shape<Q>> b4;
  net() {
    fill(x, 1), fill(w1, 2), fill(gamma, 3, 0.5, 1.5), fill(beta, 4), fill(w3, 5), fill(b3, 6), fill(w4, 7), fill(b4, 8);
    Tensor<double, shape<N, D>> u;
    fill(u, 9, 0, 1);
    for (index_t i = 0; i < N * D; ++i) mask.data()[i] = u.data()[i] < 0.75 ? 1 / 0.75 : 0.0;
  }
  // every parameter's elements, in one list (for the finite differences)
  std::vector<double*> all() {
    std::vector<double*> p;
    auto add = [&](auto& t) {
      for (auto& v : t) p.push_back(&v);
    };
    add(w1), add(gamma), add(beta), add(w3), add(b3), add(w4), add(b4);
    return p;
  }
};

// The forward pass in long double, from the definitions.
ld reference_loss(const net& m) {
  std::vector<ld> a(N * H * W * C, 0);
  for (index_t n = 0; n < N; ++n)
    for (index_t i = 0; i < H; ++i)
      for (index_t j = 0; j < W; ++j)
        for (index_t c = 0; c < C; ++c) {
          ld s = 0;
          for (index_t u = 0; u < K; ++u)
            for (index_t v = 0; v < K; ++v) {
              const index_t y = i + u - 1, z = j + v - 1;
              if (y >= 0 && y < H && z >= 0 && z < W) s += ld(m.x(n, y, z, 0)) * ld(m.w1(u, v, 0, c));
            }
          a[((n * H + i) * W + j) * C + c] = s;
        }
  for (index_t c = 0; c < C; ++c) { // batch norm with the batch's mean and biased variance, then relu
    ld mean = 0, var = 0;
    const ld count = ld(N * H * W);
    for (index_t e = 0; e < N * H * W; ++e) mean += a[e * C + c] / count;
    for (index_t e = 0; e < N * H * W; ++e) var += (a[e * C + c] - mean) * (a[e * C + c] - mean) / count;
    for (index_t e = 0; e < N * H * W; ++e) {
      const ld y = (a[e * C + c] - mean) / std::sqrt(var + 1e-5L) * ld(m.gamma(c)) + ld(m.beta(c));
      a[e * C + c] = y > 0 ? y : 0;
    }
  }
  ld loss = 0;
  for (index_t n = 0; n < N; ++n) {
    std::array<ld, F> f{}; // 2x2 max pool, flattened (i, j, c)
    for (index_t i = 0; i < P; ++i)
      for (index_t j = 0; j < P; ++j)
        for (index_t c = 0; c < C; ++c) {
          ld best = -1e300L;
          for (index_t u = 0; u < 2; ++u)
            for (index_t v = 0; v < 2; ++v) best = std::max(best, a[((n * H + 2 * i + u) * W + 2 * j + v) * C + c]);
          f[std::size_t((i * P + j) * C + c)] = best;
        }
    std::array<ld, D> h{};
    for (index_t d = 0; d < D; ++d) {
      ld s = m.b3(d);
      for (index_t k = 0; k < F; ++k) s += f[std::size_t(k)] * ld(m.w3(k, d));
      h[std::size_t(d)] = (s > 0 ? s : 0) * ld(m.mask(n, d));
    }
    std::array<ld, Q> z{};
    ld top = -1e300L, sum = 0;
    for (index_t q = 0; q < Q; ++q) {
      ld s = m.b4(q);
      for (index_t d = 0; d < D; ++d) s += h[std::size_t(d)] * ld(m.w4(d, q));
      z[std::size_t(q)] = s, top = std::max(top, s);
    }
    for (index_t q = 0; q < Q; ++q) sum += std::exp(z[std::size_t(q)] - top);
    loss += (top + std::log(sum) - z[std::size_t(m.labels(n))]) / ld(N);
  }
  return loss;
}

// The same network as tenfold stages (the functions the example trains with).
constexpr auto conv = [](const auto& x, const auto& w) { return conv2d(x, w, padding<1>, nhwc); };
constexpr auto bn_relu = [](const auto& a, const auto& g, const auto& b) { return relu(batch_norm_train<-1>(a, g, b)); };
constexpr auto pool = [](const auto& r) { return max_pool2d<2>(r, nhwc); };
constexpr auto dense = [](const auto& p, const auto& w, const auto& b) { return relu(matmul(reshape<N, F>(p), w) + b); };
} // namespace

TEST_CASE("a CNN's gradients, stage by stage, against long-double central differences", "[autodiff][cnn]") {
  net m;
  // Central differences of the long-double forward pass, parameter element by element.
  std::vector<ld> want;
  for (double* p : m.all()) {
    const double keep = *p, h = 1e-5;
    *p = keep + h;
    const ld up = reference_loss(m);
    *p = keep - h;
    const ld down = reference_loss(m);
    *p = keep;
    want.push_back((up - down) / (2 * ld(h)));
  }
  auto check = [&](const std::vector<const double*>& got, const char* how) {
    INFO(how);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, double(std::fabs(ld(*got[i]) - want[i]) / std::max(std::fabs(want[i]), 1e-2L)));
    CHECK(worst < 1e-6);
  };

  // Stage by stage, as examples/fashion_mnist/cnn.hpp trains: the forward values saved, each stage's
  // gradients from vjp of its own function.
  Tensor<double, shape<N, H, W, C>> a = conv(m.x, m.w1), r = bn_relu(a, m.gamma, m.beta), ga, gr;
  Tensor<double, shape<N, P, P, C>> p = pool(r), gp;
  Tensor<double, shape<N, D>> h = dense(p, m.w3, m.b3), gh;
  auto [loss, dh, dw4, db4] = value_and_grad(
      [&](const auto& h_, const auto& w_, const auto& b_) { return cross_entropy(matmul(h_ * m.mask, w_) + b_, m.labels); }, h, m.w4, m.b4);
  const Tensor<double> l = loss;
  CHECK(double(l()) == Approx(double(reference_loss(m))).epsilon(1e-12));
  gh = dh;
  const Tensor<double, shape<D, Q>> gw4 = dw4;
  const Tensor<double, shape<Q>> gb4 = db4;
  auto [dp, dw3, db3] = vjp(dense, gh, p, m.w3, m.b3);
  gp = dp;
  const Tensor<double, shape<F, D>> gw3 = dw3;
  const Tensor<double, shape<D>> gb3 = db3;
  auto [dr] = vjp(pool, gp, r);
  gr = dr;
  auto [da, dg, db] = vjp(bn_relu, gr, a, m.gamma, m.beta);
  ga = da;
  const Tensor<double, shape<C>> gg = dg, gb = db;
  auto [dw1] = vjp([&](const auto& w_) { return conv(m.x, w_); }, ga, m.w1);
  const Tensor<double, shape<K, K, 1, C>> gw1 = dw1;
  std::vector<const double*> staged;
  auto add = [&](const auto& t) {
    for (const auto& v : t) staged.push_back(&v);
  };
  add(gw1), add(gg), add(gb), add(gw3), add(gb3), add(gw4), add(gb4);
  check(staged, "stage by stage");

}

TEST_CASE("Adam, AdamW and SGD follow their update rules", "[optim]") {
  Tensor<double, shape<5>> p{0.5, -1.0, 2.0, 0.0, -0.25}, g;
  const Tensor<double, shape<5>> start = p;
  for (bool decoupled : {false, true}) {
    p = start;
    optim::moments<double, shape<5>> s;
    optim::adam opt({.lr = 0.1f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.05f, .decoupled = decoupled});
    std::array<ld, 5> q{}, m{}, v{};
    for (int i = 0; i < 5; ++i) q[std::size_t(i)] = start.data()[i];
    for (int t = 1; t <= 4; ++t) {
      for (int i = 0; i < 5; ++i) g.data()[i] = std::sin(3.0 * i + t); // any gradient sequence
      opt.begin_step(0.1f * float(t));                                  // a schedule: the rate changes per step
      opt.update(p, s, g);
      const ld lr = ld(0.1f * float(t)), b1 = ld(0.8f), b2 = ld(0.95f), wd = ld(0.05f), eps = ld(1e-8f);
      for (std::size_t i = 0; i < 5; ++i) {
        ld gi = g.data()[i];
        if (decoupled) q[i] *= 1 - lr * wd;
        else gi += wd * q[i];
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        q[i] -= lr / (1 - std::pow(b1, ld(t))) * m[i] / (std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, ld(t))) + eps);
      }
    }
    for (std::size_t i = 0; i < 5; ++i) CHECK(p.data()[i] == Approx(double(q[i])).epsilon(1e-6));
  }
  for (bool nesterov : {false, true}) {
    p = start;
    optim::moments<double, shape<5>> s;
    optim::sgd opt({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = nesterov});
    std::array<ld, 5> q{}, buf{};
    for (int i = 0; i < 5; ++i) q[std::size_t(i)] = start.data()[i];
    for (int t = 1; t <= 4; ++t) {
      for (int i = 0; i < 5; ++i) g.data()[i] = std::cos(2.0 * i - t);
      opt.begin_step();
      opt.update(p, s, g);
      const ld lr = ld(0.1f), mu = ld(0.9f), wd = ld(0.01f);
      for (std::size_t i = 0; i < 5; ++i) {
        const ld gi = g.data()[i] + wd * q[i];
        buf[i] = t == 1 ? gi : mu * buf[i] + gi;
        q[i] -= lr * (nesterov ? gi + mu * buf[i] : buf[i]);
      }
    }
    for (std::size_t i = 0; i < 5; ++i) CHECK(p.data()[i] == Approx(double(q[i])).epsilon(1e-6));
  }
  // The cosine schedule: warm-up to the base rate, then down to the floor at the end.
  CHECK(optim::cosine_lr(0, 100, 1.0f, 10) == Approx(0.1));
  CHECK(optim::cosine_lr(9, 100, 1.0f, 10) == Approx(1.0));
  CHECK(optim::cosine_lr(55, 100, 1.0f, 10) == Approx(0.5));
  CHECK(optim::cosine_lr(100, 100, 1.0f, 10, 0.01f) == Approx(0.01));
}

TEST_CASE("losses: label smoothing and binary cross-entropy with logits, values and gradients", "[autodiff][losses]") {
  Tensor<double, shape<3, 4>> z;
  fill(z, 21, -3, 3);
  const Tensor<std::int64_t, shape<3>> labels{3, 0, 2};
  const double eps = 0.1;
  // closed forms: smoothed CE = mean_n [ -(1-eps) lp[label] - eps/C sum_c lp ]; d/dz = softmax - target
  auto [l, dz] = value_and_grad([&](const auto& z_) { return cross_entropy(z_, labels, float(eps)); }, z);
  const Tensor<double> lv = l;
  const Tensor<double, shape<3, 4>> gz = dz;
  ld want = 0;
  for (index_t n = 0; n < 3; ++n) {
    ld top = -1e300L, se = 0;
    for (index_t c = 0; c < 4; ++c) top = std::max<ld>(top, z(n, c));
    for (index_t c = 0; c < 4; ++c) se += std::exp(ld(z(n, c)) - top);
    for (index_t c = 0; c < 4; ++c) {
      const ld lp = ld(z(n, c)) - top - std::log(se);
      const ld target = (c == labels(n) ? 1 - ld(float(eps)) : 0) + ld(float(eps)) / 4;
      want -= target * lp / 3;
      CHECK(gz(n, c) == Approx(double((std::exp(lp) - target) / 3)).epsilon(1e-6));
    }
  }
  CHECK(lv() == Approx(double(want)).epsilon(1e-6));

  Tensor<double, shape<2, 5>> x, y;
  fill(x, 22, -30, 30); // large logits: the stable form must not overflow
  fill(y, 23, 0, 1);
  auto [b, dx] = value_and_grad([&](const auto& x_) { return binary_cross_entropy_with_logits(x_, y); }, x);
  const Tensor<double> bv = b;
  const Tensor<double, shape<2, 5>> gx = dx;
  ld bw = 0;
  for (index_t i = 0; i < 10; ++i) {
    const ld xi = x.data()[i], yi = y.data()[i], sig = 1 / (1 + std::exp(-xi));
    bw += -(yi * std::log(sig) + (1 - yi) * std::log1p(-sig)) / 10;
    CHECK(gx.data()[i] == Approx(double((sig - yi) / 10)).epsilon(1e-9).margin(1e-15));
  }
  CHECK(bv() == Approx(double(bw)).epsilon(1e-9));
}

TEST_CASE("clipping by global norm", "[optim]") {
  Tensor<double, shape<2>> a{3, 0};
  Tensor<double, shape<1, 1>> b{4};
  CHECK(optim::clip_grad_norm(10.0, a, b) == Approx(5.0)); // under the limit: unchanged
  CHECK(a(0) == 3.0);
  CHECK(optim::clip_grad_norm(1.0, a, b) == Approx(5.0));
  CHECK(a(0) == Approx(0.6 * 5 / (5 + 1e-6)));
  CHECK(b(0, 0) == Approx(0.8 * 5 / (5 + 1e-6)));
}
