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
  index_t n, c, h, w, oc, kh, kw, s, p, d, groups = 1, op = 0;
  bool transposed = false;
  constexpr index_t out(index_t in, index_t k) const {
    return transposed ? (in - 1) * s - 2 * p + d * (k - 1) + op + 1 : (in + 2 * p - d * (k - 1) - 1) / s + 1;
  }
  constexpr index_t oh() const { return out(h, kh); }
  constexpr index_t ow() const { return out(w, kw); }
};

// d/dx and d/dw of sum(y * r), by scattering r through every tap, and that loss itself, for
// y = conv2d(x, w) or conv_transpose2d(x, w) as PyTorch defines them: y[oc, yo] += x[c, xi] * w[tap]
// where xi = yo*s - p + k*d (conv2d) or yo = xi*s - p + k*d (conv_transpose2d), c and oc in one group.
template <class T>
ld conv_reference(const geometry& g, bool nhwc, const T* x, const T* w, const T* r, std::vector<ld>& gx,
                  std::vector<ld>& gw) {
  const index_t OH = g.oh(), OW = g.ow(), Cg = g.c / g.groups, OCg = g.oc / g.groups;
  auto xi = [&](index_t n, index_t c, index_t i, index_t j) { return nhwc ? ((n * g.h + i) * g.w + j) * g.c + c : ((n * g.c + c) * g.h + i) * g.w + j; };
  auto oi = [&](index_t n, index_t o, index_t i, index_t j) { return nhwc ? ((n * OH + i) * OW + j) * g.oc + o : ((n * g.oc + o) * OH + i) * OW + j; };
  // conv2d [OC, C/G, KH, KW] or [KH, KW, C/G, OC]; conv_transpose2d [C, OC/G, KH, KW] or [KH, KW, OC/G, C]
  const index_t outer_n = g.transposed ? g.c : g.oc, inner_n = g.transposed ? OCg : Cg;
  auto wi = [&](index_t o, index_t c, index_t a, index_t b) {
    const index_t outer = g.transposed ? c : o, inner = g.transposed ? o % OCg : c % Cg;
    return nhwc ? ((a * g.kw + b) * inner_n + inner) * outer_n + outer
                : ((outer * inner_n + inner) * g.kh + a) * g.kw + b;
  };
  gx.assign(std::size_t(g.n * g.c * g.h * g.w), 0);
  gw.assign(std::size_t(outer_n * inner_n * g.kh * g.kw), 0);
  ld loss = 0;
  const index_t PH = g.transposed ? g.h : OH, PW = g.transposed ? g.w : OW; // the positions the taps start from
  for (index_t n = 0; n < g.n; ++n)
    for (index_t o = 0; o < g.oc; ++o)
      for (index_t c = o / OCg * Cg; c < (o / OCg + 1) * Cg; ++c)
        for (index_t i = 0; i < PH; ++i)
          for (index_t j = 0; j < PW; ++j)
            for (index_t a = 0; a < g.kh; ++a)
              for (index_t b = 0; b < g.kw; ++b) {
                const index_t th = i * g.s - g.p + a * g.d, tw = j * g.s - g.p + b * g.d;
                const index_t xh = g.transposed ? i : th, xw = g.transposed ? j : tw, yh = g.transposed ? th : i,
                              yw = g.transposed ? tw : j;
                if (xh < 0 || xh >= g.h || xw < 0 || xw >= g.w || yh < 0 || yh >= OH || yw < 0 || yw >= OW) continue;
                const ld rv = r[oi(n, o, yh, yw)], xv = x[xi(n, c, xh, xw)], wv = w[wi(o, c, a, b)];
                gx[std::size_t(xi(n, c, xh, xw))] += rv * wv;
                gw[std::size_t(wi(o, c, a, b))] += rv * xv;
                loss += rv * xv * wv;
              }
  return loss;
}

template <geometry G, class L>
auto conv_of(const auto& x, const auto& w) {
  if constexpr (G.transposed)
    return conv_transpose2d(x, w, stride<G.s>, padding<G.p>, dilation<G.d>, output_padding<G.op>, groups<G.groups>,
                            L{});
  else return conv2d(x, w, stride<G.s>, padding<G.p>, dilation<G.d>, groups<G.groups>, L{});
}

template <geometry G, class L, class T, class XS, class WS, class YS>
void check_conv_vjp(const Tensor<T, XS>& x, const Tensor<T, WS>& w, const Tensor<T, YS>& r,
                    const std::vector<ld>& want_x, const std::vector<ld>& want_w, double tol) {
  auto [vx, vw] = vjp([](const auto& x_, const auto& w_) { return conv_of<G, L>(x_, w_); }, r, x, w);
  const Tensor<T, XS> hx = vx;
  const Tensor<T, WS> hw = vw;
  CHECK(worst_error(hx, want_x) < tol);
  CHECK(worst_error(hw, want_w) < tol);
}

template <class T, geometry G, bool Nhwc, bool Vjp = true>
void check_conv() {
  constexpr index_t OH = G.oh(), OW = G.ow(), WI = (G.transposed ? G.oc : G.c) / G.groups,
                    WO = G.transposed ? G.c : G.oc;
  using XS = std::conditional_t<Nhwc, shape<G.n, G.h, G.w, G.c>, shape<G.n, G.c, G.h, G.w>>;
  using WS = std::conditional_t<Nhwc, shape<G.kh, G.kw, WI, WO>, shape<WO, WI, G.kh, G.kw>>;
  using YS = std::conditional_t<Nhwc, shape<G.n, OH, OW, G.oc>, shape<G.n, G.oc, OH, OW>>;
  using L = std::conditional_t<Nhwc, nhwc_t, nchw_t>;
  const auto x = random_tensor<T, XS>(1);
  const auto w = random_tensor<T, WS>(2);
  const auto r = random_tensor<T, YS>(3);
  auto [loss, dx, dw] =
      value_and_grad([&](const auto& x_, const auto& w_) { return sum(conv_of<G, L>(x_, w_) * r); }, x, w);
  const Tensor<T> l = loss;
  const Tensor<T, XS> gx = dx;
  const Tensor<T, WS> gw = dw;
  std::vector<ld> want_x, want_w;
  const ld want_loss = conv_reference(G, Nhwc, x.data(), w.data(), r.data(), want_x, want_w);
  INFO((G.transposed ? "conv_transpose2d" : "conv2d")
       << " n " << G.n << " c " << G.c << " h " << G.h << " w " << G.w << " oc " << G.oc << " k " << G.kh << "x" << G.kw
       << " s " << G.s << " p " << G.p << " d " << G.d << " groups " << G.groups << " op " << G.op
       << (Nhwc ? " nhwc" : " nchw"));
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  CHECK(std::fabs(ld(l()) - want_loss) < tol * std::max(std::fabs(want_loss), 1.0L));
  CHECK(worst_error(gx, want_x) < tol);
  CHECK(worst_error(gw, want_w) < tol);
  // vjp of the convolution alone with r gives the same two gradients (a few cases: each vjp instantiates
  // the gradient again).
  if constexpr (Vjp) check_conv_vjp<G, L>(x, w, r, want_x, want_w, tol);
}
} // namespace

TEST_CASE("conv2d: gradients of input and weights (NCHW and NHWC, stride, padding, dilation)", "[autodiff][conv]") {
  check_conv<float, geometry{2, 1, 28, 28, 4, 3, 3, 1, 1, 1}, false>();  // the shape of a first layer
  check_conv<double, geometry{2, 3, 7, 6, 4, 3, 3, 1, 1, 1}, false>();
  check_conv<double, geometry{2, 3, 7, 6, 4, 3, 3, 1, 1, 1}, true>();
  check_conv<float, geometry{3, 2, 9, 8, 5, 3, 2, 2, 1, 1}, false>(); // stride 2: rows the stride drops
  check_conv<float, geometry{3, 2, 9, 8, 5, 3, 2, 2, 1, 1}, true>();
  check_conv<double, geometry{1, 2, 10, 9, 3, 3, 3, 1, 2, 2}, false>(); // dilation 2
  // NHWC weight gradients lay the windows out by position when a window row is a vector or more
  // (Cg * KW >= 16) and by tap otherwise (the cases above): one of the former.
  check_conv<float, geometry{1, 8, 5, 6, 3, 3, 2, 1, 1, 1}, true>();
  // NHWC, one group: the weights' gradient is a convolution over x transposed to [C, H, W, N] (its
  // batch as channels: 8, whole vectors), with the forward's dilation as its stride; where the stride
  // leaves input rows unread (8 rows, stride 2), the windows instead.
  check_conv<float, geometry{8, 4, 6, 5, 3, 3, 3, 1, 1, 1}, true, false>();
  check_conv<double, geometry{1, 2, 10, 9, 3, 3, 3, 1, 2, 2}, true, false>();
  check_conv<float, geometry{2, 3, 8, 8, 4, 3, 3, 2, 1, 1}, true, false>();
  // A first layer's (one channel), with vjp: its g is a leaf, read in place as the kernel [OH, OW, N,
  // OC] and packed channel by channel; a batch of 3, so that the GEMM's k blocks of 256 over 28 x 28 x 3
  // start inside a tap's run of channels.
  check_conv<float, geometry{3, 1, 28, 28, 4, 3, 3, 1, 1, 1}, true>();
}

TEST_CASE("conv2d: gradients of a grouped and a depthwise convolution (NCHW and NHWC)", "[autodiff][conv]") {
  // 2 groups, stride 2
  check_conv<double, geometry{2, 4, 9, 8, 6, 3, 3, 2, 1, 1, 2}, false>();
  check_conv<float, geometry{2, 4, 9, 8, 6, 3, 3, 2, 1, 1, 2}, true, false>();
  // depthwise: 2 outputs per channel with dilation 2; stride 2 and dilation 2 without padding
  check_conv<double, geometry{2, 3, 11, 7, 6, 3, 2, 1, 1, 2, 3}, true, false>();
  check_conv<float, geometry{1, 3, 9, 9, 3, 3, 3, 2, 0, 2, 3}, false, false>();
}

TEST_CASE("conv_transpose2d: gradients of input and weights (stride, padding, output padding, dilation, groups)",
          "[autodiff][conv]") {
  // stride 2, padding 1, output padding 1
  check_conv<double, geometry{2, 3, 5, 4, 4, 3, 3, 2, 1, 1, 1, 1, true}, false>();
  // 2 groups: dilation 2 with the output padding past the padding (g's windows need no padding: vjp's g
  // is read in place), and stride 3 with padding 2 past the output padding 1 (one row behind)
  check_conv<double, geometry{1, 4, 5, 7, 6, 3, 2, 2, 0, 2, 2, 1, true}, true>();
  check_conv<float, geometry{2, 4, 3, 5, 2, 2, 3, 3, 2, 2, 2, 1, true}, false, false>();
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

// The online form's gradient: its max part has none, its sum part's is exp(x - max); together the
// definition's s * (g - Σ g s) per row.
TEST_CASE("vjp: the online softmax's gradient is softmax's (ops/softmax_config.hpp)", "[autodiff]") {
  using S = shape<3, 37>;
  const auto v = random_tensor<double, S>(44);
  const auto g = random_tensor<double, S>(45);
  using last = detail::mask_holder<detail::canon(std::array<bool, 2>{false, true})>;
  auto [dx] = vjp([](const auto& x_) { return detail::softmax_online<last>(detail::as_node(x_)); }, g, v);
  const Tensor<double, S> got = dx;
  for (int i = 0; i < 3; ++i) {
    long double m = -INFINITY, z = 0, dot = 0;
    for (int j = 0; j < 37; ++j) m = std::max<long double>(m, v(i, j));
    for (int j = 0; j < 37; ++j) z += std::exp((long double)v(i, j) - m);
    for (int j = 0; j < 37; ++j) dot += g(i, j) * std::exp((long double)v(i, j) - m) / z;
    int bad = 0;
    for (int j = 0; j < 37; ++j) {
      const long double want = std::exp((long double)v(i, j) - m) / z * (g(i, j) - dot);
      bad += !(std::abs(got(i, j) - want) <= 1e-12 * (std::abs(want) + 1e-3));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("vjp_with_value: the outermost derivative reads the given value instead of recomputing it", "[autodiff][pool]") {
  const auto x = random_tensor<float, shape<2, 3, 6, 8>>(14);
  const auto g = random_tensor<float, shape<2, 3, 3, 4>>(15);
  const auto pool = [](const auto& x_) { return max_pool2d<2>(x_); };
  // Told the pooled value, the same gradient as recomputing it, bit for bit.
  const Tensor<float, shape<2, 3, 3, 4>> y = pool(x);
  auto [d_plain] = vjp(pool, g, x);
  auto [d_given] = vjp_with_value(pool, y, g, x);
  const Tensor<float, shape<2, 3, 6, 8>> plain = d_plain, given = d_given;
  for (index_t i = 0; i < plain.size(); ++i) REQUIRE(given.data()[i] == plain.data()[i]);
  // Told each window's minimum instead, the gradient goes to the minima: the value is read.
  const Tensor<float, shape<2, 3, 3, 4>> lows = -max_pool2d<2>(-x);
  auto [d_low] = vjp_with_value(pool, lows, g, x);
  const Tensor<float, shape<2, 3, 6, 8>> low = d_low;
  for (index_t b = 0; b < 6; ++b)
    for (index_t i = 0; i < 6; ++i)
      for (index_t j = 0; j < 8; ++j) {
        const index_t at = (b * 6 + i) * 8 + j;
        const float m = lows.data()[(b * 3 + i / 2) * 4 + j / 2];
        CHECK(low.data()[at] == (x.data()[at] == m ? g.data()[(b * 3 + i / 2) * 4 + j / 2] : 0.0f));
      }
  // An elementwise root: exp's derivative g * y reads y (here twice exp(x): twice the gradient).
  const Tensor<float, shape<2, 3, 6, 8>> r = random_tensor<float, shape<2, 3, 6, 8>>(16);
  const Tensor<float, shape<2, 3, 6, 8>> e2 = exp(x) * 2.0f;
  auto [d_exp] = vjp_with_value([](const auto& x_) { return exp(x_); }, e2, r, x);
  const Tensor<float, shape<2, 3, 6, 8>> de = d_exp;
  for (index_t i = 0; i < de.size(); ++i) CHECK(de.data()[i] == r.data()[i] * e2.data()[i]);
}
