// Reductions from the op table in float64: whole tensors of sizes 1 to 1000003, special values, and
// transposed, strided and broadcast operands (see ops_reduce_test.cpp for float32 and the rest).
#include "reduce_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("reductions: float64, whole tensors, special values and views", "[ops][reduce]") {
  ops::reduction_ops::for_each([]<class Op>() { reduction_cases<Op, double>(); });
}
