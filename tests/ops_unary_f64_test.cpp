// Unary ops from the op table in float64: contiguous sizes, special values and view operands.
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("unary ops: float64, every layout", "[ops][unary]") {
  ops::unary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, double>();
    view_layouts<Op, double>();
  });
}
