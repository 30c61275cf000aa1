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
template <class Op>
void bool_cases() {
  if constexpr (Op::op_category == ops::category::logical) {
    contiguous_case<Op, bool, 1>(fill::random);
    contiguous_case<Op, bool, 67>(fill::cartesian);
    strided_case<Op, bool>();
    broadcast_case<Op, bool>();
    if constexpr (Op::arity >= 2) scalar_case<Op, bool>();
  }
}
} // namespace

// Trees of bool tensors alone have no SIMD lane type: they once failed to compile (issue 13).
TEST_CASE("logical ops on bool tensors", "[ops][bool]") {
  ops::unary_ops::for_each([]<class Op>() { bool_cases<Op>(); });
  ops::binary_ops::for_each([]<class Op>() { bool_cases<Op>(); });
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
