// Composites are plain expressions; these tests check their values against long-double references
// written out independently, including the numerically hard cases.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;
using ld = long double;

namespace {
template <class T, class S>
ld at(const Tensor<T, S>& t, int i, int j) { return static_cast<ld>(t(i, j)); }
} // namespace

TEST_CASE("softmax and log_softmax are stable near ±1e4 and exact in ±inf cases", "[composites]") {
  using S = shape<4, 9>;
  rng g(5);
  Tensor<float, S> x = normal<S>(g, 0.0f, 1e4f);
  x(2, 4) = std::numeric_limits<float>::infinity(); // one +inf: softmax is NaN there and in its row
  x(3, 1) = -std::numeric_limits<float>::infinity();  // -inf: probability exactly 0
  Tensor<float, S> p = softmax(x);
  Tensor<float, S> lp = log_softmax(x, axis<1>);
  for (int i = 0; i < 4; ++i) {
    ld m = -INFINITY, z = 0;
    for (int j = 0; j < 9; ++j) m = std::max(m, at(x, i, j));
    for (int j = 0; j < 9; ++j) z += std::exp(at(x, i, j) - m);
    for (int j = 0; j < 9; ++j) {
      const ld want = std::exp(at(x, i, j) - m) / z, want_log = at(x, i, j) - m - std::log(z);
      if (std::isnan(want)) {
        CHECK(std::isnan(p(i, j)));
      } else {
        CHECK(std::isfinite(p(i, j)));
        CHECK(p(i, j) == Approx(double(want)).margin(1e-7));
        if (std::isfinite(want_log)) CHECK(lp(i, j) == Approx(double(want_log)).epsilon(1e-6).margin(1e-3));
        else CHECK(lp(i, j) == -std::numeric_limits<float>::infinity());
      }
    }
  }
  CHECK(p(3, 1) == 0.0f);
}

TEST_CASE("layer_norm and rms_norm", "[composites]") {
  using S = shape<3, 64>;
  rng g(6);
  // A common offset 1000x the spread: a one-pass E[x²] - E[x]² variance would be ~10% off here (ulp of
  // 1e4 against a variance of 1e-2); the two-pass form is limited only by float's rounding of the mean.
  Tensor<float, S> x = normal<S>(g, 100.0f, 0.1f);
  Tensor<float, shape<64>> gamma = uniform<shape<64>>(g, 0.5f, 1.5f), beta = uniform<shape<64>>(g, -1.0f, 1.0f);
  Tensor<float, S> y = layer_norm(x, gamma, beta, 1e-5f);
  Tensor<float, S> r = rms_norm(x, gamma);
  for (int i = 0; i < 3; ++i) {
    ld m = 0, v = 0, ms = 0;
    for (int j = 0; j < 64; ++j) m += at(x, i, j), ms += at(x, i, j) * at(x, i, j);
    m /= 64, ms /= 64;
    for (int j = 0; j < 64; ++j) v += (at(x, i, j) - m) * (at(x, i, j) - m);
    v /= 64;
    for (int j = 0; j < 64; ++j) {
      const ld want = (at(x, i, j) - m) / std::sqrt(v + 1e-5L) * gamma(j) + beta(j);
      CHECK(y(i, j) == Approx(double(want)).margin(2e-3));
      CHECK(r(i, j) == Approx(double(at(x, i, j) / std::sqrt(ms + 1e-6L) * gamma(j))).epsilon(1e-5));
    }
  }
}

TEST_CASE("cross_entropy, nll_loss and the regression losses", "[composites]") {
  Tensor<float, shape<3, 4>> logits{1, 2, 3, 4, 1e4f, -1e4f, 0, 0, -5, -5, -5, -5};
  Tensor<std::int64_t, shape<3>> labels{3, 0, 2};
  Tensor<float> ce = cross_entropy(logits, labels);
  ld want = 0;
  for (int i = 0; i < 3; ++i) {
    ld m = -INFINITY, z = 0;
    for (int j = 0; j < 4; ++j) m = std::max(m, at(logits, i, j));
    for (int j = 0; j < 4; ++j) z += std::exp(at(logits, i, j) - m);
    want += m + std::log(z) - at(logits, i, int(labels(i)));
  }
  CHECK(ce() == Approx(double(want / 3)).epsilon(1e-6));
  Tensor<float, shape<3>> a{1, 2, 3}, b{2, 2, 5};
  CHECK(Tensor<float>(mse_loss(a, b))() == Approx(5.0 / 3));
  CHECK(Tensor<float>(l1_loss(a, b))() == Approx(1.0));
  Tensor<float, shape<2, 2>> q{0.25f, 0.75f, 0.5f, 0.5f}, pr{0.5f, 0.5f, 1.0f, 0.0f};
  Tensor<float> kl = kl_div(log(q), pr);
  const double want_kl = (0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.75) + 1.0 * std::log(1.0 / 0.5)) / 2;
  CHECK(kl() == Approx(want_kl).epsilon(1e-6));
}

TEST_CASE("l2_normalize and dropout", "[composites]") {
  Tensor<float, shape<2, 2>> x{3, 4, 0, 0};
  Tensor<float, shape<2, 2>> n = l2_normalize(x);
  CHECK(n(0, 0) == Approx(0.6));
  CHECK(n(0, 1) == Approx(0.8));
  CHECK(n(1, 0) == 0.0f); // a zero row stays zero instead of becoming NaN
  using S = shape<256, 256>;
  Tensor<float, S> ones_ = ones<float, S>();
  rng g(8);
  Tensor<float, S> d = dropout(ones_, 0.25f, g);
  long kept = 0;
  for (float v : d) {
    CHECK((v == 0.0f || v == Approx(1 / 0.75f)));
    kept += v != 0;
  }
  CHECK(double(kept) / S::size == Approx(0.75).margin(5 * std::sqrt(0.75 * 0.25 / S::size)));
}

TEST_CASE("composites of temporaries are safe to keep", "[composites]") {
  auto make = [] { return Tensor<float, shape<2, 3>>{1, 2, 3, 1, 1, 1}; };
  auto s = softmax(make()); // owns its operand
  Tensor<float, shape<2, 3>> p = s;
  CHECK(p(1, 0) == Approx(1.0 / 3));
}

TEST_CASE("batch_norm in inference form, NCHW and NHWC", "[composites]") {
  rng g(9);
  Tensor<float, shape<2, 3, 4, 5>> x = normal<shape<2, 3, 4, 5>>(g, 1.0f, 2.0f);
  Tensor<float, shape<3>> m = normal<shape<3>>(g), v = uniform<shape<3>>(g, 0.5f, 2.0f);
  Tensor<float, shape<3>> ga = uniform<shape<3>>(g, 0.5f, 1.5f), be = normal<shape<3>>(g);
  Tensor<float, shape<2, 3, 4, 5>> y = batch_norm(x, m, v, ga, be);
  static_assert(plan_of<decltype(batch_norm(x, m, v, ga, be))>::nests == 1);
  Tensor<float, shape<2, 4, 5, 3>> xl = permute<0, 2, 3, 1>(x);
  Tensor<float, shape<2, 4, 5, 3>> yl = batch_norm<-1>(xl, m, v, ga, be, 1e-3f);
  int bad = 0;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w) {
          const ld xv = x(n, c, h, w);
          const ld want = (xv - ld(m(c))) / std::sqrt(ld(v(c)) + 1e-5L) * ga(c) + be(c);
          const ld want_l = (xv - ld(m(c))) / std::sqrt(ld(v(c)) + 1e-3L) * ga(c) + be(c);
          bad += !(std::abs(y(n, c, h, w) - want) <= 1e-5 * (1 + std::abs(want)));
          bad += !(std::abs(yl(n, h, w, c) - want_l) <= 1e-5 * (1 + std::abs(want_l)));
        }
  CHECK(bad == 0);
}

TEST_CASE("logical ops take a comparison beside a comparison of a row's reduction (row path)", "[composites]") {
  // In a row kernel eq(x, 0) is a mask while eq(sum(x), s) comes from the row's reduction as 0/1 numbers:
  // logical_and/or/xor take the two kinds together (this did not compile before).
  using S = shape<6, 7>;
  Tensor<float, S> x;
  for (index_t i = 0; i < 6; ++i)
    for (index_t j = 0; j < 7; ++j) x(i, j) = float((i * 7 + j) % (i + 2)); // rows with other sums
  Tensor<float, S> row_sum_x = broadcast_to<S>(sum(x, axis<1>, keepdims));
  const float s = row_sum_x(2, 0); // rows whose sum is this one's
  Tensor<float, S> a = where(logical_and(eq(x, 0.0f), eq(sum(x, axis<1>, keepdims), s)), 1.0f, 2.0f);
  Tensor<float, S> o = where(logical_or(eq(x, 0.0f), eq(sum(x, axis<1>, keepdims), s)), 1.0f, 2.0f);
  Tensor<float, S> e = where(logical_xor(eq(x, 0.0f), eq(sum(x, axis<1>, keepdims), s)), 1.0f, 2.0f);
  int both = 0;
  for (index_t i = 0; i < 6; ++i)
    for (index_t j = 0; j < 7; ++j) {
      const bool p = x(i, j) == 0, q = row_sum_x(i, j) == s;
      both += p && q;
      CHECK(a(i, j) == (p && q ? 1.0f : 2.0f));
      CHECK(o(i, j) == (p || q ? 1.0f : 2.0f));
      CHECK(e(i, j) == (p != q ? 1.0f : 2.0f));
    }
  CHECK(both > 0);
}
