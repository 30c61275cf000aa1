// Binary and ternary ops from the op table in float64 (see ops_binary_test.cpp).
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("binary ops: float64, every layout", "[ops][binary]") {
  ops::binary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, double>();
    view_layouts<Op, double>();
  });
}

TEST_CASE("ternary ops: float64, every layout", "[ops][ternary]") {
  ops::ternary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, double>();
    view_layouts<Op, double>();
  });
}
