// Every elementwise op of the table on the device against the CPU evaluator, on the same random
// inputs drawn from the entry's test domain, at an odd shape (ragged vector tails). (Views, which take
// the indexed kernel, are in cuda_rows_test.cu: one op each is enough there, the op code is the same.)
// Both backends are within the entry's tolerance of the long-double reference, so they must be within
// twice that of each other (plus a few ulps for the device's libm, which is not glibc's).
#include "cuda_test_support.hpp"

#include <string>

using namespace tenfold;

namespace {
using S = shape<37, 129>; // 4773 elements: not a multiple of any vector width

template <class Op>
double domain_lo(int k) {
  constexpr ops::test_spec s = Op::test;
  return (k == Op::arity - 1 && Op::arity > 1 && s.hi2 > s.lo2) ? s.lo2 : s.lo;
}
template <class Op>
double domain_hi(int k) {
  constexpr ops::test_spec s = Op::test;
  return (k == Op::arity - 1 && Op::arity > 1 && s.hi2 > s.lo2) ? s.hi2 : s.hi;
}

// (A member type, not an alias that ignores its parameter: nvcc folds those and loses the pack.)
template <std::size_t>
struct f32 {
  using type = float;
};

template <std::size_t>
struct i32 {
  using type = std::int32_t;
};

// Distance of two results in ulps, or none where they are within twice the entry's absolute slack of
// each other: the table's tolerance is "within ulps OR within abs_tol of the reference" (the CPU test's
// rule, tests/op_test_support.hpp), for results where cancellation makes ulps meaningless (lerp,
// gelu_tanh's 1 + tanh(.)), so two backends that each meet it are within twice that apart.
template <class Op>
double distance(double a, double b) {
  if (Op::test.abs_tol > 0 && std::fabs(a - b) <= 2 * Op::test.abs_tol) return 0;
  return test::ulps_apart<float>(a, b);
}

template <class Op, std::size_t... K>
void check_op(std::index_sequence<K...>) {
  const Tensor<float, S> in[] = {test::random_tensor<float, S>(domain_lo<Op>(int(K)), domain_hi<Op>(int(K)), 7 + unsigned(K))...};
  cuda::Tensor<float, S> dev[] = {cuda::to_device(in[K])...};
  using R = typename Op::template result_type<typename f32<K>::type...>;
  const Tensor<R, S> cpu = detail::map_of<Op>(detail::as_node(in[K])...);
  cuda::Tensor<R, S> out;
  out = detail::map_of<Op>(dev[K].expr()...);
  const Tensor<R, S> got = cuda::to_host(out);
  const double tol = 2 * Op::test.ulps + 4;
  double worst = 0;
  for (index_t i = 0; i < S::size; ++i) worst = std::max(worst, distance<Op>(double(cpu.data()[i]), double(got.data()[i])));
  INFO(std::string(Op::name) << ": worst " << worst << " ulps, tolerance " << tol);
  CHECK(worst <= tol);
}

template <class... Op>
void check_all(ops::op_list<Op...>) {
  (check_op<Op>(std::make_index_sequence<Op::arity>{}), ...);
}

// Integer entries in int32, where both backends run the same scalar function: equal results. The first
// elements hold the edge cases (INT_MIN // -1, x // 0, shifts by a negative count or past the width).
template <class Op, std::size_t... K>
void check_int_op(std::index_sequence<K...>) {
  using I = std::int32_t;
  Tensor<I, S> in[] = {test::random_tensor<I, S>(domain_lo<Op>(int(K)), domain_hi<Op>(int(K)), 11 + unsigned(K))...};
  constexpr I edges[][2] = {{std::numeric_limits<I>::min(), -1}, {std::numeric_limits<I>::max(), 0}, {-7, 40}, {-7, -1}};
  for (int e = 0; e < 4; ++e)
    for (std::size_t k = 0; k < sizeof...(K); ++k) in[k].data()[e] = edges[e][k];
  cuda::Tensor<I, S> dev[] = {cuda::to_device(in[K])...};
  using RI = typename Op::template result_type<typename i32<K>::type...>;
  const Tensor<RI, S> cpu = detail::map_of<Op>(detail::as_node(in[K])...);
  cuda::Tensor<RI, S> out;
  out = detail::map_of<Op>(dev[K].expr()...);
  const Tensor<RI, S> got = cuda::to_host(out);
  index_t differ = 0;
  for (index_t i = 0; i < S::size; ++i) differ += cpu.data()[i] != got.data()[i];
  INFO(std::string(Op::name) << " int32: " << differ << " elements differ");
  CHECK(differ == 0);
}
template <class... Op>
void check_all_int(ops::op_list<Op...>) {
  (check_int_op<Op>(std::make_index_sequence<Op::arity>{}), ...);
}
} // namespace

TEST_CASE("unary ops on the device match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  check_all(ops::unary_ops{});
}
TEST_CASE("binary and ternary ops on the device match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  check_all(ops::binary_ops{});
  check_all(ops::ternary_ops{});
}
TEST_CASE("integer ops on the device match the CPU, in int32: bitwise, shifts, floor_divide, remainder") {
  TENFOLD_REQUIRE_DEVICE();
  check_all_int(ops::bitwise_ops{});
  check_all_int(ops::op_list<ops::floor_divide, ops::remainder, ops::add, ops::mul>{});
}
TEST_CASE("a fused chain with a broadcast bias, in bf16, matches the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using B = shape<64, 96>;
  const Tensor<bf16, B> x = test::random_tensor<bf16, B>(-3, 3, 1);
  const Tensor<float, shape<96>> b = test::random_tensor<float, shape<96>>(-1, 1, 2);
  const Tensor<bf16, B> cpu = cast<bf16>(gelu(x + b) * 0.5f - tanh(x));
  const auto dx = cuda::to_device(x);
  const auto db = cuda::to_device(b);
  cuda::Tensor<bf16, B> out;
  out = cast<bf16>(gelu(dx.expr() + db.expr()) * 0.5f - tanh(dx.expr()));
  const Tensor<bf16, B> got = cuda::to_host(out);
  int off = 0;
  for (index_t i = 0; i < B::size; ++i) off += test::ulps_apart<bf16>(float(cpu.data()[i]), float(got.data()[i])) > 1;
  CHECK(off == 0); // computed in float on both, rounded once to bf16: at most one ulp apart
}
