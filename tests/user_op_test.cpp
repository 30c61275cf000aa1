// Ops defined outside the library (README, "Defining your own op"): entries written as a user writes
// them, outside namespace tenfold, run through the same generated checks as the op table's entries
// (op_test_support.hpp, reduce_test_support.hpp) and through tenfold::apply / tenfold::reduce directly:
// broadcasting, numbers in any position, integer operands, fusion into a larger expression. One lean file:
// float32 only, the table's own tests cover the evaluator's paths per type.
#include "reduce_test_support.hpp"

// ---- README: the block between readme:begin and readme:end is README.md's "Defining your own op" example,
// character for character; the test docs:readme_user_op fails when the two differ. Edit both together.
// readme:begin
#include <cmath>
#include <tenfold/tenfold.hpp>

// softsign(x) = x / (1 + |x|), an elementwise op with one operand. The base says its kind (unary, binary,
// ternary or reduction) and how it types its result: `floating` turns integer operands into float.
struct softsign : tenfold::ops::unary<softsign, tenfold::ops::category::floating> {
  static constexpr std::string_view name = "softsign"; // required: for errors and traces
  // Required: one element, on the host and in CUDA kernels (TENFOLD_HD).
  template <class T> TENFOLD_HD static T scalar(T x) {
    return std::fabs(x) == INFINITY ? std::copysign(T(1), x) : x / (T(1) + std::fabs(x));
  }
  // Optional: a batch of elements (xsimd). Without it the CPU loops call scalar.
  template <class B> static B simd(const B& x) {
    return xsimd::select(xsimd::isinf(x), xsimd::copysign(B(1), x), x / (B(1) + xsimd::abs(x)));
  }
  // Optional: what the library's generated op tests need (tests/op_test_support.hpp).
  static long double reference(long double x) { return std::isinf(x) ? std::copysign(1.0L, x) : x / (1 + std::fabs(x)); }
  static constexpr tenfold::ops::test_spec test{.lo = -100, .hi = 100, .ulps = 2};
};

// The sum of squares, a reduction: integer elements sum in int64 (`wide`), as tenfold::sum does.
struct sum_squares : tenfold::ops::reduction<sum_squares, tenfold::ops::reduce_result::wide> {
  static constexpr std::string_view name = "sum_squares";
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, tenfold::index_t) { return acc + A(x) * A(x); }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a + b; }        // two partial results
  template <class A> TENFOLD_HD static A finalize(A a, tenfold::index_t) { return a; }
  template <class B> static B simd_combine(const B& acc, const B& x) { return xsimd::fma(x, x, acc); } // optional,
  template <class B> static B simd_merge(const B& a, const B& b) { return a + b; }                    // together
};

// Both fuse like the library's own ops: the softmax below is one loop nest per row.
template <class X>
auto squashed_softmax(const X& x) {
  return tenfold::softmax(tenfold::apply<softsign>(x) * 4.0f, tenfold::axis<-1>);
}
template <class X>
auto row_norms(const X& x) {
  return tenfold::sqrt(tenfold::reduce<sum_squares>(x, tenfold::axis<-1>, tenfold::keepdims));
}
// readme:end

// A binary op without a simd function (the CPU loops call scalar), with what the generated tests need.
struct hypotenuse : tenfold::ops::binary<hypotenuse, tenfold::ops::category::floating> {
  static constexpr std::string_view name = "hypotenuse";
  template <class T> TENFOLD_HD static T scalar(T a, T b) { return std::hypot(a, b); }
  static long double reference(long double a, long double b) { return std::hypot(a, b); }
  static constexpr tenfold::ops::test_spec test{.lo = -1e3, .hi = 1e3, .ulps = 1};
};

// sum_squares as the generated reduction tests need it: a reference and a test spec (a derived entry).
struct sum_squares_tested : sum_squares {
  static long double reference(const long double* x, tenfold::index_t n) {
    long double s = 0;
    for (tenfold::index_t i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
  }
  static constexpr tenfold::ops::test_spec test{.lo = -1, .hi = 1, .ulps = 4};
};

using namespace tenfold;
using namespace tenfold::test;

// What the concepts of ops/entry.hpp say of them (and of entries that are not).
namespace {
struct no_scalar : ops::unary<no_scalar> {
  static constexpr std::string_view name = "no_scalar";
};
struct scalar_simd : ops::unary<scalar_simd> { // simd written for scalars
  static constexpr std::string_view name = "scalar_simd";
  template <class T> TENFOLD_HD static T scalar(T x) { return x; }
  static float simd(float x) { return x; }
};
struct float_simd : ops::unary<float_simd> { // simd for float batches only: double runs scalar
  static constexpr std::string_view name = "float_simd";
  template <class T> TENFOLD_HD static T scalar(T x) { return x + T(1); }
  template <class B> requires std::same_as<typename B::value_type, float> static B simd(const B& x) { return x + B(1); }
};
struct unnamed : ops::unary<unnamed> {
  template <class T> TENFOLD_HD static T scalar(T x) { return x; }
};
struct merge_without_combine : ops::reduction<merge_without_combine, ops::reduce_result::same> { // simd_merge alone
  static constexpr std::string_view name = "merge_without_combine";
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, index_t) { return acc + A(x); }
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a + b; }
  template <class A> TENFOLD_HD static A finalize(A a, index_t) { return a; }
  template <class B> static B simd_merge(const B& a, const B& b) { return a + b; }
};
} // namespace
static_assert(ops::elementwise_entry_for<softsign, float> && ops::elementwise_entry_for<softsign, double>);
static_assert(ops::elementwise_entry_for<hypotenuse, float, float> && !ops::elementwise_entry_for<hypotenuse, float>);
static_assert(ops::reduction_entry_for<sum_squares, float> && ops::reduction_entry_for<sum_squares, std::int32_t>);
// The table's own entries also need a reference, a test spec and a bench spec (ops/table.hpp).
static_assert(!ops::table_entry<softsign> && !ops::table_entry<sum_squares_tested> && !ops::table_entry<sum_squares>);
static_assert(ops::table_entry<ops::exp> && ops::table_entry<ops::where> && ops::table_entry<ops::argmax>);
static_assert(ops::elementwise_entry<no_scalar> && !ops::elementwise_entry_for<no_scalar, float>);
static_assert(!ops::elementwise_entry_for<scalar_simd, float>);
static_assert(ops::elementwise_entry_for<float_simd, double>);
static_assert(!ops::elementwise_entry<unnamed> && !ops::reduction_entry<softsign> && !ops::elementwise_entry<sum_squares>);
static_assert(ops::reduction_entry<merge_without_combine> && !ops::reduction_entry_for<merge_without_combine, float>);

TEST_CASE("ops defined outside the library: the table's generated checks", "[ops][user]") {
  contiguous_layouts<softsign, float>();
  view_layouts<softsign, float>();
  edge_case<softsign, float>();
  contiguous_layouts<hypotenuse, float>();
  view_layouts<hypotenuse, float>();
  reduction_cases<sum_squares_tested, float>();
  axis_subsets<sum_squares_tested, true>();
}

TEST_CASE("apply and reduce: broadcasting, numbers, integers, fusion", "[ops][user]") {
  Tensor<float, shape<4, 8>> x;
  Tensor<float, shape<8>> row;
  Tensor<std::int32_t, shape<4, 1>> col;
  for (index_t i = 0; i < 4; ++i) {
    col(i, 0) = std::int32_t(i) - 2;
    for (index_t j = 0; j < 8; ++j) x(i, j) = 0.37f * float(i * 8 + j) - 5.0f;
  }
  for (index_t j = 0; j < 8; ++j) row(j) = 0.5f * float(j) - 2.0f;
  auto ss = [](double v) { return v / (1 + std::fabs(v)); };

  // Broadcast [4,8] with [8] and [4,1] (int32, which promotes with float as the library's ops do).
  Tensor<float, shape<4, 8>> h = apply<hypotenuse>(x, row), hc = apply<hypotenuse>(col, x);
  // Numbers in either position; a float number makes an int32 tensor float (`floating` as well).
  Tensor<float, shape<4, 8>> h1 = apply<hypotenuse>(3.0f, x), h2 = apply<hypotenuse>(x, 4);
  STATIC_REQUIRE(std::is_same_v<decltype(apply<hypotenuse>(col, 2.5f))::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<decltype(apply<softsign>(col))::value_type, float>);
  Tensor<float, shape<4, 1>> sc = apply<softsign>(col);
  for (index_t i = 0; i < 4; ++i) {
    CHECK(sc(i, 0) == Approx(ss(col(i, 0))));
    for (index_t j = 0; j < 8; ++j) {
      CHECK(h(i, j) == Approx(std::hypot(double(x(i, j)), double(row(j)))));
      CHECK(hc(i, j) == Approx(std::hypot(double(col(i, 0)), double(x(i, j)))));
      CHECK(h1(i, j) == Approx(std::hypot(3.0, double(x(i, j)))));
      CHECK(h2(i, j) == Approx(std::hypot(double(x(i, j)), 4.0)));
    }
  }

  // Fusion: a user op inside softmax is one loop nest per row, as exp would be; the reduction feeds an
  // elementwise consumer (and a broadcast back) like sum does.
  using fused = decltype(squashed_softmax(x));
  STATIC_REQUIRE(plan_of<fused>::nests == plan_of<decltype(softmax(tanh(x) * 4.0f, axis<-1>))>::nests);
  STATIC_REQUIRE(plan_of<fused>::buffers == 0);
  Tensor<float, shape<4, 8>> p = squashed_softmax(x), q = x / row_norms(x);
  Tensor<float, shape<4, 1>> n = row_norms(x);
  Tensor<float, shape<>> all = reduce<sum_squares>(x);
  Tensor<float, shape<8>> cols = reduce<sum_squares>(x, axis<0>);
  Tensor<std::int64_t, shape<>> icol = reduce<sum_squares>(col); // integers sum in int64
  double total = 0;
  for (index_t i = 0; i < 4; ++i) {
    double m = -INFINITY, z = 0, s2 = 0;
    for (index_t j = 0; j < 8; ++j) m = std::max(m, 4 * ss(x(i, j))), s2 += double(x(i, j)) * x(i, j);
    for (index_t j = 0; j < 8; ++j) z += std::exp(4 * ss(x(i, j)) - m);
    CHECK(n(i, 0) == Approx(std::sqrt(s2)));
    total += s2;
    for (index_t j = 0; j < 8; ++j) {
      CHECK(p(i, j) == Approx(std::exp(4 * ss(x(i, j)) - m) / z));
      CHECK(q(i, j) == Approx(x(i, j) / std::sqrt(s2)));
    }
  }
  for (index_t j = 0; j < 8; ++j) {
    double c = 0;
    for (index_t i = 0; i < 4; ++i) c += double(x(i, j)) * x(i, j);
    CHECK(cols(j) == Approx(c));
  }
  CHECK(all() == Approx(total));
  CHECK(icol() == 4 + 1 + 0 + 1);

  // A simd for float batches only: double operands run the scalar function, with the same results.
  Tensor<double, shape<9>> d;
  for (index_t i = 0; i < 9; ++i) d(i) = double(i) / 4;
  Tensor<double, shape<9>> d1 = apply<float_simd>(d);
  Tensor<float, shape<9>> f1 = apply<float_simd>(cast<float>(d));
  for (index_t i = 0; i < 9; ++i) CHECK((d1(i) == d(i) + 1 && f1(i) == float(d(i)) + 1));
}
