// let(value, body): a value used several times is computed once, read from one buffer, and planned
// into one arena slot that lives until its last reader.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>

using namespace tenfold;

namespace {
Tensor<float, shape<8, 16>> x;
Tensor<float, shape<16, 16>> w, w2;
Tensor<float, shape<16>> bias;

// The naive product, in double.
template <class A, class B>
double dot_row_col(const A& a, const B& b, int i, int j) {
  double s = 0;
  for (int k = 0; k < 16; ++k) s += double(a(i, k)) * double(b(k, j));
  return s;
}
} // namespace

TEST_CASE("a bound matmul is computed once and read by every use", "[let]") {
  rng g(5);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  auto e = let(matmul(x, w), [](auto h) { return h * h + h; });
  // One buffer for h, the root nest reads it twice: two nests in all.
  static_assert(plan_of<decltype(e)>::buffers == 1);
  static_assert(plan_of<decltype(e)>::nests == 2);
  // Without let the tree holds two copies of the matmul.
  auto m = matmul(x, w);
  static_assert(plan_of<decltype(m * m + m)>::buffers == 3);
  Tensor<float, shape<8, 16>> y = e;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      const double h = dot_row_col(x, w, i, j);
      CHECK(y(i, j) == Approx(h * h + h).epsilon(1e-4).margin(1e-4));
    }
}

TEST_CASE("placeholders fold views and feed a matmul without a copy", "[let]") {
  rng g(6);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  w2 = normal<shape<16, 16>>(g);
  // h = relu(x w); y = h w2 + h: the placeholder is a matmul operand and a residual.
  auto e = let(relu(matmul(x, w)), [](auto h) { return matmul(h, w2) + h; });
  static_assert(plan_of<decltype(e)>::buffers == 1);
  Tensor<float, shape<8, 16>> y = e;
  Tensor<float, shape<8, 16>> h = relu(matmul(x, w));
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) CHECK(y(i, j) == Approx(dot_row_col(h, w2, i, j) + h(i, j)).epsilon(1e-4).margin(1e-4));
  // A transposed placeholder is a strided leaf.
  Tensor<float, shape<16, 8>> t = let(matmul(x, w), [](auto v) { return transpose(v) * 2.0f; });
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) CHECK(t(j, i) == Approx(2 * dot_row_col(x, w, i, j)).epsilon(1e-4).margin(1e-4));
}

TEST_CASE("layer_norm of a matmul computes the matmul once", "[let]") {
  rng g(7);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  bias = normal<shape<16>>(g);
  Tensor<float, shape<16>> gamma = ones<float, shape<16>>(), beta = zeros<float, shape<16>>();
  auto e = layer_norm(matmul(x, w) + bias, gamma, beta);
  static_assert(plan_of<decltype(e)>::buffers == 1);
  Tensor<float, shape<8, 16>> y = e;
  for (int i = 0; i < 8; ++i) {
    double v[16], m = 0, var = 0;
    for (int j = 0; j < 16; ++j) m += v[j] = dot_row_col(x, w, i, j) + bias(j);
    m /= 16;
    for (int j = 0; j < 16; ++j) var += (v[j] - m) * (v[j] - m);
    var /= 16;
    for (int j = 0; j < 16; ++j) CHECK(y(i, j) == Approx((v[j] - m) / std::sqrt(var + 1e-5)).margin(1e-4));
  }
}

// A helper that binds a value, called twice with the same types: each call's placeholders read their
// own value (lexical scoping), not the other call's.
template <class X, class W>
auto doubled_product(const X& a, const W& b) {
  return let(matmul(a, b), [](auto p) { return p + p; });
}

TEST_CASE("two lets from one helper with the same types stay apart", "[let]") {
  rng g(8);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  w2 = normal<shape<16, 16>>(g);
  auto e = doubled_product(x, w) - doubled_product(x, w2);
  static_assert(plan_of<decltype(e)>::buffers == 2);
  Tensor<float, shape<8, 16>> y = e;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j)
      CHECK(y(i, j) == Approx(2 * (dot_row_col(x, w, i, j) - dot_row_col(x, w2, i, j))).epsilon(1e-4).margin(1e-4));
}

TEST_CASE("nested lets, and a tensor bound in place", "[let]") {
  rng g(9);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  // A tensor needs no buffer; the inner value reads the outer placeholder.
  auto e = let(x, [](auto a) { return let(matmul(a, w), [a](auto b) { return a + b * b; }); });
  static_assert(plan_of<decltype(e)>::buffers == 1);
  Tensor<float, shape<8, 16>> y = e;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      const double b = dot_row_col(x, w, i, j);
      CHECK(y(i, j) == Approx(x(i, j) + b * b).epsilon(1e-4).margin(1e-4));
    }
}

TEST_CASE("a let buffer lives until its last reader in the arena", "[let][arena]") {
  rng g(10);
  x = normal<shape<8, 16>>(g);
  w = normal<shape<16, 16>>(g);
  w2 = normal<shape<16, 16>>(g);
  // h is read by the root, after the second matmul's buffer is made: both are alive together.
  auto e = let(matmul(x, w), [](auto h) { return sum(matmul(h, w2), axis<1>, keepdims) + h; });
  using P = arena_plan<decltype(e)>;
  static_assert(P::buffers == 2);
  static_assert(P::bytes == P::lower_bound && P::bytes == 2 * 8 * 16 * 4);
  alignas(64) static std::byte arena[P::bytes];
  Tensor<float, shape<8, 16>> y, ref = e;
  eval(y, e, arena);
  CHECK(std::equal(y.data(), y.data() + 8 * 16, ref.data()));
}
