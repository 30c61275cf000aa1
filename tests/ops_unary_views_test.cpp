// Unary ops from the op table, float32, on operands that are views: a step-2 slice, a transposed matrix
// and a broadcast row (see ops_unary_test.cpp for the contiguous sizes and the special values).
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("unary ops: float32, strided, transposed and broadcast operands", "[ops][unary]") {
  ops::unary_ops::for_each([]<class Op>() { view_layouts<Op, float>(); });
}
