// Every reduction of the op table over each of the 16 axis subsets of a rank-4 tensor with keepdims (the
// reduced axes stay, with extent 1), element by element against the entry's long-double reference.
#include "reduce_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("reductions over every axis subset of a rank-4 tensor, keepdims", "[ops][reduce][axes]") {
  ops::reduction_ops::for_each([]<class Op>() { axis_subsets<Op, true>(); });
}
