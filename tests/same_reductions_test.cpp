// Repeated reductions (plan/same_reductions.hpp): which reductions of a nest are of one kind is decided
// from the types; a row computes each kind once when the launch finds their operands equal, and every
// occurrence when they only look alike. Counted with a reduction whose combine counts its calls, and
// checked against double loops.
#include <atomic>
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include <tenfold/plan/row_slots.hpp> // (the CUDA kernels' numbering; plain C++)
#include <tenfold/tenfold.hpp>

using namespace tenfold;

namespace {
std::atomic<long> combines{0};

// A plain sum whose scalar combine counts its calls (no SIMD path, so every element goes through it).
struct counted_sum : ops::reduction<counted_sum, ops::reduce_result::same> {
  static constexpr std::string_view name = "counted_sum";
  template <class A>
  static constexpr A identity() {
    return A(0);
  }
  template <class A, class X>
  static A combine(A acc, X x, index_t) {
    combines.fetch_add(1, std::memory_order_relaxed);
    return acc + A(x);
  }
  template <class A>
  static A merge(A a, A b) {
    return a + b;
  }
  template <class A>
  static A finalize(A a, index_t) {
    return a;
  }
};
template <class X>
auto row_sum(X&& x) {
  return reduce<counted_sum>(std::forward<X>(x), axis<-1>, keepdims);
}

constexpr index_t rows = 24, cols = 517; // a SIMD tail; enough rows for the thread pool
using S = shape<rows, cols>;

double row_total(const Tensor<float, S>& t, index_t i) {
  double s = 0;
  for (index_t j = 0; j < cols; ++j) s += t(i, j);
  return s;
}
template <class Want>
int wrong(const Tensor<float, S>& got, Want&& want) {
  int bad = 0;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      const double w = want(i, j);
      bad += !(std::abs(got(i, j) - w) <= 1e-4 * (1 + std::abs(w)));
    }
  return bad;
}
} // namespace

// The kinds, from the types alone.
namespace {
using T = Tensor<float, S>;
using sum_t = decltype(row_sum(std::declval<const T&>()));
using twice_t = decltype(std::declval<const T&>() - row_sum(std::declval<const T&>()) + row_sum(std::declval<const T&>()));
using once_t = decltype(std::declval<const T&>() - row_sum(std::declval<const T&>()));
using ln_t = decltype(layer_norm(std::declval<const T&>(), std::declval<const Tensor<float, shape<cols>>&>(),
                                 std::declval<const Tensor<float, shape<cols>>&>()));
using log_softmax_t = decltype(log_softmax(std::declval<const T&>()));
} // namespace
static_assert(!plan::repeated_reductions_v<detail::node_t<once_t>>);
static_assert(plan::repeated_reductions_v<detail::node_t<twice_t>>);
static_assert(plan::nest_reductions<detail::node_t<twice_t>>::first == std::array<int, 2>{0, 0});
// layer_norm: mean(x) in the tail and inside the variance, the variance once.
static_assert(plan::repeated_reductions_v<detail::node_t<ln_t>>);
// log_softmax's two halves run one accumulation: one kind, two exact types (they finalize differently).
static_assert(plan::nest_reductions<detail::node_t<log_softmax_t>>::first == std::array<int, 2>{0, 0});
static_assert(plan::nest_reductions<detail::node_t<log_softmax_t>>::first_exact == std::array<int, 2>{0, 1});

// CUDA's row slots (plan/row_slots.hpp), numbered in post-order: softmax = exp(x - max) * 1 / sum(exp(x - max))
// holds max (slot 0), max again inside the sum's operand (slot 1) and the sum (slot 2); slot 1 reads slot 0.
namespace {
constexpr unsigned along_rows = 1u << 1;
using softmax_n = detail::node_t<decltype(softmax(std::declval<const T&>()))>;
using flipped_n = detail::node_t<decltype(std::declval<const T&>() - row_sum(std::declval<const T&>()) +
                                          flip<0>(row_sum(std::declval<const T&>())))>;
} // namespace
static_assert(plan::row_slot_sharing<softmax_n, along_rows>::share == std::array<int, 3>{0, 0, 2});
static_assert(plan::row_slot_sharing<detail::node_t<twice_t>, along_rows>::share == std::array<int, 2>{0, 0});
// log_softmax's halves are one kind but two types: each keeps its slot (a slot holds a finalized value).
static_assert(plan::row_slot_sharing<detail::node_t<log_softmax_t>, along_rows>::share == std::array<int, 2>{0, 1});
// layer_norm: some slot reads another's.
static_assert(plan::row_slot_sharing<detail::node_t<ln_t>, along_rows>::any);
// The same reduction read at another row (flipped): its own slot.
static_assert(plan::row_slot_sharing<flipped_n, along_rows>::share == std::array<int, 2>{0, 1});

TEST_CASE("a reduction read twice in one row is computed once", "[same_reductions]") {
  rng g(5);
  Tensor<float, S> x = normal<S>(g, 0.5f, 2.0f);
  combines = 0;
  Tensor<float, S> y = x - row_sum(x) + row_sum(x) * 0.5f;
  CHECK(combines.load() == rows * cols);
  CHECK(wrong(y, [&](index_t i, index_t j) { return x(i, j) - 0.5 * row_total(x, i); }) == 0);
}

TEST_CASE("a reduction nested in another's operand shares the row's result", "[same_reductions]") {
  rng g(6);
  Tensor<float, S> x = normal<S>(g, -1.0f, 1.5f);
  // As layer_norm's variance reads x - mean(x): the inner sum is the outer row's.
  combines = 0;
  Tensor<float, S> y = (x - row_sum(x) * (1.0f / cols)) * row_sum(square(x - row_sum(x) * (1.0f / cols))) * (1.0f / cols);
  CHECK(combines.load() == 2 * rows * cols); // sum(x) once, the sum of squares once
  CHECK(wrong(y, [&](index_t i, index_t j) {
          const double m = row_total(x, i) / cols;
          double v = 0;
          for (index_t k = 0; k < cols; ++k) v += (x(i, k) - m) * (x(i, k) - m);
          return (x(i, j) - m) * v / cols;
        }) == 0);
}

TEST_CASE("one reduction read at two indices in a row is computed at each", "[same_reductions]") {
  rng g(9);
  Tensor<float, S> x = normal<S>(g, 0.0f, 1.0f);
  combines = 0;
  Tensor<float, S> y = x - row_sum(x) + flip<0>(row_sum(x)); // row i reads the sums of rows i and R - 1 - i
  CHECK(combines.load() == 2 * rows * cols);
  CHECK(wrong(y, [&](index_t i, index_t j) { return x(i, j) - row_total(x, i) + row_total(x, rows - 1 - i); }) == 0);
}

TEST_CASE("look-alike reductions over other tensors are each computed", "[same_reductions]") {
  rng g(7);
  Tensor<float, S> a = normal<S>(g, 1.0f, 2.0f), b = normal<S>(g, -3.0f, 0.5f);
  combines = 0;
  Tensor<float, S> y = (a - row_sum(a)) * (b - row_sum(b)); // one type, other operands
  CHECK(combines.load() == 2 * rows * cols);
  CHECK(wrong(y, [&](index_t i, index_t j) { return (a(i, j) - row_total(a, i)) * (b(i, j) - row_total(b, i)); }) == 0);
  // Look-alikes that differ in a number, not a pointer.
  combines = 0;
  Tensor<float, S> z = row_sum(a * 2.0f) - row_sum(a * 3.0f) + a;
  CHECK(combines.load() == 2 * rows * cols);
  CHECK(wrong(z, [&](index_t i, index_t j) { return -row_total(a, i) + a(i, j); }) == 0);
  // The same operands as one and as two: softmax of each of two alike tensors.
  Tensor<float, S> p = softmax(a) + softmax(b), q = softmax(a);
  Tensor<float, S> r = softmax(b);
  CHECK(wrong(p, [&](index_t i, index_t j) { return double(q(i, j)) + r(i, j); }) == 0);
}

TEST_CASE("nothing is shared across rows, evaluations or an assignment in place", "[same_reductions]") {
  rng g(8);
  Tensor<float, S> x = normal<S>(g, 0.0f, 1.0f);
  auto want = [](const Tensor<float, S>& t) {
    std::vector<double> s(rows);
    for (index_t i = 0; i < rows; ++i) s[i] = row_total(t, i);
    return [&t, s](index_t i, index_t j) { return t(i, j) * s[i] - s[i]; };
  };
  Tensor<float, S> y = x * row_sum(x) - row_sum(x);
  CHECK(wrong(y, want(x)) == 0);
  x = x * 2.0f + 1.0f;
  y = x * row_sum(x) - row_sum(x);
  CHECK(wrong(y, want(x)) == 0);
  const Tensor<float, S> before = x;
  x = x * row_sum(x) - row_sum(x); // every reduction of a row is taken before its stores
  CHECK(wrong(x, want(before)) == 0);
}
