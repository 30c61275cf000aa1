// Gradients of convolution, pooling and padding (autodiff/backward.hpp), and vjp. Each loss here is
// linear in the value differentiated, sum(f(x) * r) with a random r, so its exact gradient is the
// adjoint of f applied to r: written below from the definitions (a scatter over the window) in long
// double, independently of tenfold.
#include <catch2/catch.hpp>
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
Tensor<T, S> random_tensor(unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor<T, S> t;
  for (auto& v : t) v = T(u(g));
  return t;
}

template <class T, class S>
double worst_error(const Tensor<T, S>& got, const std::vector<ld>& want) {
  REQUIRE(want.size() == std::size_t(S::size));
  ld worst = 0;
  for (index_t i = 0; i < S::size; ++i)
    worst = std::max(worst, std::fabs(ld(got.data()[i]) - want[std::size_t(i)]) / std::max(std::fabs(want[std::size_t(i)]), 1.0L));
  return double(worst);
}

struct geometry {
  index_t n, c, h, w, oc, kh, kw, s, p, d;
  constexpr index_t oh() const { return (h + 2 * p - d * (kh - 1) - 1) / s + 1; }
  constexpr index_t ow() const { return (w + 2 * p - d * (kw - 1) - 1) / s + 1; }
};

// d/dx and d/dw of sum(conv2d(x, w) * r), by scattering r through every tap.
template <class T>
void conv_reference(const geometry& g, bool nhwc, const T* x, const T* w, const T* r, std::vector<ld>& gx, std::vector<ld>& gw) {
  const index_t OH = g.oh(), OW = g.ow();
  auto xi = [&](index_t n, index_t c, index_t i, index_t j) { return nhwc ? ((n * g.h + i) * g.w + j) * g.c + c : ((n * g.c + c) * g.h + i) * g.w + j; };
  auto oi = [&](index_t n, index_t o, index_t i, index_t j) { return nhwc ? ((n * OH + i) * OW + j) * g.oc + o : ((n * g.oc + o) * OH + i) * OW + j; };
  auto wi = [&](index_t o, index_t c, index_t a, index_t b) { return nhwc ? ((a * g.kw + b) * g.c + c) * g.oc + o : ((o * g.c + c) * g.kh + a) * g.kw + b; };
  gx.assign(std::size_t(g.n * g.c * g.h * g.w), 0);
  gw.assign(std::size_t(g.oc * g.c * g.kh * g.kw), 0);
  for (index_t n = 0; n < g.n; ++n)
    for (index_t o = 0; o < g.oc; ++o)
      for (index_t i = 0; i < OH; ++i)
        for (index_t j = 0; j < OW; ++j)
          for (index_t c = 0; c < g.c; ++c)
            for (index_t a = 0; a < g.kh; ++a)
              for (index_t b = 0; b < g.kw; ++b) {
                const index_t ih = i * g.s - g.p + a * g.d, iw = j * g.s - g.p + b * g.d;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const ld rv = r[oi(n, o, i, j)];
                gx[std::size_t(xi(n, c, ih, iw))] += rv * ld(w[wi(o, c, a, b)]);
                gw[std::size_t(wi(o, c, a, b))] += rv * ld(x[xi(n, c, ih, iw)]);
              }
}

template <class T, geometry G, bool Nhwc>
void check_conv() {
  constexpr index_t OH = G.oh(), OW = G.ow();
  using XS = std::conditional_t<Nhwc, shape<G.n, G.h, G.w, G.c>, shape<G.n, G.c, G.h, G.w>>;
  using WS = std::conditional_t<Nhwc, shape<G.kh, G.kw, G.c, G.oc>, shape<G.oc, G.c, G.kh, G.kw>>;
  using YS = std::conditional_t<Nhwc, shape<G.n, OH, OW, G.oc>, shape<G.n, G.oc, OH, OW>>;
  using L = std::conditional_t<Nhwc, nhwc_t, nchw_t>;
  const auto x = random_tensor<T, XS>(1);
  const auto w = random_tensor<T, WS>(2);
  const auto r = random_tensor<T, YS>(3);
  auto [loss, dx, dw] = value_and_grad(
      [&](const auto& x_, const auto& w_) {
        return sum(conv2d(x_, w_, stride<G.s>, padding<G.p>, dilation<G.d>, L{}) * r);
      },
      x, w);
  const Tensor<T, XS> gx = dx;
  const Tensor<T, WS> gw = dw;
  std::vector<ld> want_x, want_w;
  conv_reference(G, Nhwc, x.data(), w.data(), r.data(), want_x, want_w);
  INFO("n " << G.n << " c " << G.c << " h " << G.h << " w " << G.w << " oc " << G.oc << " k " << G.kh << "x" << G.kw << " s " << G.s
                << " p " << G.p << " d " << G.d << (Nhwc ? " nhwc" : " nchw"));
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  CHECK(worst_error(gx, want_x) < tol);
  CHECK(worst_error(gw, want_w) < tol);
  // vjp of the convolution alone with r gives the same two gradients.
  auto [vx, vw] = vjp([](const auto& x_, const auto& w_) { return conv2d(x_, w_, stride<G.s>, padding<G.p>, dilation<G.d>, L{}); }, r, x, w);
  const Tensor<T, XS> hx = vx;
  const Tensor<T, WS> hw = vw;
  CHECK(worst_error(hx, want_x) < tol);
  CHECK(worst_error(hw, want_w) < tol);
}
} // namespace

TEST_CASE("conv2d: gradients of input and weights (NCHW and NHWC, stride, padding, dilation)", "[autodiff][conv]") {
  check_conv<float, geometry{2, 1, 28, 28, 4, 3, 3, 1, 1, 1}, false>();  // the shape of a first layer
  check_conv<double, geometry{2, 3, 7, 6, 4, 3, 3, 1, 1, 1}, false>();
  check_conv<double, geometry{2, 3, 7, 6, 4, 3, 3, 1, 1, 1}, true>();
  check_conv<float, geometry{3, 2, 9, 8, 5, 3, 2, 2, 1, 1}, false>(); // stride 2: rows the stride drops
  check_conv<float, geometry{3, 2, 9, 8, 5, 3, 2, 2, 1, 1}, true>();
  check_conv<double, geometry{1, 2, 10, 9, 3, 3, 3, 1, 2, 2}, false>(); // dilation 2
}

namespace {
// d/dx of sum(max_pool2d<K>(x) * r) for NCHW x: r routed to each window's (unique) maximum.
template <class T>
std::vector<ld> pool_reference(index_t n, index_t c, index_t h, index_t w, index_t k, const T* x, const T* r) {
  const index_t oh = h / k, ow = w / k;
  std::vector<ld> g(std::size_t(n * c * h * w), 0);
  for (index_t b = 0; b < n * c; ++b)
    for (index_t i = 0; i < oh; ++i)
      for (index_t j = 0; j < ow; ++j) {
        index_t best = -1;
        for (index_t a = 0; a < k; ++a)
          for (index_t e = 0; e < k; ++e) {
            const index_t at = (b * h + i * k + a) * w + j * k + e;
            if (best < 0 || x[at] > x[best]) best = at;
          }
        g[std::size_t(best)] += r[(b * oh + i) * ow + j];
      }
  return g;
}
} // namespace

TEST_CASE("max_pool2d: the gradient goes to each window's maximum (kernel = stride, rows left over)", "[autodiff][pool]") {
  const auto x = random_tensor<float, shape<2, 3, 7, 8>>(4); // 7 rows: the last is in no window
  const auto r = random_tensor<float, shape<2, 3, 3, 4>>(5);
  auto [loss, dx] = value_and_grad([&](const auto& x_) { return sum(max_pool2d<2>(x_) * r); }, x);
  const Tensor<float, shape<2, 3, 7, 8>> gx = dx;
  CHECK(worst_error(gx, pool_reference(2, 3, 7, 8, 2, x.data(), r.data())) == 0);

  // Through an expression (a value_node view, not a leaf), and 3 x 3 windows.
  const auto y = random_tensor<float, shape<2, 2, 9, 9>>(6);
  const auto s = random_tensor<float, shape<2, 2, 3, 3>>(7);
  auto [l2, dy] = value_and_grad([&](const auto& y_) { return sum(max_pool2d<3>(y_ * 2.0f) * s); }, y);
  const Tensor<float, shape<2, 2, 9, 9>> gy = dy;
  auto want = pool_reference(2, 2, 9, 9, 3, y.data(), s.data());
  for (auto& v : want) v *= 2;
  CHECK(worst_error(gy, want) == 0);
}

TEST_CASE("views: the gradient of a slice, a pad and a window split are scatters", "[autodiff][views]") {
  const auto x = random_tensor<double, shape<5, 6>>(8);
  const auto r = random_tensor<double, shape<3, 4>>(9);
  // slice: r lands in the sliced block, zeros elsewhere
  auto [l1, d1] = value_and_grad([&](const auto& x_) { return sum(slice<range<1, 4>, range<2, 6>>(x_) * r); }, x);
  const Tensor<double, shape<5, 6>> g1 = d1;
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 6; ++j) CHECK(g1(i, j) == (i >= 1 && i < 4 && j >= 2 ? r(i - 1, j - 2) : 0.0));
  // pad: the gradient of the padded value is the middle of r's
  const auto q = random_tensor<double, shape<3, 4>>(10);
  const auto rp = random_tensor<double, shape<6, 5>>(11);
  auto [l2, d2] = value_and_grad([&](const auto& q_) { return sum(pad<1, 2, 0, 1>(exp(q_), 0) * rp); }, q);
  const Tensor<double, shape<3, 4>> g2 = d2;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j) CHECK(g2(i, j) == Approx(rp(i + 1, j) * std::exp(q(i, j))).epsilon(1e-14));
}

TEST_CASE("vjp: the gradient of <g, f(x)> for a non-scalar f", "[autodiff]") {
  const auto x = random_tensor<double, shape<4, 5>>(12);
  const auto g = random_tensor<double, shape<4, 5>>(13);
  auto [dx] = vjp([](const auto& x_) { return softmax(x_); }, g, x);
  const Tensor<double, shape<4, 5>> got = dx;
  // softmax's vjp: s * (g - sum(g * s)) per row
  for (index_t i = 0; i < 4; ++i) {
    ld m = -1e300, z = 0, dot = 0;
    for (index_t j = 0; j < 5; ++j) m = std::max<ld>(m, x(i, j));
    for (index_t j = 0; j < 5; ++j) z += std::exp(ld(x(i, j)) - m);
    for (index_t j = 0; j < 5; ++j) dot += g(i, j) * std::exp(ld(x(i, j)) - m) / z;
    for (index_t j = 0; j < 5; ++j) CHECK(double(got(i, j)) == Approx(double(std::exp(ld(x(i, j)) - m) / z * (g(i, j) - dot))).epsilon(1e-12));
  }
}
