// Unary ops, generated from the op table: every entry of ops::unary_ops against its long-double reference,
// on random inputs inside its domain and on its special values, and at the ends of the type's range (edge_case
// in op_test_support.hpp). This file: float32, contiguous operands.
// (ops_unary_views_test: strided, transposed and broadcast operands; ops_unary_f64_test: float64. They are
// separate executables only to keep each file's compile time near a minute.)
#include <set>

#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

namespace {
template <class List>
void check_specs(std::set<std::string_view>& names) {
  List::for_each([&]<class Op>() {
    constexpr ops::test_spec s = Op::test;
    INFO("op " << Op::name);
    REQUIRE(!Op::name.empty());
    REQUIRE(names.insert(Op::name).second); // names label errors, traces and benchmarks: unique
    REQUIRE(s.lo < s.hi);
    REQUIRE(s.ulps >= 0);
    REQUIRE(s.abs_tol >= 0);
    REQUIRE((s.lo2 == s.hi2 || s.lo2 < s.hi2));
    REQUIRE(std::isfinite(s.lo));
    REQUIRE(std::isfinite(s.hi));
    REQUIRE(Op::bench.flops > 0);
  });
}
} // namespace

TEST_CASE("op table: every entry carries a sane test spec", "[ops][table]") {
  // An entry without a test or bench spec does not compile (ops/table.hpp); this checks their values.
  STATIC_REQUIRE(ops::all_entries(ops::unary_ops{}) && ops::all_entries(ops::binary_ops{}) &&
                 ops::all_bitwise_entries(ops::bitwise_ops{}) && ops::all_entries(ops::ternary_ops{}) &&
                 ops::all_entries(ops::reduction_ops{}));
  std::set<std::string_view> names;
  check_specs<ops::unary_ops>(names);
  check_specs<ops::binary_ops>(names);
  check_specs<ops::bitwise_ops>(names);
  check_specs<ops::ternary_ops>(names);
  check_specs<ops::reduction_ops>(names);
  CHECK(names.size() == ops::unary_ops::size + ops::binary_ops::size + ops::bitwise_ops::size +
                            ops::ternary_ops::size + ops::reduction_ops::size);
}

TEST_CASE("unary ops: float32, contiguous, sizes 1 to 1000003 and every special value", "[ops][unary]") {
  ops::unary_ops::for_each([]<class Op>() { contiguous_layouts<Op, float>(); });
}

TEST_CASE("unary ops: float32 at the ends of its range (overflow and underflow thresholds, subnormals, ±0, ±inf, NaN)",
          "[ops][unary][edges]") {
  ops::unary_ops::for_each([]<class Op>() { edge_case<Op, float>(); });
}
