// value_and_grad (autodiff/backward.hpp): gradients of small models against references computed here
// in long double, independently of tenfold — closed forms where there is one, central differences of a
// plain-loop forward pass otherwise — and a tiny model that trains with them.
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

using namespace tenfold;

namespace {
template <class T, class S>
Tensor<T, S> random_tensor(unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor<T, S> t;
  for (index_t i = 0; i < S::size; ++i) t.data()[i] = T(u(g));
  return t;
}

template <class T, class S>
std::vector<long double> as_ld(const Tensor<T, S>& t) {
  return std::vector<long double>(t.data(), t.data() + S::size);
}

// Largest |got - want| / max(|want|, floor) over the elements.
template <class T, class S>
double worst_error(const Tensor<T, S>& got, const std::vector<long double>& want, long double floor = 1e-3L) {
  REQUIRE(want.size() == std::size_t(S::size));
  long double worst = 0;
  for (index_t i = 0; i < S::size; ++i)
    worst = std::max(worst, std::fabs((long double)got.data()[i] - want[std::size_t(i)]) / std::max(std::fabs(want[std::size_t(i)]), floor));
  return double(worst);
}

// Central differences of f (long double) with respect to every element of p (in place, restored).
std::vector<long double> numeric_gradient(std::vector<long double>& p, const std::function<long double()>& f) {
  std::vector<long double> g(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const long double keep = p[i], h = 1e-6L * std::max(1.0L, std::fabs(keep));
    p[i] = keep + h;
    const long double up = f();
    p[i] = keep - h;
    const long double down = f();
    p[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}
} // namespace

TEST_CASE("linear regression: mean squared error, closed-form gradients", "[autodiff]") {
  constexpr index_t n = 9, d = 5, k = 3;
  const auto x = random_tensor<double, shape<n, d>>(1);
  const auto y = random_tensor<double, shape<n, k>>(2);
  const auto w = random_tensor<double, shape<d, k>>(3);
  const auto b = random_tensor<double, shape<k>>(4);
  auto [loss, dw, db] = value_and_grad([&](const auto& w_, const auto& b_) { return mse_loss(matmul(x, w_) + b_, y); }, w, b);
  const Tensor<double> l = loss;
  const Tensor<double, shape<d, k>> gw = dw;
  const Tensor<double, shape<k>> gb = db;

  // r = xw + b - y; L = mean(r^2); dL/dw = 2/(nk) x^T r; dL/db = 2/(nk) sum over rows of r.
  std::vector<long double> r(n * k), want_w(d * k, 0), want_b(k, 0);
  long double want_l = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < k; ++j) {
      long double s = b(j);
      for (index_t q = 0; q < d; ++q) s += (long double)x(i, q) * w(q, j);
      r[i * k + j] = s - y(i, j);
      want_l += r[i * k + j] * r[i * k + j] / (n * k);
    }
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < k; ++j) {
      for (index_t q = 0; q < d; ++q) want_w[q * k + j] += 2.0L / (n * k) * x(i, q) * r[i * k + j];
      want_b[j] += 2.0L / (n * k) * r[i * k + j];
    }
  CHECK(std::fabs(l() - want_l) <= 1e-14 * want_l);
  CHECK(worst_error(gw, want_w) <= 1e-13);
  CHECK(worst_error(gb, want_b) <= 1e-13);
}

TEST_CASE("a parameter read transposed and broadcast", "[autodiff]") {
  // y = x w^T + c (c a scalar parameter broadcast over everything); L = sum(y^2) / 2.
  constexpr index_t n = 6, d = 4, k = 5;
  const auto x = random_tensor<double, shape<n, d>>(5);
  const auto w = random_tensor<double, shape<k, d>>(6);
  const auto c = random_tensor<double, shape<1>>(7);
  auto [loss, dw, dc] = value_and_grad([&](const auto& w_, const auto& c_) { return sum(square(matmul(x, transpose(w_)) + c_)) * 0.5; }, w, c);
  const Tensor<double, shape<k, d>> gw = dw;
  const Tensor<double, shape<1>> gc = dc;
  std::vector<long double> want_w(k * d, 0), want_c(1, 0);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < k; ++j) {
      long double yij = c(0);
      for (index_t q = 0; q < d; ++q) yij += (long double)x(i, q) * w(j, q);
      for (index_t q = 0; q < d; ++q) want_w[j * d + q] += yij * x(i, q);
      want_c[0] += yij;
    }
  CHECK(worst_error(gw, want_w) <= 1e-13);
  CHECK(worst_error(gc, want_c) <= 1e-13);
  (void)loss;
}

namespace {
// A two-layer perceptron with cross-entropy, in long double with plain loops: the reference.
template <index_t B, index_t D, index_t H, index_t C>
struct reference_mlp {
  std::vector<long double> x, w1, b1, w2, b2;
  std::vector<std::int64_t> labels;
  long double loss() const {
    long double total = 0;
    for (index_t i = 0; i < B; ++i) {
      long double h[H], z[C];
      for (index_t j = 0; j < H; ++j) {
        long double s = b1[j];
        for (index_t q = 0; q < D; ++q) s += x[i * D + q] * w1[q * H + j];
        h[j] = s > 0 ? s : 0;
      }
      long double m = -INFINITY;
      for (index_t c = 0; c < C; ++c) {
        long double s = b2[c];
        for (index_t j = 0; j < H; ++j) s += h[j] * w2[j * C + c];
        z[c] = s;
        m = std::max(m, s);
      }
      long double e = 0;
      for (index_t c = 0; c < C; ++c) e += std::exp(z[c] - m);
      total += m + std::log(e) - z[labels[std::size_t(i)]];
    }
    return total / B;
  }
};
} // namespace

TEST_CASE("a two-layer perceptron with cross-entropy, against central differences", "[autodiff]") {
  constexpr index_t B = 6, D = 5, H = 7, C = 4;
  const auto x = random_tensor<float, shape<B, D>>(11);
  const auto w1 = random_tensor<float, shape<D, H>>(12);
  const auto b1 = random_tensor<float, shape<H>>(13, -0.1, 0.1);
  const auto w2 = random_tensor<float, shape<H, C>>(14);
  const auto b2 = random_tensor<float, shape<C>>(15, -0.1, 0.1);
  Tensor<std::int64_t, shape<B>> labels;
  for (index_t i = 0; i < B; ++i) labels(i) = (i * 3 + 1) % C;

  const auto model = [&](const auto& w1_, const auto& b1_, const auto& w2_, const auto& b2_) {
    return cross_entropy(matmul(relu(matmul(x, w1_) + b1_), w2_) + b2_, labels);
  };
  auto [loss, g1, gb1, g2, gb2] = value_and_grad(model, w1, b1, w2, b2);
  const Tensor<float> l = loss;
  const Tensor<float, shape<D, H>> dw1 = g1;
  const Tensor<float, shape<H>> db1 = gb1;
  const Tensor<float, shape<H, C>> dw2 = g2;
  const Tensor<float, shape<C>> db2 = gb2;

  reference_mlp<B, D, H, C> ref{as_ld(x), as_ld(w1), as_ld(b1), as_ld(w2), as_ld(b2), {}};
  ref.labels.assign(labels.data(), labels.data() + B);
  const auto f = [&] { return ref.loss(); };
  CHECK(std::fabs(l() - ref.loss()) <= 1e-6 * std::fabs(ref.loss()));
  // float gradients against long-double differences: a few float roundings of terms of size ~1.
  CHECK(worst_error(dw1, numeric_gradient(ref.w1, f), 1e-2L) <= 1e-4);
  CHECK(worst_error(db1, numeric_gradient(ref.b1, f), 1e-2L) <= 1e-4);
  CHECK(worst_error(dw2, numeric_gradient(ref.w2, f), 1e-2L) <= 1e-4);
  CHECK(worst_error(db2, numeric_gradient(ref.b2, f), 1e-2L) <= 1e-4);
}

TEST_CASE("gradients through layer_norm, softmax and logsumexp", "[autodiff]") {
  constexpr index_t n = 5, d = 8;
  const auto x = random_tensor<double, shape<n, d>>(21, -2, 2);
  const auto g = random_tensor<double, shape<d>>(22, 0.5, 1.5);
  const auto w = random_tensor<double, shape<d, d>>(23);
  const auto t = random_tensor<double, shape<n, d>>(24);
  const Tensor<double, shape<d>> beta; // zeros: not a parameter
  // L = mean(softmax(layer_norm(x w) * g) * t) + mean(logsumexp(x w, axis 1))
  auto [loss, dw, dg] = value_and_grad(
      [&](const auto& w_, const auto& g_) {
        auto z = matmul(x, w_);
        return mean(softmax(layer_norm(z, g_, beta)) * t) + mean(logsumexp(matmul(x, w_), axis<1>));
      },
      w, g);
  const Tensor<double, shape<d, d>> gw = dw;
  const Tensor<double, shape<d>> gg = dg;

  std::vector<long double> W = as_ld(w), G = as_ld(g);
  const auto f = [&] {
    long double total = 0;
    for (index_t i = 0; i < n; ++i) {
      long double z[d], m = 0, v = 0;
      for (index_t j = 0; j < d; ++j) {
        z[j] = 0;
        for (index_t q = 0; q < d; ++q) z[j] += (long double)x(i, q) * W[q * d + j];
        m += z[j] / d;
      }
      long double lse_m = -INFINITY, lse = 0;
      for (index_t j = 0; j < d; ++j) lse_m = std::max(lse_m, z[j]);
      for (index_t j = 0; j < d; ++j) lse += std::exp(z[j] - lse_m);
      total += (lse_m + std::log(lse)) / n;
      for (index_t j = 0; j < d; ++j) v += (z[j] - m) * (z[j] - m) / d;
      long double a[d], mx = -INFINITY, s = 0;
      for (index_t j = 0; j < d; ++j) {
        a[j] = (z[j] - m) / std::sqrt(v + 1e-5L) * G[j];
        mx = std::max(mx, a[j]);
      }
      for (index_t j = 0; j < d; ++j) s += std::exp(a[j] - mx);
      for (index_t j = 0; j < d; ++j) total += std::exp(a[j] - mx) / s * t(i, j) / (n * d);
    }
    return total;
  };
  CHECK(worst_error(gw, numeric_gradient(W, f), 1e-6L) <= 1e-7);
  CHECK(worst_error(gg, numeric_gradient(G, f), 1e-6L) <= 1e-7);
}

TEST_CASE("a tiny classifier trains with plain gradient descent", "[autodiff]") {
  // Two Gaussian blobs per class, 4 classes in 2-D: a two-layer perceptron reaches 100% training
  // accuracy; the loss must fall from log(4) to below 0.1.
  constexpr index_t B = 64, D = 2, H = 16, C = 4;
  Tensor<float, shape<B, D>> x;
  Tensor<std::int64_t, shape<B>> labels;
  std::mt19937_64 rng(31);
  std::normal_distribution<float> noise(0.0f, 0.15f);
  for (index_t i = 0; i < B; ++i) {
    const index_t c = i % C;
    labels(i) = c;
    x(i, 0) = (c % 2 ? 1.0f : -1.0f) + noise(rng);
    x(i, 1) = (c / 2 ? 1.0f : -1.0f) + noise(rng);
  }
  auto w1 = random_tensor<float, shape<D, H>>(32);
  Tensor<float, shape<H>> b1;
  auto w2 = random_tensor<float, shape<H, C>>(33, -0.3, 0.3);
  Tensor<float, shape<C>> b2;
  const auto model = [&](const auto& w1_, const auto& b1_, const auto& w2_, const auto& b2_) {
    return cross_entropy(matmul(relu(matmul(x, w1_) + b1_), w2_) + b2_, labels);
  };
  auto [loss, g1, gb1, g2, gb2] = value_and_grad(model, w1, b1, w2, b2);
  const float lr = 0.5f;
  Tensor<float> first = loss, last;
  for (int step = 0; step < 300; ++step) {
    // Gradients first (they read the parameters), then the updates.
    const Tensor<float, shape<D, H>> d1 = g1;
    const Tensor<float, shape<H>> e1 = gb1;
    const Tensor<float, shape<H, C>> d2 = g2;
    const Tensor<float, shape<C>> e2 = gb2;
    w1 = w1 - lr * d1;
    b1 = b1 - lr * e1;
    w2 = w2 - lr * d2;
    b2 = b2 - lr * e2;
  }
  last = loss;
  INFO("loss " << first() << " -> " << last());
  CHECK(first() > 1.2f);
  CHECK(last() < 0.1f);
  const Tensor<std::int64_t, shape<B>> predicted = argmax(matmul(relu(matmul(x, w1) + b1), w2) + b2, axis<1>);
  index_t right = 0;
  for (index_t i = 0; i < B; ++i) right += predicted(i) == labels(i);
  CHECK(right == B);
}

TEST_CASE("gradients through var, std (with their corrections) and norm", "[autodiff]") {
  constexpr index_t n = 4, d = 7;
  const auto x = random_tensor<double, shape<n, d>>(41, -2, 2);
  const auto w = random_tensor<double, shape<d, d>>(42);
  // L = mean(var(z, axis 1)) + mean(std(z, axis 1), correction 0) + norm(w) / 10, z = x w
  auto [loss, dw] = value_and_grad(
      [&](const auto& w_) {
        return mean(var(matmul(x, w_), axis<1>)) + mean(tenfold::std(matmul(x, w_), axis<1>, correction<0>)) + norm(w_) * 0.1;
      },
      w);
  const Tensor<double, shape<d, d>> gw = dw;
  std::vector<long double> W = as_ld(w);
  const auto f = [&] {
    long double total = 0, sq = 0;
    for (long double v : W) sq += v * v;
    for (index_t i = 0; i < n; ++i) {
      long double z[d], m = 0, ss = 0;
      for (index_t j = 0; j < d; ++j) {
        z[j] = 0;
        for (index_t q = 0; q < d; ++q) z[j] += (long double)x(i, q) * W[q * d + j];
        m += z[j] / d;
      }
      for (index_t j = 0; j < d; ++j) ss += (z[j] - m) * (z[j] - m);
      total += ss / (d - 1) / n + std::sqrt(ss / d) / n;
    }
    return total + std::sqrt(sq) * 0.1L;
  };
  CHECK(std::fabs(Tensor<double>(loss)() - f()) <= 1e-12 * std::fabs(f()));
  CHECK(worst_error(gw, numeric_gradient(W, f), 1e-6L) <= 1e-7);
}

// prod's derivative, y / x_i, cannot divide where an element is zero: rows with no zero, one zero and two
// zeros (where a zero's derivative is the product of the others and everything else is 0), over the last
// axis, the first axis and all axes, in float and double, against the product of the other elements
// computed here in long double (no division).
template <class T>
void prod_gradient_case() {
  constexpr index_t n = 4, d = 6;
  auto x = random_tensor<T, shape<n, d>>(51, 0.5, 1.5);
  for (index_t j = 0; j < d; ++j) x(0, j) *= (j % 2 ? T(-1) : T(1)); // signs
  x(1, 2) = 0;                                                    // one zero
  x(2, 1) = 0, x(2, 4) = 0;                                       // two zeros
  const auto c = random_tensor<T, shape<n>>(52, 0.5, 2);
  const auto r = random_tensor<T, shape<d>>(53, 0.5, 2);
  // L = sum(prod(x, axis 1) * c) + sum(prod(x, axis 0) * r) + prod(x[3]) (the last row has no zero)
  auto [loss, dx] = value_and_grad(
      [&](const auto& x_) {
        return sum(prod(x_, axis<1>) * c) + sum(prod(x_, axis<0>) * r) + prod(slice<range<3, 4>>(x_));
      },
      x);
  const Tensor<T, shape<n, d>> got = dx;
  std::vector<long double> want(std::size_t(n * d));
  long double value = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < d; ++j) {
      long double row_others = 1, col_others = 1;
      for (index_t k = 0; k < d; ++k)
        if (k != j) row_others *= (long double)x(i, k);
      for (index_t k = 0; k < n; ++k)
        if (k != i) col_others *= (long double)x(k, j);
      want[std::size_t(i * d + j)] = c(i) * row_others + r(j) * col_others + (i == 3 ? row_others : 0);
    }
  for (index_t i = 0; i < n; ++i) {
    long double p = 1;
    for (index_t j = 0; j < d; ++j) p *= (long double)x(i, j);
    value += c(i) * p + (i == 3 ? p : 0);
  }
  for (index_t j = 0; j < d; ++j) {
    long double p = 1;
    for (index_t i = 0; i < n; ++i) p *= (long double)x(i, j);
    value += r(j) * p;
  }
  const double eps = std::numeric_limits<T>::epsilon();
  CHECK(std::fabs((long double)Tensor<T>(loss)() - value) <= 16 * eps * std::fabs(value));
  CHECK(worst_error(got, want, 1e-3L) <= 16 * eps);
  // where the zeros make a derivative exactly 0, it is exactly 0 (not a tiny or NaN quotient)
  for (index_t i = 0; i < n * d; ++i)
    if (want[std::size_t(i)] == 0) CHECK(got.data()[i] == 0);
}

TEST_CASE("prod's gradient with no zero, one zero and two zeros in a row", "[autodiff]") {
  prod_gradient_case<float>();
  prod_gradient_case<double>();
}

// The scans: L = sum(cumprod(x, axis 1) * w) + sum(cumprod(x, axis 0) * u) + sum(cumsum(x, axis 0) * v).
// d/dx_ij sums, over the positions j' >= j of the scan, the weight times the product of the others up to
// j' (cumprod) or the weight alone (cumsum): computed here in long double from that definition, with rows
// and columns holding no zero, one (first, middle, last) and two.
template <class T>
void scan_gradient_case() {
  constexpr index_t n = 5, d = 7;
  auto x = random_tensor<T, shape<n, d>>(61, 0.5, 1.5);
  for (index_t j = 0; j < d; ++j) x(0, j) *= (j % 2 ? T(-1) : T(1)); // signs
  x(1, 2) = 0;                                                    // one zero in the middle
  x(2, 1) = 0, x(2, 4) = 0;                                       // two zeros
  x(3, 0) = 0;                                                    // first
  x(4, 6) = 0;                                                    // last
  const auto w = random_tensor<T, shape<n, d>>(62, 0.5, 2);
  const auto u = random_tensor<T, shape<n, d>>(63, 0.5, 2);
  const auto v = random_tensor<T, shape<n, d>>(64, -1, 1);
  auto [loss, dx] = value_and_grad(
      [&](const auto& x_) {
        return sum(cumprod(x_, axis<1>) * w) + sum(cumprod(x_, axis<0>) * u) + sum(cumsum(x_, axis<0>) * v);
      },
      x);
  const Tensor<T, shape<n, d>> got = dx;
  std::vector<long double> want(std::size_t(n * d));
  long double value = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < d; ++j) {
      long double dw = 0, du = 0, dv = 0, py = 1, px = 1, sy = 0;
      for (index_t k = 0; k <= j; ++k) py *= (long double)x(i, k);
      for (index_t k = 0; k <= i; ++k) px *= (long double)x(k, j), sy += (long double)x(k, j);
      value += w(i, j) * py + u(i, j) * px + v(i, j) * sy;
      for (index_t e = j; e < d; ++e) { // position e of row i's scan
        long double p = 1;
        for (index_t k = 0; k <= e; ++k)
          if (k != j) p *= (long double)x(i, k);
        dw += w(i, e) * p;
      }
      for (index_t e = i; e < n; ++e) { // position e of column j's scan
        long double p = 1;
        for (index_t k = 0; k <= e; ++k)
          if (k != i) p *= (long double)x(k, j);
        du += u(e, j) * p;
        dv += v(e, j);
      }
      want[std::size_t(i * d + j)] = dw + du + dv;
    }
  const double eps = std::numeric_limits<T>::epsilon();
  CHECK(std::fabs((long double)Tensor<T>(loss)() - value) <= 32 * eps * std::fabs(value));
  CHECK(worst_error(got, want, 1.0L) <= 32 * eps);
}

TEST_CASE("cumsum's and cumprod's gradients, with no zero, one zero and two zeros along the scan", "[autodiff]") {
  scan_gradient_case<float>();
  scan_gradient_case<double>();
}

namespace {
template <class N>
struct is_let : std::bool_constant<detail::is_let_node_v<N>> {};
} // namespace

TEST_CASE("a let's gradient binds its value only where the gradient reads it", "[autodiff][let]") {
  const auto x = random_tensor<double, shape<3, 4>>(70);
  const auto r = random_tensor<double, shape<4, 3>>(71);
  // The body is linear in the placeholder (a transpose, a scale): its gradient never reads the value.
  auto [l0, d0] = value_and_grad([&](const auto& x_) { return sum(let(exp(x_), [&](const auto& e) { return transpose(e) * r * 3.0; })); }, x);
  STATIC_REQUIRE(!detail::any_node<is_let, std::remove_cvref_t<decltype(d0)>>());
  const Tensor<double, shape<3, 4>> g0 = d0;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j) CHECK(g0(i, j) == Approx(3.0 * r(j, i) * std::exp(x(i, j))).epsilon(1e-14));
  // Squared, it is read: the let stays, and the value is computed once for the gradient.
  auto [l1, d1] = value_and_grad([&](const auto& x_) { return sum(let(exp(x_), [&](const auto& e) { return transpose(e * e) * r; })); }, x);
  STATIC_REQUIRE(detail::any_node<is_let, std::remove_cvref_t<decltype(d1)>>());
  const Tensor<double, shape<3, 4>> g1 = d1;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j) CHECK(g1(i, j) == Approx(2.0 * r(j, i) * std::exp(2.0 * x(i, j))).epsilon(1e-13));
}
