// The op table on element types other than float32/float64: int32 operands for the arithmetic entries
// (exact integer results expected), bool operands for the logical entries, and bfloat16 operands for
// every elementwise entry (computed in float, stored rounded: half a bf16 ulp plus the entry's float
// tolerance).
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

namespace {
template <class Op>
void int32_cases() {
  if constexpr (Op::op_category == ops::category::arith) {
    contiguous_case<Op, std::int32_t, 33>(fill::mixed);
    broadcast_case<Op, std::int32_t>();
  }
}
} // namespace

TEST_CASE("arithmetic ops on int32 give exact integer results", "[ops][int32]") {
  ops::unary_ops::for_each([]<class Op>() { int32_cases<Op>(); });
  ops::binary_ops::for_each([]<class Op>() { int32_cases<Op>(); });
  ops::ternary_ops::for_each([]<class Op>() { int32_cases<Op>(); });
}

namespace {
template <std::size_t>
using bool_t = bool;
// Every entry whose result on bool operands is bool: the logical ones, comparisons, predicates, and the
// arithmetic ones that keep bool (add: or, mul: and, minimum, maximum, clamp, where).
template <class Op, std::size_t... K>
constexpr bool bool_closed(std::index_sequence<K...>) {
  return std::is_same_v<typename Op::template result_type<bool_t<K>...>, bool>;
}
template <class Op>
void bool_cases() {
  if constexpr (bool_closed<Op>(std::make_index_sequence<Op::arity>{})) {
    contiguous_case<Op, bool, 1>(fill::random);
    contiguous_case<Op, bool, 131>(fill::cartesian); // 5 special values per operand: 125 combinations
    strided_case<Op, bool>();
    broadcast_case<Op, bool>();
    if constexpr (Op::arity >= 2) scalar_case<Op, bool>();
  }
}
} // namespace

// Trees of bool tensors alone have no SIMD lane type: they once failed to compile (issue 13).
TEST_CASE("ops on bool tensors that give bool", "[ops][bool]") {
  ops::unary_ops::for_each([]<class Op>() { bool_cases<Op>(); });
  ops::binary_ops::for_each([]<class Op>() { bool_cases<Op>(); });
  ops::ternary_ops::for_each([]<class Op>() { bool_cases<Op>(); });
  // The operators, on the four combinations and a broadcast row.
  Tensor<bool, shape<2, 4>> a;
  Tensor<bool, shape<4>> b;
  for (int j = 0; j < 4; ++j) a(0, j) = j < 2, a(1, j) = j % 2 == 0, b(j) = j % 2 == 0;
  Tensor<bool, shape<2, 4>> conj = a && b, disj = a || b, neg = !a, excl = logical_xor(a, b);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      INFO("a = " << a(i, j) << ", b = " << b(j));
      CHECK(conj(i, j) == (a(i, j) && b(j)));
      CHECK(disj(i, j) == (a(i, j) || b(j)));
      CHECK(neg(i, j) == !a(i, j));
      CHECK(excl(i, j) == (a(i, j) != b(j)));
    }
}

TEST_CASE("every elementwise op on bfloat16 is its float result rounded once", "[ops][bf16]") {
  ops::unary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
  ops::binary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
  ops::ternary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
}

TEST_CASE("bool + bool is bool, as in NumPy and PyTorch; bool - bool is int32", "[ops][bool]") {
  Tensor<bool, shape<4>> a{}, b{};
  for (int k = 0; k < 4; ++k) a(k) = k & 1, b(k) = k & 2;
  STATIC_REQUIRE(std::is_same_v<decltype(a + b)::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(a * b)::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(maximum(a, b))::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(where(a, a, b))::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(a - b)::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(a + 1)::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(a + 1.5f)::value_type, float>);
  Tensor<bool, shape<4>> sum = a + b, product = a * b;
  Tensor<std::int32_t, shape<4>> difference = a - b;
  for (int k = 0; k < 4; ++k) {
    CHECK(sum(k) == (a(k) || b(k)));
    CHECK(product(k) == (a(k) && b(k)));
    CHECK(difference(k) == int(a(k)) - int(b(k)));
  }
}

TEST_CASE("integer fmod is exact in its own type (not through float32), and defined for 0 and -1", "[ops][int32]") {
  // Beyond 2^24 float32 cannot hold every int32; beyond 2^53 double cannot hold every int64.
  const std::int64_t big[] = {(1ll << 24) + 1, (1ll << 31) - 1, -(1ll << 31), (1ll << 53) + 1, (1ll << 62) + 3, -(1ll << 62) - 7,
                              std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  const std::int64_t div[] = {3, -7, 2, 1000003, -1, 0, 97, (1ll << 40) + 5};
  constexpr index_t m = std::size(big);
  Tensor<std::int64_t, shape<m>> a, b;
  Tensor<std::int32_t, shape<m>> a32, b32;
  for (index_t i = 0; i < m; ++i) {
    a(i) = big[i], b(i) = div[i];
    a32(i) = std::int32_t(big[i] % (1ll << 31)), b32(i) = std::int32_t(div[i] % (1ll << 31));
  }
  Tensor<std::int64_t, shape<m>> r = fmod(a, b);
  Tensor<std::int32_t, shape<m>> r32 = fmod(a32, b32);
  for (index_t i = 0; i < m; ++i) {
    INFO("fmod(" << a(i) << ", " << b(i) << ")");
    // long double holds every int64 exactly; fmod is exact; a zero divisor gives 0 (NumPy's value).
    CHECK(r(i) == (b(i) == 0 ? 0 : std::int64_t(std::fmod((long double)a(i), (long double)b(i)))));
    CHECK(r32(i) == (b32(i) == 0 ? 0 : std::int32_t(std::fmod((long double)a32(i), (long double)b32(i)))));
  }
  STATIC_REQUIRE(std::is_same_v<decltype(fmod(a32, b32))::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(fmod(a32, 2.5f))::value_type, float>);
}
