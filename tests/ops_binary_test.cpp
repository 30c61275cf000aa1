// Binary and ternary ops, generated from the op table: every entry of ops::binary_ops and ops::ternary_ops
// against its long-double reference, on random inputs inside its domain (comparisons on whole numbers, so
// that equal pairs occur; logical ops on 0/1) and on every combination of special values. float32 here,
// float64 in ops_binary_f64_test.cpp.
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("binary ops: float32, every layout", "[ops][binary]") {
  ops::binary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, float>();
    view_layouts<Op, float>();
  });
}

TEST_CASE("ternary ops: float32, every layout", "[ops][ternary]") {
  ops::ternary_ops::for_each([]<class Op>() {
    contiguous_layouts<Op, float>();
    view_layouts<Op, float>();
  });
}
