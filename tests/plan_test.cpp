// plan_of: how many loop nests and buffers an assignment takes, decided from the type; and the
// values of expressions that must materialise part of themselves first.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

namespace {
Tensor<float, shape<8, 16>> x;
Tensor<float, shape<16>> gamma_, beta_;
Tensor<std::int64_t, shape<8>> labels;
} // namespace

template <class E>
constexpr bool one_nest_no_buffer = plan_of<E>::nests == 1 && plan_of<E>::buffers == 0;

// The composites each compile to a single loop nest per output row, with nothing materialised.
static_assert(one_nest_no_buffer<decltype(softmax(x))>);
static_assert(one_nest_no_buffer<decltype(log_softmax(x))>);
static_assert(one_nest_no_buffer<decltype(layer_norm(x, gamma_, beta_))>);
static_assert(one_nest_no_buffer<decltype(rms_norm(x, gamma_))>);
static_assert(one_nest_no_buffer<decltype(cross_entropy(x, labels))>);
static_assert(one_nest_no_buffer<decltype(exp(x) * 2.0f + x)>);
static_assert(one_nest_no_buffer<decltype(sum(x, axis<1>))>);
// A reduction broadcast along an axis it did not reduce varies along each row: it materialises.
static_assert(plan_of<decltype(x - mean(x, axis<0>, keepdims))>::nests == 2);
static_assert(plan_of<decltype(x - mean(x, axis<0>, keepdims))>::buffers == 1);
// So does a scan inside an expression, and a reduction of a materialised reduction chains.
static_assert(plan_of<decltype(cumsum(x, axis<1>) * 2.0f)>::buffers == 1);
static_assert(plan_of<decltype(sum(x - mean(x, axis<0>, keepdims), axis<1>))>::nests == 2);

TEST_CASE("materialised subexpressions give the same values", "[plan]") {
  rng g(21);
  x = normal<shape<8, 16>>(g);
  Tensor<float, shape<8, 16>> centered = x - mean(x, axis<0>, keepdims);
  Tensor<float, shape<8, 16>> scanned = cumsum(x, axis<1>) * 2.0f;
  Tensor<float, shape<8>> rowsum_of_centered = sum(x - mean(x, axis<0>, keepdims), axis<1>);
  for (int j = 0; j < 16; ++j) {
    double m = 0;
    for (int i = 0; i < 8; ++i) m += x(i, j);
    m /= 8;
    for (int i = 0; i < 8; ++i) CHECK(centered(i, j) == Approx(x(i, j) - m).margin(1e-6));
  }
  for (int i = 0; i < 8; ++i) {
    double run = 0, rs = 0;
    for (int j = 0; j < 16; ++j) {
      run += x(i, j);
      CHECK(scanned(i, j) == Approx(2 * run).margin(1e-5));
      rs += centered(i, j);
    }
    CHECK(rowsum_of_centered(i) == Approx(rs).margin(1e-5));
  }
}

TEST_CASE("a reduction read directly is computed where it is read", "[plan]") {
  rng g(22);
  x = normal<shape<8, 16>>(g);
  Tensor<float, shape<8>> s = sum(x, axis<1>) * 2.0f + max(x, axis<1>);
  for (int i = 0; i < 8; ++i) {
    double t = 0, m = -1e30;
    for (int j = 0; j < 16; ++j) t += x(i, j), m = std::max<double>(m, x(i, j));
    CHECK(s(i) == Approx(2 * t + m).margin(1e-5));
  }
}

TEST_CASE("views of a matmul: the matmul is buffered once and the views fold into its strides", "[plan]") {
  rng g(23);
  Tensor<float, shape<6, 8>> a = normal<shape<6, 8>>(g);
  Tensor<float, shape<8, 12>> w = normal<shape<8, 12>>(g);
  // The multi-head split of attention: [6, 12] -> [6, 3, 4] -> [3, 6, 4].
  auto heads = permute<1, 0, 2>(reshape<6, 3, 4>(matmul(a, w)));
  static_assert(plan_of<decltype(heads * 2.0f)>::buffers == 1);
  static_assert(arena_plan<decltype(heads * 2.0f)>::buffers == 1);
  Tensor<float, shape<3, 6, 4>> h = heads * 2.0f;
  Tensor<float, shape<6, 12>> full = matmul(a, w);
  bool ok = true;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 6; ++i)
      for (int d = 0; d < 4; ++d) ok = ok && h(p, i, d) == 2 * full(i, p * 4 + d);
  CHECK(ok);
}
