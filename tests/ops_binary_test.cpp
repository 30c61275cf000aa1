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

// Recorded from NumPy 2.4 (np.clip on float32 and int32): clip(x, lo, hi) = minimum(maximum(x, lo), hi).
TEST_CASE("clamp: lo > hi gives hi, a NaN operand gives NaN, as NumPy's clip", "[ops][ternary]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct row {
    float x, lo, hi, numpy;
  };
  const row rows[] = {{0.5f, 1, 0, 0},    {5, 1, 0, 0},         {-5, 1, 0, 0},        {0.5f, 0, 1, 0.5f}, {nan, 0, 1, nan},
                      {0.5f, nan, 1, nan}, {0.5f, 0, nan, nan}, {2, -1, nan, nan},    {-2, nan, 1, nan}};
  constexpr index_t m = std::size(rows);
  Tensor<float, shape<m>> x, lo, hi;
  for (index_t i = 0; i < m; ++i) x(i) = rows[i].x, lo(i) = rows[i].lo, hi(i) = rows[i].hi;
  Tensor<float, shape<m>> got = clamp(x, lo, hi);
  for (index_t i = 0; i < m; ++i) {
    INFO("clip(" << rows[i].x << ", " << rows[i].lo << ", " << rows[i].hi << ")");
    CHECK((std::isnan(rows[i].numpy) ? std::isnan(got(i)) : got(i) == rows[i].numpy));
  }
  Tensor<std::int32_t, shape<3>> k{};
  k(0) = 1, k(1) = 5, k(2) = -5;
  Tensor<std::int32_t, shape<3>> ki = clamp(k, 3, 2); // np.clip([1, 5, -5], 3, 2) = [2, 2, 2]
  for (index_t i = 0; i < 3; ++i) CHECK(ki(i) == 2);
}
