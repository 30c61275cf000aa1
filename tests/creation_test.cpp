// fill/zeros/ones/full, arange/linspace/eye, and the random generators through the tensor API.
#include <cmath>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

TEST_CASE("fill, zeros, ones, full", "[creation]") {
  auto z = zeros<double, shape<3, 2>>();
  for (double v : z) CHECK(v == 0);
  auto o = ones<int, shape<5>>();
  for (int v : o) CHECK(v == 1);
  auto f = full<float, shape<2, 2>>(2.5f);
  CHECK(f(1, 1) == 2.5f);
  fill(f, -1.0f);
  CHECK(f(0, 1) == -1.0f);
}

TEST_CASE("arange, linspace, eye", "[creation]") {
  Tensor<float, shape<5>> a = arange<float, 5>(2, 0.5f);
  for (int i = 0; i < 5; ++i) CHECK(a(i) == 2 + 0.5f * i);
  Tensor<int, shape<4>> ai = arange<int, 4>();
  CHECK(ai(3) == 3);
  Tensor<double, shape<11>> l = linspace<double, 11>(-1, 1);
  CHECK(l(0) == -1);
  CHECK(l(10) == 1); // exact end point
  CHECK(l(5) == Approx(0).margin(1e-15));
  CHECK(l(7) == Approx(0.4));
  Tensor<float, shape<3, 4>> e = eye<float, 3, 4>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) CHECK(e(i, j) == (i == j ? 1.0f : 0.0f));
  // Generators compose with everything else.
  Tensor<float, shape<3, 3>> m = eye<float, 3>() * 2.0f + 1.0f;
  CHECK(m(1, 1) == 3);
  CHECK(m(0, 1) == 1);
}

// A generator behind a view broadcast along the run (rope's sign [-1, 1] over the halves axis): read
// once per run (cpu/rows.hpp view_constant_along_run), directly and inside a function of it.
TEST_CASE("a generator broadcast along the rows is one value per row", "[creation]") {
  Tensor<float, shape<3, 2, 37>> x; // (37: whole vectors and a tail per row)
  for (index_t i = 0; i < x.size(); ++i) x.data()[i] = float(i % 11) - 4.5f;
  const auto sign = reshape<2, 1>(arange<float, 2>(-1, 2));
  // (x flipped along the halves: runs then go along the last axis only, as in rope)
  Tensor<float, shape<3, 2, 37>> y = flip<1>(x) * sign, z = flip<1>(x) + exp(sign) * 2.0f;
  using V = decltype(detail::as_node(x * sign));
  using S = std::remove_cvref_t<decltype(detail::get<1>(std::declval<V>().args))>;
  static_assert(cpu::view_constant_along_run<S, 2>() && !cpu::view_constant_along_run<S, 1>());
  for (index_t i = 0; i < 3; ++i)
    for (index_t p = 0; p < 2; ++p)
      for (index_t j = 0; j < 37; ++j) {
        const float s = p == 0 ? -1.0f : 1.0f;
        REQUIRE(y(i, p, j) == x(i, 1 - p, j) * s);
        REQUIRE(z(i, p, j) == x(i, 1 - p, j) + std::exp(s) * 2.0f);
      }
}

TEST_CASE("random draws depend only on seed, offset and index", "[random]") {
  using S = shape<1 << 18>; // large: evaluated by several threads
  rng g1(7), g2(7);
  Tensor<float, S> u1 = uniform<S>(g1, -2.0f, 3.0f);
  Tensor<float, S> u2 = uniform<S>(g2, -2.0f, 3.0f);
  CHECK(std::equal(u1.begin(), u1.end(), u2.begin()));
  // Element i is the scalar draw at counter i, whatever thread computed it.
  for (index_t i : {index_t(0), index_t(1), index_t(12345), index_t(S::size - 1)})
    CHECK(u1(i) == detail::uniform_at<float>(7, 0, i, -2.0f, 3.0f));
  // The generator advances: the next draw is a different, disjoint stream.
  Tensor<float, S> u3 = uniform<S>(g1, -2.0f, 3.0f);
  CHECK(!std::equal(u1.begin(), u1.end(), u3.begin()));
  CHECK(g1.offset() == 2 * S::size);
  float lo = 10, hi = -10;
  double mean = 0;
  for (float v : u1) lo = std::min(lo, v), hi = std::max(hi, v), mean += v;
  mean /= S::size;
  CHECK(lo >= -2.0f);
  CHECK(hi < 3.0f);
  CHECK(mean == Approx(0.5).margin(5 * 5 / std::sqrt(12.0 * S::size)));
}

TEST_CASE("normal and bernoulli statistics", "[random]") {
  using S = shape<512, 512>;
  rng g(99);
  Tensor<double, S> n = normal<S, double>(g, 1.0, 2.0);
  double m = 0, v = 0;
  for (double x : n) m += x;
  m /= S::size;
  for (double x : n) v += (x - m) * (x - m);
  v /= S::size;
  CHECK(m == Approx(1.0).margin(5 * 2 / std::sqrt(double(S::size))));
  CHECK(v == Approx(4.0).epsilon(0.02));
  Tensor<bool, S> b = bernoulli<S>(g, 0.3);
  Tensor<float> frac = mean(b);
  const double sigma = std::sqrt(0.3 * 0.7 / S::size);
  CHECK(frac() == Approx(0.3).margin(5 * sigma));
}
