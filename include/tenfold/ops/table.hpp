#pragma once
// THE op table: every elementwise and reduction op of tenfold, in one list. The user-facing functions
// (ops/api.hpp), both evaluators, the op tests and the op benchmarks are generated from these lists;
// adding an op is adding its entry (ops/table_*.hpp), listing it here and naming its function in
// ops/api.hpp.
#include "tenfold/ops/entry.hpp"
#include "tenfold/ops/table_bitwise.hpp"
#include "tenfold/ops/table_reduce.hpp"

namespace tenfold::ops {

template <class... Op>
struct op_list {
  static constexpr std::size_t size = sizeof...(Op);
  template <class F>
  static constexpr void for_each(F&& f) {
    (f.template operator()<Op>(), ...);
  }
};

using unary_ops = op_list<neg, abs, sign, square, relu, exp, exp2, expm1, log, log2, log1p, sqrt, rsqrt, reciprocal, sin,
                          cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, erf, floor, ceil, round,
                          trunc, sigmoid, silu, gelu, gelu_tanh, elu, selu, softplus, logical_not, isnan, isinf>;
using binary_ops = op_list<add, sub, mul, div, floor_divide, remainder, pow, fmod, atan2, minimum, maximum, eq, ne, lt, le,
                           gt, ge, logical_and, logical_or, logical_xor>;
// Integer and bool operands only (ops/table_bitwise.hpp): unary and binary entries, listed apart so that the
// generated float tests of the two lists above do not meet them.
using bitwise_ops = op_list<bitwise_and, bitwise_or, bitwise_xor, bitwise_not, left_shift, right_shift>;
using ternary_ops = op_list<where, clamp, lerp>;
using reduction_ops = op_list<sum, mean, prod, max, min, argmax, argmin, any, all, var, stddev, logsumexp, norm>;

// Every entry of the library's own table is an entry (ops/entry.hpp) with, beyond what an op defined
// outside needs, a long-double reference, a test spec and a bench spec: the op tests and benchmarks are
// generated from them. An entry without one does not compile.
template <class Op, class Seq = std::make_index_sequence<std::size_t(Op::arity)>>
inline constexpr bool has_elementwise_reference = false;
template <class Op, std::size_t... K>
inline constexpr bool has_elementwise_reference<Op, std::index_sequence<K...>> =
    requires(entry_detail::repeat_t<long double, std::integral_constant<std::size_t, K>>... x) {
      { Op::reference(x...) } -> std::convertible_to<long double>;
    };
template <class Op>
concept table_entry =
    ((elementwise_entry<Op> && has_elementwise_reference<Op>) ||
     (reduction_entry<Op> && requires(const long double* x, index_t n) {
       { Op::reference(x, n) } -> std::convertible_to<long double>;
     })) &&
    requires {
      { Op::test } -> std::convertible_to<test_spec>;
      { Op::bench } -> std::convertible_to<bench_spec>;
    };
// The bitwise entries' references depend on the result type (integer_reference<R>, compared with
// NumPy's values by ops_int_test) instead of one long-double reference.
template <class Op>
concept bitwise_table_entry = elementwise_entry<Op> && requires {
  { Op::test } -> std::convertible_to<test_spec>;
  { Op::bench } -> std::convertible_to<bench_spec>;
};
template <class... Op>
constexpr bool all_entries(op_list<Op...>) {
  return (table_entry<Op> && ...);
}
template <class... Op>
constexpr bool all_bitwise_entries(op_list<Op...>) {
  return (bitwise_table_entry<Op> && ...);
}
static_assert(all_entries(unary_ops{}) && all_entries(binary_ops{}) && all_bitwise_entries(bitwise_ops{}) &&
                  all_entries(ternary_ops{}) && all_entries(reduction_ops{}),
              "tenfold: every op table entry needs a name, a reference, a test_spec and a bench_spec");

// Every elementwise entry says how it is differentiated: a vjp, or no_derivative with the reason (bool
// results need neither). Reductions get theirs with autodiff.
template <class... Op>
constexpr bool all_declare_derivative(op_list<Op...>) {
  return (declares_derivative<Op> && ...);
}
static_assert(all_declare_derivative(unary_ops{}) && all_declare_derivative(binary_ops{}) &&
                  all_declare_derivative(ternary_ops{}),
              "tenfold: every elementwise op table entry needs a vjp, or no_derivative saying why it has none");
} // namespace tenfold::ops
