// Gradients through flips, concat, stack, strided slices, tile, repeat and pooling windows (overlapping, adaptive)
// (autodiff/view_adjoint.hpp). A flip of a parameter folds into negative strides, a flip of an opaque
// value (a matmul) stays a view with a negative coefficient; either way the adjoint is the same flip of g.
// The pair swap of rotary position embeddings, reshape<..., D>(flip<-1>(reshape<..., D/2, 2>(x))), is
// checked as it will be used. The adjoint of a concat gives each operand its slice of g; overlapping
// windows add their shares. Each loss is sum(f(x) * r) with a random r; the exact gradient is written
// below from the definition, in long double, independently of tenfold.
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
    worst = std::max(worst, std::fabs(ld(got.data()[i]) - want[std::size_t(i)]) /
                                std::max(std::fabs(want[std::size_t(i)]), 1.0L));
  return double(worst);
}

// The pair swap's partner of element k of a row: 2j <-> 2j + 1.
constexpr index_t partner(index_t k) { return k ^ 1; }
} // namespace

TEST_CASE("flip: the gradient of a flipped parameter is the flipped gradient", "[autodiff][views][flip]") {
  const auto x = random_tensor<double, shape<4, 5>>(1);
  const auto r = random_tensor<double, shape<4, 5>>(2);
  auto [l0, d0] = value_and_grad([&](const auto& x_) { return sum(flip<0>(x_) * r); }, x);
  auto [l1, d1] = value_and_grad([&](const auto& x_) { return sum(flip<-1>(x_) * r); }, x);
  auto [l2, d2] = value_and_grad([&](const auto& x_) { return sum(flip(x_) * r); }, x);
  const Tensor<double, shape<4, 5>> g0 = d0, g1 = d1, g2 = d2;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j) {
      CHECK(g0(i, j) == r(3 - i, j));
      CHECK(g1(i, j) == r(i, 4 - j));
      CHECK(g2(i, j) == r(3 - i, 4 - j));
    }
  // A flipped slice (pads zeros where nothing was read) and a slice with step -1, broadcast over a new
  // leading axis (summed back).
  const auto rs = random_tensor<double, shape<2, 3>>(3);
  auto [l3, d3] =
      value_and_grad([&](const auto& x_) { return sum(flip<1>(slice<range<1, 3>, range<1, 4>>(x_)) * rs); }, x);
  const Tensor<double, shape<4, 5>> g3 = d3;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j) CHECK(g3(i, j) == (i >= 1 && i < 3 && j >= 1 && j < 4 ? rs(i - 1, 3 - j) : 0.0));
  const auto rb = random_tensor<double, shape<3, 4, 5>>(4);
  auto [l4, d4] = value_and_grad(
      [&](const auto& x_) { return sum(broadcast_to<shape<3, 4, 5>>(slice<whole, range<none, none, -1>>(x_)) * rb); },
      x);
  const Tensor<double, shape<4, 5>> g4 = d4;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j)
      CHECK(g4(i, j) == Approx(double(ld(rb(0, i, 4 - j)) + rb(1, i, 4 - j) + rb(2, i, 4 - j))).epsilon(1e-15));
}

TEST_CASE("flip: of a computed value, elementwise (folded into the leaves) and opaque (a view of a matmul)",
          "[autodiff][views][flip]") {
  const auto x = random_tensor<double, shape<4, 6>>(5);
  const auto r = random_tensor<double, shape<4, 6>>(6);
  auto [l0, d0] = value_and_grad([&](const auto& x_) { return sum(flip<1>(exp(x_)) * r); }, x);
  const Tensor<double, shape<4, 6>> g0 = d0;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 6; ++j)
      CHECK(g0(i, j) == Approx(double(std::exp(ld(x(i, j))) * r(i, 5 - j))).epsilon(1e-14));

  // d/da sum(flip(a w) * r) = flip(r) wᵀ, d/dw = aᵀ flip(r)
  const auto a = random_tensor<float, shape<5, 3>>(7);
  const auto w = random_tensor<float, shape<3, 4>>(8);
  const auto rm = random_tensor<float, shape<5, 4>>(9);
  auto [l1, da, dw] =
      value_and_grad([&](const auto& a_, const auto& w_) { return sum(flip<0, 1>(matmul(a_, w_)) * rm); }, a, w);
  const Tensor<float, shape<5, 3>> ga = da;
  const Tensor<float, shape<3, 4>> gw = dw;
  std::vector<ld> want_a(15, 0), want_w(12, 0);
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 4; ++j)
      for (index_t k = 0; k < 3; ++k) {
        const ld g = rm(4 - i, 3 - j);
        want_a[std::size_t(i * 3 + k)] += g * w(k, j);
        want_w[std::size_t(k * 4 + j)] += g * a(i, k);
      }
  CHECK(worst_error(ga, want_a) < 1e-5);
  CHECK(worst_error(gw, want_w) < 1e-5);
}

namespace {
// The pair swap of rotary embeddings over the last axis of x: [..., D] -> [..., D/2, 2], flipped, back.
template <class X>
auto swap_pairs(const X& x) {
  using S = detail::shape_of_t<X>;
  static_assert(S::rank == 3 && S::dims[2] % 2 == 0);
  return reshape<S::dims[0], S::dims[1], S::dims[2]>(flip<-1>(reshape<S::dims[0], S::dims[1], S::dims[2] / 2, 2>(x)));
}
} // namespace

TEST_CASE("flip: the pair swap of rotary embeddings, on a parameter and on computed values",
          "[autodiff][views][flip][rope]") {
  using S = shape<3, 5, 8>;
  const auto x = random_tensor<float, S>(10);
  const auto r = random_tensor<float, S>(11);
  auto at = [](const auto& t, index_t i, index_t j, index_t k) { return ld(t.data()[(i * 5 + j) * 8 + k]); };

  // On a leaf: the gradient is r swapped back.
  auto [l0, d0] = value_and_grad([&](const auto& x_) { return sum(swap_pairs(x_) * r); }, x);
  const Tensor<float, S> g0 = d0;
  std::vector<ld> want(S::size);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j)
      for (index_t k = 0; k < 8; ++k) want[std::size_t((i * 5 + j) * 8 + k)] = at(r, i, j, partner(k));
  CHECK(worst_error(g0, want) == 0);

  // The rotation itself, x cos + swap(x) sin_signed: d/dx = r cos + swap(r sin_signed).
  const auto c = random_tensor<float, S>(12);
  const auto s = random_tensor<float, S>(13);
  auto [l1, d1] = value_and_grad([&](const auto& x_) { return sum((x_ * c + swap_pairs(x_) * s) * r); }, x);
  const Tensor<float, S> g1 = d1;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j)
      for (index_t k = 0; k < 8; ++k)
        want[std::size_t((i * 5 + j) * 8 + k)] =
            at(r, i, j, k) * at(c, i, j, k) + at(r, i, j, partner(k)) * at(s, i, j, partner(k));
  CHECK(worst_error(g1, want) < 1e-6);

  // On an elementwise value: exp(x) swapped, the flip folded into the leaf under exp.
  auto [l2, d2] = value_and_grad([&](const auto& x_) { return sum(swap_pairs(exp(x_)) * r); }, x);
  const Tensor<float, S> g2 = d2;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j)
      for (index_t k = 0; k < 8; ++k)
        want[std::size_t((i * 5 + j) * 8 + k)] = std::exp(at(x, i, j, k)) * at(r, i, j, partner(k));
  CHECK(worst_error(g2, want) < 1e-6);

  // On an opaque value, as rotary embeddings rotate a projection: q = reshape(h w), swapped.
  const auto h = random_tensor<float, shape<15, 6>>(14);
  const auto w = random_tensor<float, shape<6, 8>>(15);
  auto [l3, dh, dw] = value_and_grad(
      [&](const auto& h_, const auto& w_) { return sum(swap_pairs(reshape<3, 5, 8>(matmul(h_, w_))) * r); }, h, w);
  const Tensor<float, shape<15, 6>> gh = dh;
  const Tensor<float, shape<6, 8>> gw = dw;
  std::vector<ld> want_h(15 * 6, 0), want_w(6 * 8, 0);
  for (index_t t = 0; t < 15; ++t)
    for (index_t k = 0; k < 8; ++k) {
      const ld g = ld(r.data()[t * 8 + partner(k)]); // the gradient of (h w)[t, k]
      for (index_t e = 0; e < 6; ++e) {
        want_h[std::size_t(t * 6 + e)] += g * w(e, k);
        want_w[std::size_t(e * 8 + k)] += g * h(t, e);
      }
    }
  CHECK(worst_error(gh, want_h) < 1e-5);
  CHECK(worst_error(gw, want_w) < 1e-5);
  // The loss's value too: the swap read forwards.
  const Tensor<float> lv = l3;
  ld want_l = 0;
  for (index_t t = 0; t < 15; ++t)
    for (index_t k = 0; k < 8; ++k) {
      ld q = 0;
      for (index_t e = 0; e < 6; ++e) q += ld(h(t, e)) * w(e, partner(k));
      want_l += q * r.data()[t * 8 + k];
    }
  CHECK(double(lv()) == Approx(double(want_l)).epsilon(1e-5));
}

TEST_CASE("concat: each operand's gradient is its slice of g", "[autodiff][views][concat]") {
  const auto x = random_tensor<double, shape<2, 5>>(20);
  const auto y = random_tensor<double, shape<3, 5>>(21);
  const auto r = random_tensor<double, shape<5, 5>>(22);
  auto [l0, dx, dy] = value_and_grad([&](const auto& x_, const auto& y_) { return sum(concat<0>(x_, y_) * r); }, x, y);
  const Tensor<double, shape<2, 5>> gx = dx;
  const Tensor<double, shape<3, 5>> gy = dy;
  for (index_t j = 0; j < 5; ++j) {
    for (index_t i = 0; i < 2; ++i) CHECK(gx(i, j) == r(i, j));
    for (index_t i = 0; i < 3; ++i) CHECK(gy(i, j) == r(i + 2, j));
  }

  // The same parameter twice along the last axis, once through exp and once flipped:
  // d/dq sum(concat<-1>(exp(q), flip<0>(q), q) * s) = exp(q) s[:, :3] + flip<0>(s[:, 3:6]) + s[:, 6:].
  const auto q = random_tensor<double, shape<4, 3>>(23);
  const auto s = random_tensor<double, shape<4, 9>>(24);
  auto [l1, dq] = value_and_grad([&](const auto& q_) { return sum(concat<-1>(exp(q_), flip<0>(q_), q_) * s); }, q);
  const Tensor<double, shape<4, 3>> gq = dq;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j)
      CHECK(gq(i, j) == Approx(double(std::exp(ld(q(i, j))) * s(i, j) + s(3 - i, j + 3) + s(i, j + 6))).epsilon(1e-14));

  // A slice of a concat (a view of the opaque node: zeros where the slice did not read), and a concat of
  // an opaque operand (a matmul) beside a parameter.
  const auto rs = random_tensor<double, shape<3, 5>>(25);
  auto [l2, dx2, dy2] = value_and_grad(
      [&](const auto& x_, const auto& y_) { return sum(slice<range<1, 4>>(concat<0>(x_, y_)) * rs); }, x, y);
  const Tensor<double, shape<2, 5>> gx2 = dx2;
  const Tensor<double, shape<3, 5>> gy2 = dy2;
  for (index_t j = 0; j < 5; ++j) {
    CHECK(gx2(0, j) == 0);
    CHECK(gx2(1, j) == rs(0, j));
    CHECK(gy2(0, j) == rs(1, j));
    CHECK(gy2(1, j) == rs(2, j));
    CHECK(gy2(2, j) == 0);
  }
  const auto a = random_tensor<float, shape<4, 3>>(26);
  const auto w = random_tensor<float, shape<3, 2>>(27);
  const auto b = random_tensor<float, shape<4, 5>>(28);
  const auto rm = random_tensor<float, shape<4, 7>>(29);
  auto [l3, dw, db] =
      value_and_grad([&](const auto& w_, const auto& b_) { return sum(concat<1>(matmul(a, w_), b_) * rm); }, w, b);
  const Tensor<float, shape<3, 2>> gw = dw;
  const Tensor<float, shape<4, 5>> gb = db;
  std::vector<ld> want_w(6, 0), want_b(20);
  for (index_t i = 0; i < 4; ++i) {
    for (index_t k = 0; k < 3; ++k)
      for (index_t j = 0; j < 2; ++j) want_w[std::size_t(k * 2 + j)] += ld(a(i, k)) * rm(i, j);
    for (index_t j = 0; j < 5; ++j) want_b[std::size_t(i * 5 + j)] = rm(i, j + 2);
  }
  CHECK(worst_error(gw, want_w) < 1e-6);
  CHECK(worst_error(gb, want_b) == 0);
}

TEST_CASE("neighbouring slices: their zero pads are summed as one concat", "[autodiff][views][slice]") {
  // The adjoints of slices side by side along one axis (q, k and v of a packed projection) are pads of
  // zeros; plus joins them into a concat of the parts (padded where no slice read), not an add of pads.
  const auto a = random_tensor<double, shape<2, 3>>(40);
  const auto b = random_tensor<double, shape<2, 2>>(41);
  auto joined = autodiff::plus(pad<0, 0, 1, 2>(a, 0), pad<0, 0, 4, 0>(b, 0)); // columns [1, 4) and [4, 6)
  using J = decltype(joined);
  STATIC_REQUIRE(detail::is_pad_node_v<J>);
  STATIC_REQUIRE(detail::is_concat_node_v<typename J::child_type>);
  const Tensor<double, shape<2, 6>> got = joined;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 6; ++j) CHECK(got(i, j) == (j == 0 ? 0 : j < 4 ? a(i, j - 1) : b(i, j - 4)));
  // three of them, in either order, cover the axis: one concat of three operands, no pad
  const auto c0 = random_tensor<double, shape<2, 2>>(44), c1 = random_tensor<double, shape<2, 2>>(45),
             c2 = random_tensor<double, shape<2, 2>>(46);
  auto three = autodiff::plus(pad<0, 0, 4, 0>(c2, 0), autodiff::plus(pad<0, 0, 0, 4>(c0, 0), pad<0, 0, 2, 2>(c1, 0)));
  using T3 = decltype(three);
  STATIC_REQUIRE(detail::is_concat_node_v<T3>);
  STATIC_REQUIRE(T3::bounds.size() == 4);
  const Tensor<double, shape<2, 6>> got3 = three;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 6; ++j) CHECK(got3(i, j) == (j < 2 ? c0(i, j) : j < 4 ? c1(i, j - 2) : c2(i, j - 4)));
  // a pad at the end of a let (a gradient through a composite that binds its operand): the let kept
  // around the concat
  auto bound = autodiff::plus(let(exp(c0), [](const auto& e) { return pad<0, 0, 0, 2>(e * e, 0); }), pad<0, 0, 2, 0>(c1, 0));
  using L = decltype(bound);
  STATIC_REQUIRE(detail::is_let_node_v<L>);
  STATIC_REQUIRE(detail::is_concat_node_v<typename L::body_node>);
  const Tensor<double, shape<2, 4>> gotl = bound;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 4; ++j)
      CHECK(gotl(i, j) == Approx(j < 2 ? std::exp(2 * c0(i, j)) : c1(i, j - 2)).epsilon(1e-14));
  // overlapping or apart: an add
  STATIC_REQUIRE(!detail::is_pad_node_v<decltype(autodiff::plus(pad<0, 0, 0, 3>(b, 0), pad<0, 0, 1, 2>(b, 0)))>);
  STATIC_REQUIRE(!detail::is_pad_node_v<decltype(autodiff::plus(pad<0, 0, 0, 4>(b, 0), pad<0, 0, 4, 0>(b, 0)))>);

  // Through value_and_grad: the loss reads three column blocks of x [4, 9] (q, k, v of a packed
  // projection); x's gradient is each block's own.
  const auto x = random_tensor<double, shape<4, 9>>(42);
  const auto r = random_tensor<double, shape<4, 3>>(43);
  auto [l, dx] = value_and_grad(
      [&](const auto& x_) {
        const auto q = slice<whole, range<0, 3>>(x_);
        const auto k = slice<whole, range<3, 6>>(x_);
        const auto v = slice<whole, range<6, 9>>(x_);
        return sum(exp(q) * r + k * k + v * r);
      },
      x);
  const Tensor<double, shape<4, 9>> gx = dx;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j) {
      CHECK(gx(i, j) == Approx(double(std::exp(ld(x(i, j))) * r(i, j))).epsilon(1e-14));
      CHECK(gx(i, j + 3) == 2 * x(i, j + 3));
      CHECK(gx(i, j + 6) == r(i, j));
    }
}

TEST_CASE("stack: each operand's gradient is its index along the new axis", "[autodiff][views][concat]") {
  const auto a = random_tensor<float, shape<4, 5>>(30);
  const auto b = random_tensor<float, shape<4, 5>>(31);
  const auto r = random_tensor<float, shape<4, 3, 5>>(32);
  auto [l0, da, db] =
      value_and_grad([&](const auto& a_, const auto& b_) { return sum(stack<1>(a_, tanh(b_), a_ * b_) * r); }, a, b);
  const Tensor<float, shape<4, 5>> ga = da, gb = db;
  std::vector<ld> want_a(20), want_b(20);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j) {
      const ld t = std::tanh(ld(b(i, j)));
      want_a[std::size_t(i * 5 + j)] = r(i, 0, j) + ld(r(i, 2, j)) * b(i, j);
      want_b[std::size_t(i * 5 + j)] = ld(r(i, 1, j)) * (1 - t * t) + ld(r(i, 2, j)) * a(i, j);
    }
  CHECK(worst_error(ga, want_a) < 1e-6);
  CHECK(worst_error(gb, want_b) < 1e-6);
}

TEST_CASE("strided slices: g lands on every step-th element, zeros between", "[autodiff][views][slice]") {
  // x [23, 9]: rows 1, 4, ..., 19 (step 3) and columns 8, 6, 4, 2, 0 (step -2), of a parameter (folded
  // into its strides) and of a computed value (x * x: a view of a map), then a step-2 slice of a
  // reshape's axis broadcast over a new one (summed back).
  const auto x = random_tensor<double, shape<23, 9>>(41);
  const auto r = random_tensor<double, shape<7, 5>>(42);
  auto [l0, d0] = value_and_grad([&](const auto& x_) { return sum(slice<range<1, 20, 3>, range<none, none, -2>>(x_) * r); }, x);
  auto [l1, d1] =
      value_and_grad([&](const auto& x_) { return sum(slice<range<1, 20, 3>, range<none, none, -2>>(x_ * x_) * r); }, x);
  const Tensor<double, shape<23, 9>> g0 = d0, g1 = d1;
  std::vector<ld> want0(23 * 9, 0.0L), want1(23 * 9, 0.0L);
  for (index_t a = 0; a < 7; ++a)
    for (index_t b = 0; b < 5; ++b) {
      const std::size_t at = std::size_t((1 + 3 * a) * 9 + (8 - 2 * b));
      want0[at] = r(a, b);
      want1[at] = 2 * ld(x.data()[at]) * r(a, b);
    }
  CHECK(worst_error(g0, want0) == 0);
  CHECK(worst_error(g1, want1) < 1e-15);

  const auto y = random_tensor<float, shape<30>>(43);
  const auto s = random_tensor<float, shape<4, 3, 5>>(44);
  auto [l2, d2] = value_and_grad(
      [&](const auto& y_) { return sum(broadcast_to<shape<4, 3, 5>>(slice<whole, range<0, 10, 2>>(reshape<3, 10>(exp(y_)))) * s); }, y);
  const Tensor<float, shape<30>> g2 = d2;
  std::vector<ld> want2(30, 0.0L);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j) {
      ld t = 0;
      for (index_t b = 0; b < 4; ++b) t += s(b, i, j);
      want2[std::size_t(i * 10 + 2 * j)] = t * std::exp(ld(y(i * 10 + 2 * j)));
    }
  CHECK(worst_error(g2, want2) < 1e-6);
}

namespace {
// d/dx of sum(pool(x) * r) for a pool of x [n, c, h, w] (nhwc: [n, h, w, c]) with kernel k, stride s,
// padding p and dilation d: r routed to each window's maximum (max) or spread over its elements divided
// by its count (avg; padding counted or not), written from the definition.
struct pool_geometry {
  index_t n, c, h, w, k, s, p, d;
  bool nhwc = false;
  index_t oh() const { return (h + 2 * p - d * (k - 1) - 1) / s + 1; }
  index_t ow() const { return (w + 2 * p - d * (k - 1) - 1) / s + 1; }
  std::size_t in(index_t b, index_t ch, index_t i, index_t j) const {
    return std::size_t(nhwc ? ((b * h + i) * w + j) * c + ch : ((b * c + ch) * h + i) * w + j);
  }
  std::size_t out(index_t b, index_t ch, index_t i, index_t j) const {
    return std::size_t(nhwc ? ((b * oh() + i) * ow() + j) * c + ch : ((b * c + ch) * oh() + i) * ow() + j);
  }
};
enum class pool_kind { max, avg_with_pad, avg_without_pad };
template <class T, class R>
std::vector<ld> pool_gradient(const pool_geometry& q, pool_kind kind, const T* x, const R* r) {
  std::vector<ld> g(std::size_t(q.n * q.c * q.h * q.w), 0.0L);
  for (index_t b = 0; b < q.n; ++b)
    for (index_t ch = 0; ch < q.c; ++ch)
      for (index_t oi = 0; oi < q.oh(); ++oi)
        for (index_t oj = 0; oj < q.ow(); ++oj) {
          std::vector<std::size_t> inside;
          for (index_t a = 0; a < q.k; ++a)
            for (index_t e = 0; e < q.k; ++e) {
              const index_t i = oi * q.s - q.p + a * q.d, j = oj * q.s - q.p + e * q.d;
              if (i >= 0 && i < q.h && j >= 0 && j < q.w) inside.push_back(q.in(b, ch, i, j));
            }
          const ld rv = r[q.out(b, ch, oi, oj)];
          if (kind == pool_kind::max) {
            std::size_t best = inside[0];
            for (auto at : inside)
              if (x[at] > x[best]) best = at;
            g[best] += rv;
          } else {
            const ld count = kind == pool_kind::avg_with_pad ? ld(q.k * q.k) : ld(inside.size());
            for (auto at : inside) g[at] += rv / count;
          }
        }
  return g;
}
} // namespace

TEST_CASE("pooling with overlapping windows: every window's share lands on its elements, added", "[autodiff][views][pool]") {
  // 3x3 stride 2 (ResNet's stem pool), stride 1 with padding on a computed value, an average without the
  // padding counted, a dilated pool, and NHWC; odd extents, so windows leave rows over. An element that
  // collects several windows' r adds them in another order than the reference: 1e-15, not 0.
  const auto x = random_tensor<double, shape<2, 3, 9, 8>>(51);
  Tensor<double, shape<2, 3, 9, 8>> xx = x * x;
  {
    const auto r = random_tensor<double, shape<2, 3, 4, 3>>(52);
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(max_pool2d<3, 2>(x_) * r); }, x);
    const Tensor<double, shape<2, 3, 9, 8>> g = d;
    CHECK(worst_error(g, pool_gradient(pool_geometry{2, 3, 9, 8, 3, 2, 0, 1}, pool_kind::max, x.data(), r.data())) < 1e-15);
  }
  {
    const auto r = random_tensor<double, shape<2, 3, 9, 8>>(53);
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(max_pool2d<3, 1, 1>(x_ * x_) * r); }, x);
    const Tensor<double, shape<2, 3, 9, 8>> g = d;
    auto want = pool_gradient(pool_geometry{2, 3, 9, 8, 3, 1, 1, 1}, pool_kind::max, xx.data(), r.data());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] *= 2 * ld(x.data()[i]);
    CHECK(worst_error(g, want) < 1e-15);
  }
  {
    const auto r = random_tensor<double, shape<2, 3, 5, 4>>(54);
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(avg_pool2d<3, 2, 1, false, false>(x_) * r); }, x);
    const Tensor<double, shape<2, 3, 9, 8>> g = d;
    CHECK(worst_error(g, pool_gradient(pool_geometry{2, 3, 9, 8, 3, 2, 1, 1}, pool_kind::avg_without_pad, x.data(), r.data())) < 1e-15);
    auto [l2, d2] = value_and_grad([&](const auto& x_) { return sum(avg_pool2d<3, 2, 1>(x_) * r); }, x);
    const Tensor<double, shape<2, 3, 9, 8>> g2 = d2;
    CHECK(worst_error(g2, pool_gradient(pool_geometry{2, 3, 9, 8, 3, 2, 1, 1}, pool_kind::avg_with_pad, x.data(), r.data())) < 1e-15);
  }
  {
    const auto r = random_tensor<double, shape<2, 3, 7, 6>>(55);
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(max_pool2d<2, 1, 0, 2>(x_) * r); }, x);
    const Tensor<double, shape<2, 3, 9, 8>> g = d;
    CHECK(worst_error(g, pool_gradient(pool_geometry{2, 3, 9, 8, 2, 1, 0, 2}, pool_kind::max, x.data(), r.data())) < 1e-15);
  }
  {
    const auto y = random_tensor<float, shape<2, 9, 8, 3>>(56);
    const auto r = random_tensor<float, shape<2, 4, 3, 3>>(57);
    auto [l, d] = value_and_grad([&](const auto& y_) { return sum(max_pool2d<3, 2>(y_, nhwc) * r); }, y);
    const Tensor<float, shape<2, 9, 8, 3>> g = d;
    pool_geometry q{2, 3, 9, 8, 3, 2, 0, 1};
    q.nhwc = true;
    CHECK(worst_error(g, pool_gradient(q, pool_kind::max, y.data(), r.data())) < 1e-6);
  }
}

TEST_CASE("tile and repeat: each source element gets the sum of g over its copies", "[autodiff][views][tile]") {
  const auto x = random_tensor<double, shape<3, 4>>(61);
  const auto ones = random_tensor<double, shape<1, 4>>(62);
  {
    const auto r = random_tensor<double, shape<2, 6, 12>>(63); // tile<2, 2, 3>: a new leading axis
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(tile<2, 2, 3>(x_ * x_) * r); }, x);
    const Tensor<double, shape<3, 4>> g = d;
    std::vector<ld> want(12, 0.0L);
    for (index_t a = 0; a < 2; ++a)
      for (index_t i = 0; i < 6; ++i)
        for (index_t j = 0; j < 12; ++j) want[std::size_t((i % 3) * 4 + j % 4)] += r(a, i, j) * 2 * ld(x(i % 3, j % 4));
    CHECK(worst_error(g, want) < 1e-14);
  }
  {
    const auto r = random_tensor<double, shape<3, 8>>(64); // an extent-1 axis tiled, a longer one too
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(tile<3, 2>(x_) * r); }, ones);
    const Tensor<double, shape<1, 4>> g = d;
    std::vector<ld> want(4, 0.0L);
    for (index_t i = 0; i < 3; ++i)
      for (index_t j = 0; j < 8; ++j) want[std::size_t(j % 4)] += r(i, j);
    CHECK(worst_error(g, want) < 1e-14);
  }
  {
    const auto r = random_tensor<double, shape<3, 12>>(65);
    const auto s = random_tensor<double, shape<6, 4>>(66);
    auto [l, d] = value_and_grad([&](const auto& x_) { return sum(repeat<3, 1>(x_) * r) + sum(repeat<2, 0>(exp(x_)) * s); }, x);
    const Tensor<double, shape<3, 4>> g = d;
    std::vector<ld> want(12, 0.0L);
    for (index_t i = 0; i < 3; ++i)
      for (index_t j = 0; j < 12; ++j) want[std::size_t(i * 4 + j / 3)] += r(i, j);
    for (index_t i = 0; i < 6; ++i)
      for (index_t j = 0; j < 4; ++j) want[std::size_t((i / 2) * 4 + j)] += s(i, j) * std::exp(ld(x(i / 2, j)));
    CHECK(worst_error(g, want) < 1e-14);
  }
}

TEST_CASE("adaptive_avg_pool2d with uneven windows: each window's share over its own elements", "[autodiff][views][pool]") {
  // 14 -> 5 rows (windows of 3 and 4, overlapping) and 8 -> 3 columns, NCHW on x and NHWC on x * x.
  const auto x = random_tensor<double, shape<2, 3, 14, 8>>(71);
  const auto r = random_tensor<double, shape<2, 3, 5, 3>>(72);
  const auto y = random_tensor<double, shape<2, 14, 8, 3>>(73);
  const auto s = random_tensor<double, shape<2, 5, 3, 3>>(74);
  auto [l, d] = value_and_grad([&](const auto& x_) { return sum(adaptive_avg_pool2d<5, 3>(x_) * r); }, x);
  auto [l2, d2] = value_and_grad([&](const auto& y_) { return sum(adaptive_avg_pool2d<5, 3>(y_ * y_, nhwc) * s); }, y);
  const Tensor<double, shape<2, 3, 14, 8>> g = d;
  const Tensor<double, shape<2, 14, 8, 3>> g2 = d2;
  std::vector<ld> want(std::size_t(g.size()), 0.0L), want2(std::size_t(g2.size()), 0.0L);
  const auto start = [](index_t o, index_t n, index_t outs) { return o * n / outs; };
  const auto end = [](index_t o, index_t n, index_t outs) { return ((o + 1) * n + outs - 1) / outs; };
  for (index_t b = 0; b < 2; ++b)
    for (index_t c = 0; c < 3; ++c)
      for (index_t oh = 0; oh < 5; ++oh)
        for (index_t ow = 0; ow < 3; ++ow) {
          const index_t h0 = start(oh, 14, 5), h1 = end(oh, 14, 5), w0 = start(ow, 8, 3), w1 = end(ow, 8, 3);
          const ld count = ld((h1 - h0) * (w1 - w0));
          for (index_t i = h0; i < h1; ++i)
            for (index_t j = w0; j < w1; ++j) {
              want[std::size_t(((b * 3 + c) * 14 + i) * 8 + j)] += r(b, c, oh, ow) / count;
              want2[std::size_t(((b * 14 + i) * 8 + j) * 3 + c)] += s(b, oh, ow, c) / count * 2 * ld(y(b, i, j, c));
            }
        }
  CHECK(worst_error(g, want) < 1e-15);
  CHECK(worst_error(g2, want2) < 1e-15);
}
