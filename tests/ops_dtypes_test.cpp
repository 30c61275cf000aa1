// The op table on element types other than float32/float64: int32 operands for the arithmetic entries
// (exact integer results expected), and bfloat16 operands for every elementwise entry (computed in float,
// stored rounded: half a bf16 ulp plus the entry's float tolerance).
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

TEST_CASE("every elementwise op on bfloat16 is its float result rounded once", "[ops][bf16]") {
  ops::unary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
  ops::binary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
  ops::ternary_ops::for_each([]<class Op>() { contiguous_case<Op, bf16, 33>(fill::mixed); });
}
