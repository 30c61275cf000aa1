#pragma once
// The shape of an op descriptor. Every elementwise and reduction op is one struct deriving from one of
// the bases below; ops/table.hpp lists the library's own, and an op defined outside the library derives
// from the same bases, under the same public names (tenfold::ops::unary, binary, ternary, reduction,
// category, reduce_result, test_spec; ops/entry.hpp says which members are required). The bases turn the
// entry's category into result and operating types, so an entry states only its math:
//
//   struct exp : unary<exp, floating> {
//     static constexpr std::string_view name = "exp";
//     template <class T> TENFOLD_HD static T scalar(T x) { return std::exp(x); }      // host + device
//     template <class B> static B simd(const B& x) { return xsimd::exp(x); }          // optional
//     static long double reference(long double x) { return std::exp(x); }             // for the tests
//     static constexpr test_spec test{.lo = -87, .hi = 88, .ulps = 4};
//     static constexpr bench_spec bench{.flops = 20};
//     // the derivative, as the vector-Jacobian product: an expression of the operand x, the result y
//     // and the incoming gradient g (ops without one declare `no_derivative` with the reason instead)
//     static auto vjp(const auto& x, const auto& y, const auto& g) { return g * y; }
//   };
// (An entry may add `grad_test`, a test_spec whose domain the derivative checks use instead of test's.)
// Binary and ternary entries give the product for operand K: `template <int K> static auto vjp(const
// auto& a, const auto& b, const auto& y, const auto& g)`, or no_gradient{} for an operand no gradient
// flows to (where's condition).
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tenfold/core/dtype.hpp"

namespace tenfold::detail {
template <class Op, class... X>
auto make_map(X&&... x); // ops/api.hpp
} // namespace tenfold::detail

namespace tenfold::ops {

// Another entry applied to expressions, for the derivative rules: call<cos>(x). (The public names,
// tenfold::cos and the rest, are declared after the table.)
template <class Op, class... X>
auto call(X&&... x) {
  return detail::make_map<Op>(std::forward<X>(x)...);
}
// What an entry's vjp gives for an operand no gradient flows to (where's condition).
struct no_gradient {};

enum class kind { unary, binary, ternary, reduction };

// How an op types its result.
enum class category {
  arith,     // result = promoted operand type (bool computes as int32)
  floating,  // integers promote to float: exp(int) is float
  compare,   // operands promoted, result bool
  logical,   // operands as bool, result bool
  predicate, // floating operand, result bool (isnan)
  bitwise,   // integer or bool operands only; result = promoted type (bool stays bool)
};

// Inputs the generated op tests draw from, and how close to the long-double reference they must be.
struct test_spec {
  double lo = -10, hi = 10;         // domain of every operand (or of the first, see lo2/hi2)
  double ulps = 2;                  // tolerance in units in the last place of the result type
  double lo2 = 0, hi2 = 0;          // the last operand's domain when it differs (hi2 > lo2)
  bool specials = true;             // also test ±0, ±inf, NaN, denormals, huge values
  bool integral = false;            // inputs are whole numbers (e.g. for fmod/round edge cases)
  double abs_tol = 0;               // absolute slack for results near zero (cancellation)
};

// What the op benchmarks need: work per element (bytes follow from arity and the element type).
struct bench_spec {
  double flops = 1;
};

template <class T>
using floating_t = std::conditional_t<is_floating_v<T>, T, float>;
template <class T>
using arith_t = std::conditional_t<std::is_same_v<T, bool>, std::int32_t, T>;

template <class... V>
struct promote_all;
template <class V>
struct promote_all<V> {
  using type = V;
};
template <class A, class B, class... R>
struct promote_all<A, B, R...> {
  using type = typename promote_all<promote_t<A, B>, R...>::type;
};
template <class... V>
using promote_all_t = typename promote_all<V...>::type;
// For the entries that say so (add, mul, maximum, minimum, clamp, where): bool operands alone give bool,
// as in NumPy and PyTorch (True + True is True: or; True * False is False: and). The value is computed as
// the arithmetic category computes it, in int32, and converted to bool (non-zero is true).
template <class... V>
using bool_closed_t = std::conditional_t<(std::is_same_v<V, bool> && ...), bool, arith_t<promote_all_t<V...>>>;

template <category C, class... V>
struct typing;
template <class... V>
struct typing<category::arith, V...> {
  using result = arith_t<promote_all_t<V...>>;
  using operating = compute_t<result>;
};
template <class... V>
struct typing<category::floating, V...> {
  using result = floating_t<promote_all_t<V...>>;
  using operating = compute_t<result>;
};
template <class... V>
struct typing<category::compare, V...> {
  using result = bool;
  using operating = compute_t<promote_all_t<V...>>;
};
template <class... V>
struct typing<category::logical, V...> {
  using result = bool;
  using operating = bool;
};
// Floating operands are refused here, where the result type is first asked for, with a message that names
// the ops: bitwise_and(x, y) of two float tensors stops at this line.
template <class... V>
struct typing<category::bitwise, V...> {
  static_assert((!is_floating_v<V> && ...),
                "tenfold: bitwise ops (bitwise_and, bitwise_or, bitwise_xor, bitwise_not, left_shift, right_shift and "
                "the operators & | ^ ~ << >>) take integer or bool operands, not floating ones");
  // (int32 where refused, so that the assertion above is the only error the compiler prints)
  using result = std::conditional_t<(!is_floating_v<V> && ...), promote_all_t<V...>, std::int32_t>;
  using operating = result;
};
template <class... V>
struct typing<category::predicate, V...> {
  using result = bool;
  using operating = compute_t<floating_t<promote_all_t<V...>>>;
};

template <class Derived, kind K, category C>
struct elementwise {
  static constexpr ops::kind op_kind = K;
  static constexpr ops::category op_category = C;
  static constexpr int arity = K == kind::unary ? 1 : K == kind::binary ? 2 : 3;
  template <class... V>
  using result_type = typename typing<C, V...>::result;
  template <class... V>
  using operating_type = typename typing<C, V...>::operating;

  // The type `scalar` takes its operands in, for operands of compute types A... (logical ops: bool).
  template <class... A>
  using scalar_operand = std::conditional_t<C == category::logical, bool, typename typing<C, A...>::operating>;
  // One element: operands arrive in their compute types, are cast to the operating type, and the
  // result is returned in the compute type of R (the node's value type).
  template <class R, class... A>
  TENFOLD_HD static compute_t<R> apply(A... a) {
    return static_cast<compute_t<R>>(Derived::scalar(static_cast<scalar_operand<A...>>(a)...));
  }
};

template <class D, category C = category::floating>
struct unary : elementwise<D, kind::unary, C> {};
template <class D, category C = category::arith>
struct binary : elementwise<D, kind::binary, C> {};
template <class D, category C = category::arith>
struct ternary : elementwise<D, kind::ternary, C> {};

// Reductions: an accumulator with identity, combine (one element and its position in the reduced
// subspace), merge (two partial results: SIMD lanes, threads, CUDA blocks) and finalize.
enum class reduce_result {
  same,     // max, min: the element type
  wide,     // sum, prod: integers widen to int64
  floating, // mean, var, norm: integers become float
  index,    // argmax: int64 positions
  boolean,  // any, all
};

template <class V>
using wide_t = std::conditional_t<is_floating_v<V>, V, std::int64_t>;

template <reduce_result RR, class V>
struct reduce_typing {
  using result = std::conditional_t<RR == reduce_result::wide, wide_t<V>,
                                    std::conditional_t<RR == reduce_result::floating, floating_t<V>, V>>;
  using input = compute_t<result>;
};
template <class V>
struct reduce_typing<reduce_result::index, V> {
  using result = std::int64_t;
  using input = compute_t<V>;
};
template <class V>
struct reduce_typing<reduce_result::boolean, V> {
  using result = bool;
  using input = bool;
};

template <class Derived, reduce_result RR>
struct reduction {
  static constexpr ops::kind op_kind = kind::reduction;
  static constexpr reduce_result result_kind = RR;
  template <class V>
  using result_type = typename reduce_typing<RR, V>::result;
  // Elements are converted to this type before `combine`; the accumulator defaults to it too.
  template <class V>
  using input_type = typename reduce_typing<RR, V>::input;
  template <class I>
  using acc_type = I;
  static constexpr bool needs_nonempty = false; // max/min/argmax have no identity
};

// ---- derivatives ----------------------------------------------------------------------------------
// Does an entry declare a `vjp`? (Found by name: a vjp is a template, so neither its address nor a call
// can be asked for without instantiating it. The name is ambiguous in `probe` exactly when Op has one.)
namespace derivative_detail {
struct vjp_name {
  static void vjp();
};
template <class Op>
struct probe : Op, vjp_name {};
} // namespace derivative_detail
template <class Op>
inline constexpr bool has_vjp = !requires { &derivative_detail::probe<Op>::vjp; };

// Ops whose results are bool (comparisons, logical ops, predicates) have no derivative by their
// category; any other entry without a vjp says why in `no_derivative` ("piecewise constant").
template <class Op>
constexpr bool bool_valued() {
  if constexpr (requires { Op::op_category; })
    return Op::op_category == category::compare || Op::op_category == category::logical ||
           Op::op_category == category::predicate;
  else return false;
}
template <class Op>
inline constexpr bool declares_derivative = has_vjp<Op> || bool_valued<Op>() || requires {
  { Op::no_derivative } -> std::convertible_to<std::string_view>;
};

template <class Op, class V>
using acc_t = typename Op::template acc_type<typename Op::template input_type<V>>;
} // namespace tenfold::ops
