// Unary ops from the op table in float64: contiguous sizes, special values, view operands and the ends of
// the range.
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("unary ops: float64, every layout", "[ops][unary]") {
  ops::unary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, double>();
    view_layouts<Op, double>();
  });
}

TEST_CASE("unary ops: float64 at the ends of its range (overflow and underflow thresholds, subnormals, ±0, ±inf, NaN)",
          "[ops][unary][edges]") {
  ops::unary_ops::for_each([]<class Op>() { edge_case<Op, double>(); });
}
