#pragma once
// The user-facing functions: tenfold::apply<Entry>(x...) and tenfold::reduce<Entry>(x, axes, keepdims),
// which take any op entry (ops/entry.hpp: the library's own or one defined outside it) with NumPy
// broadcasting and scalar operands for the elementwise ones, axis lists and keepdims for reductions; and
// one named function per entry of the op table, which is apply or reduce of that entry.
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/ops/entry.hpp"
#include "tenfold/ops/rewrite.hpp"
#include "tenfold/ops/table.hpp"

namespace tenfold {

template <class X>
concept operand = expression<X> || arithmetic_scalar<X> || detail::is_literal_v<std::remove_cvref_t<X>>;

namespace detail {

// Element types of the operands: a tensor expression's own; a number's (or literal's) "natural" type,
// which counts only when no tensor operand sets the type (where(c, 1.0f, 0)): bool, int32 for integers
// up to 32 bits, int64 above, float for floating point numbers (PyTorch's default dtype), a half its own.
template <class X>
struct operand_value {
  using type = void;
};
template <expression X>
struct operand_value<X> {
  using type = typename node_t<X>::value_type;
};
template <class S>
using natural_element_t =
    std::conditional_t<std::is_same_v<S, bool>, bool,
                       std::conditional_t<std::is_integral_v<S>, std::conditional_t<(sizeof(S) <= 4), std::int32_t, std::int64_t>,
                                          std::conditional_t<is_half_v<S>, S, float>>>;
template <class X>
struct scalar_value {
  using type = void;
};
template <arithmetic_scalar X>
struct scalar_value<X> {
  using type = natural_element_t<std::remove_cvref_t<X>>;
};
template <class X>
  requires is_literal_v<std::remove_cvref_t<X>>
struct scalar_value<X> {
  using type = natural_element_t<std::remove_cvref_t<decltype(std::remove_cvref_t<X>::value)>>;
};

// promote_t over a list in which void (an operand that does not take part) is skipped; void if all are.
template <class A, class B>
struct promote_skip {
  using type = promote_t<A, B>;
};
template <class B>
struct promote_skip<void, B> {
  using type = B;
};
template <class A>
struct promote_skip<A, void> {
  using type = A;
};
template <>
struct promote_skip<void, void> {
  using type = void;
};
template <class... V>
struct promote_known {
  using type = void;
};
template <class V, class... R>
struct promote_known<V, R...> {
  using type = typename promote_skip<V, typename promote_known<R...>::type>::type;
};

// Does operand K of Op take part in typing its result? All do, except where an entry says otherwise
// (where's condition).
template <class Op>
constexpr bool typed_operand(int k) {
  if constexpr (requires { Op::typed_operand(0); }) return Op::typed_operand(k);
  else return true;
}

// The element type the operands agree on: the tensor operands' promotion; scalars then adopt it ("weak"
// scalars, as in PyTorch), except that a floating scalar makes an integer expression floating. When no
// typed operand is a tensor, the numbers' natural types promote instead.
template <class Op, class... X>
struct operand_common {
  template <std::size_t... K>
  static auto pick(std::index_sequence<K...>) {
    using tensors = typename promote_known<std::conditional_t<typed_operand<Op>(int(K)), typename operand_value<X>::type, void>...>::type;
    using numbers = typename promote_known<std::conditional_t<typed_operand<Op>(int(K)), typename scalar_value<X>::type, void>...>::type;
    return std::type_identity<std::conditional_t<std::is_void_v<tensors>, numbers, tensors>>{};
  }
  using type = typename decltype(pick(std::index_sequence_for<X...>{}))::type;
};

template <class Common, class X>
auto to_node(X&& x) {
  if constexpr (expression<X>) return as_node(std::forward<X>(x));
  else if constexpr (is_literal_v<std::remove_cvref_t<X>>) return to_node<Common>(std::remove_cvref_t<X>::value);
  else {
    // A number of a higher kind than the tensors' type takes its own: a floating number makes an integer or
    // bool tensor float32, an integer makes a bool tensor int32 (or int64): bool_tensor + 2 adds 2.
    using S = std::remove_cvref_t<X>;
    using T = std::conditional_t<(std::is_floating_point_v<S> || is_half_v<S>) && !is_floating_v<Common>, float,
                                 std::conditional_t<std::is_integral_v<S> && !std::is_same_v<S, bool> && std::is_same_v<Common, bool>,
                                                    natural_element_t<S>, Common>>;
    return scalar_node<T>{{}, static_cast<compute_t<T>>(x)};
  }
}

template <class Op, class... N>
auto map_of(N&&... nodes) {
  using S = broadcast_shape_t<typename std::remove_cvref_t<N>::shape_type...>;
  return map_node<Op, decltype(expand_to<S>(std::forward<N>(nodes)))...>{{}, {expand_to<S>(std::forward<N>(nodes))...}};
}

template <class Op, class... X>
auto make_map_plain(X&&... x) {
  using Common = typename operand_common<Op, X...>::type;
  return map_of<Op>(to_node<Common>(std::forward<X>(x))...);
}

// Every elementwise node is built here: a compile-time rewrite (ops/rewrite.hpp) may stand in for it.
template <class Op, class... X>
auto make_map(X&&... x) {
  using R = rewrite_rule<Op, std::remove_cvref_t<X>...>;
  if constexpr (R::applies) return R::apply(std::forward<X>(x)...);
  else return make_map_plain<Op>(std::forward<X>(x)...);
}

// An elementwise call: at least one operand is a tensor expression (so that `exp(2.0)` stays the C
// library's, even under `using namespace tenfold`); the operands themselves are checked in the body, where a
// static_assert can say what is wrong.
template <class... X>
concept has_expression = (expression<X> || ...);

// The public function (and operator, where there is one) of each table entry, for code that walks the
// table (the API test): specialised next to each function below. An entry that has none fails the
// static_assert at the end of this file.
template <class Op>
struct public_function;
template <class Op>
inline constexpr bool has_public_function = false;
template <class Op>
struct public_operator;
template <class Op>
inline constexpr bool has_public_operator = false;

// The node of an operand, given the element type the operands agree on.
template <class Common, class X>
using operand_node_t = decltype(to_node<Common>(std::declval<X>()));

// An empty axis list reduces every axis.
template <class Op, bool Keep, class X, int... A>
auto reduce(X&& x, axes_t<A...>) {
  using N = node_t<X>;
  static_assert(check_axes<typename N::shape_type, A...>::ok);
  if constexpr (!check_axes<typename N::shape_type, A...>::valid) return invalid_view{};
  else return reduce_node<Op, N, canon(axis_mask<N::rank, A...>()), Keep>{{}, as_node(std::forward<X>(x))};
}
template <class Op, bool Keep, class X, int... A>
auto reduce_checked(X&& x, axes_t<A...> a) {
  if constexpr (!check_reduction_entry<Op>()) return invalid_view{};
  else if constexpr (!check_reduction_elements<Op, typename node_t<X>::value_type>()) return invalid_view{};
  else return detail::reduce<Op, Keep>(std::forward<X>(x), a);
}
} // namespace detail

// ---- apply and reduce: any entry ----------------------------------------------------------------------
// apply<Entry>(x...): the elementwise op of an entry deriving from ops::unary, binary or ternary, each
// operand a tensor, an expression or a number (at least one not a number), broadcast as in NumPy. The
// entry is checked first (ops/entry.hpp); a failed check is one static_assert saying what is missing.
template <class Op, class... X>
auto apply(X&&... x) {
  if constexpr (!detail::check_elementwise_entry<Op>()) {
    return detail::invalid_view{};
  } else {
    constexpr bool arity_ok = sizeof...(X) == Op::arity;
    static_assert(arity_ok, "tenfold: wrong number of operands for this elementwise op (Op in the note; its arity is "
                            "in its entry: unary, binary or ternary)");
    constexpr bool operands_ok = (operand<X> && ...);
    static_assert(operands_ok, "tenfold: every operand of an elementwise op (Op in the note) must be a tenfold tensor "
                               "or expression, or a number (bool, an integer, float, double, bf16 or f16)");
    constexpr bool tensor_ok = detail::has_expression<X...>;
    static_assert(tensor_ok, "tenfold::apply: at least one operand must be a tenfold tensor or expression");
    if constexpr (!arity_ok || !operands_ok || !tensor_ok) {
      return detail::invalid_view{};
    } else {
      // The entry for these operands' compute types (its scalar and simd callable), then the node.
      using Common = typename detail::operand_common<Op, X...>::type;
      if constexpr (!detail::check_elementwise_operands<
                        Op, typename Op::template scalar_operand<compute_t<typename detail::operand_node_t<Common, X>::value_type>...>,
                        compute_t<typename detail::operand_node_t<Common, X>::value_type>...>())
        return detail::invalid_view{};
      else return detail::make_map<Op>(std::forward<X>(x)...);
    }
  }
}

// reduce<Entry>(x), reduce<Entry>(x, axes<0, 2>), reduce<Entry>(x, axis<-1>, keepdims): the reduction of
// an entry deriving from ops::reduction, over the axes listed (all when none are).
template <class Op, expression X, int... A>
auto reduce(X&& x, axes_t<A...> a = {}) {
  return detail::reduce_checked<Op, false>(std::forward<X>(x), a);
}
template <class Op, expression X, int... A>
auto reduce(X&& x, axes_t<A...> a, keepdims_t) {
  return detail::reduce_checked<Op, true>(std::forward<X>(x), a);
}

// ---- the names (one per table entry) ----------------------------------------------------------------
// Function templates rather than function objects, so that `using namespace tenfold; exp(x)` never
// competes with ::exp from <math.h>. At least one operand must be a tensor expression.
#define TENFOLD_ELEMENTWISE(n)                                                                                    \
  template <class... X>                                                                                           \
    requires detail::has_expression<X...>                                                                         \
  auto n(X&&... x) {                                                                                              \
    return tenfold::apply<ops::n>(std::forward<X>(x)...);                                                         \
  }                                                                                                               \
  namespace detail {                                                                                              \
  template <>                                                                                                     \
  struct public_function<ops::n> {                                                                                \
    template <class... X>                                                                                         \
    static auto call(X&&... x) {                                                                                  \
      return tenfold::n(std::forward<X>(x)...);                                                                   \
    }                                                                                                             \
  };                                                                                                              \
  template <>                                                                                                     \
  inline constexpr bool has_public_function<ops::n> = true;                                                       \
  }
// sum(x), sum(x, axes<0, 2>), sum(x, axis<-1>, keepdims)
#define TENFOLD_REDUCTION(n, op)                                                                                     \
  template <expression X, int... A>                                                                                  \
  auto n(X&& x, axes_t<A...> a = {}) {                                                                               \
    return tenfold::reduce<ops::op>(std::forward<X>(x), a);                                                          \
  }                                                                                                                  \
  template <expression X, int... A>                                                                                  \
  auto n(X&& x, axes_t<A...> a, keepdims_t) {                                                                        \
    return tenfold::reduce<ops::op>(std::forward<X>(x), a, keepdims);                                                \
  }                                                                                                                  \
  namespace detail {                                                                                                 \
  template <>                                                                                                        \
  struct public_function<ops::op> {                                                                                  \
    template <class... X>                                                                                            \
    static auto call(X&&... x) {                                                                                     \
      return tenfold::n(std::forward<X>(x)...);                                                                      \
    }                                                                                                                \
  };                                                                                                                 \
  template <>                                                                                                        \
  inline constexpr bool has_public_function<ops::op> = true;                                                         \
  }
TENFOLD_ELEMENTWISE(neg) TENFOLD_ELEMENTWISE(abs) TENFOLD_ELEMENTWISE(sign) TENFOLD_ELEMENTWISE(square)
TENFOLD_ELEMENTWISE(relu) TENFOLD_ELEMENTWISE(exp) TENFOLD_ELEMENTWISE(exp2) TENFOLD_ELEMENTWISE(expm1)
TENFOLD_ELEMENTWISE(log) TENFOLD_ELEMENTWISE(log2) TENFOLD_ELEMENTWISE(log1p) TENFOLD_ELEMENTWISE(sqrt)
TENFOLD_ELEMENTWISE(rsqrt) TENFOLD_ELEMENTWISE(reciprocal) TENFOLD_ELEMENTWISE(sin) TENFOLD_ELEMENTWISE(cos)
TENFOLD_ELEMENTWISE(tan) TENFOLD_ELEMENTWISE(asin) TENFOLD_ELEMENTWISE(acos) TENFOLD_ELEMENTWISE(atan)
TENFOLD_ELEMENTWISE(sinh) TENFOLD_ELEMENTWISE(cosh) TENFOLD_ELEMENTWISE(tanh) TENFOLD_ELEMENTWISE(asinh)
TENFOLD_ELEMENTWISE(acosh) TENFOLD_ELEMENTWISE(atanh) TENFOLD_ELEMENTWISE(erf) TENFOLD_ELEMENTWISE(floor)
TENFOLD_ELEMENTWISE(ceil) TENFOLD_ELEMENTWISE(round) TENFOLD_ELEMENTWISE(trunc) TENFOLD_ELEMENTWISE(sigmoid)
TENFOLD_ELEMENTWISE(silu) TENFOLD_ELEMENTWISE(gelu) TENFOLD_ELEMENTWISE(gelu_tanh) TENFOLD_ELEMENTWISE(elu)
TENFOLD_ELEMENTWISE(selu) TENFOLD_ELEMENTWISE(softplus) TENFOLD_ELEMENTWISE(logical_not)
TENFOLD_ELEMENTWISE(isnan) TENFOLD_ELEMENTWISE(isinf)
TENFOLD_ELEMENTWISE(add) TENFOLD_ELEMENTWISE(sub) TENFOLD_ELEMENTWISE(mul) TENFOLD_ELEMENTWISE(div)
TENFOLD_ELEMENTWISE(floor_divide) TENFOLD_ELEMENTWISE(remainder)
TENFOLD_ELEMENTWISE(pow) TENFOLD_ELEMENTWISE(fmod) TENFOLD_ELEMENTWISE(atan2) TENFOLD_ELEMENTWISE(minimum)
TENFOLD_ELEMENTWISE(maximum) TENFOLD_ELEMENTWISE(eq) TENFOLD_ELEMENTWISE(ne) TENFOLD_ELEMENTWISE(lt)
TENFOLD_ELEMENTWISE(le) TENFOLD_ELEMENTWISE(gt) TENFOLD_ELEMENTWISE(ge) TENFOLD_ELEMENTWISE(logical_and)
TENFOLD_ELEMENTWISE(logical_or) TENFOLD_ELEMENTWISE(logical_xor)
TENFOLD_ELEMENTWISE(bitwise_and) TENFOLD_ELEMENTWISE(bitwise_or) TENFOLD_ELEMENTWISE(bitwise_xor)
TENFOLD_ELEMENTWISE(bitwise_not) TENFOLD_ELEMENTWISE(left_shift) TENFOLD_ELEMENTWISE(right_shift)
TENFOLD_ELEMENTWISE(where) TENFOLD_ELEMENTWISE(clamp) TENFOLD_ELEMENTWISE(lerp)
TENFOLD_REDUCTION(sum, sum) TENFOLD_REDUCTION(mean, mean) TENFOLD_REDUCTION(prod, prod) TENFOLD_REDUCTION(max, max)
TENFOLD_REDUCTION(min, min) TENFOLD_REDUCTION(argmax, argmax) TENFOLD_REDUCTION(argmin, argmin)
TENFOLD_REDUCTION(any, any) TENFOLD_REDUCTION(all, all) TENFOLD_REDUCTION(var, var) TENFOLD_REDUCTION(std, stddev)
TENFOLD_REDUCTION(logsumexp, logsumexp) TENFOLD_REDUCTION(norm, norm)
#undef TENFOLD_ELEMENTWISE
#undef TENFOLD_REDUCTION

// var and std divide by n - correction: 1 by default (Bessel's correction, PyTorch's default), or as given:
// var(x, correction<0>) is the population variance (NumPy's default), var(x, axis<1>, keepdims, correction<0>).
template <int C>
struct correction_t {
  static_assert(C >= 0, "tenfold: var / std: the correction (ddof) must be non-negative");
};
template <int C>
inline constexpr correction_t<C> correction{};
#define TENFOLD_CORRECTED(n, root)                                                                     \
  template <expression X, int C>                                                                     \
  auto n(X&& x, correction_t<C>) {                                                                   \
    return tenfold::reduce<ops::variance<root, C>>(std::forward<X>(x));                              \
  }                                                                                                  \
  template <expression X, int... A, int C>                                                           \
  auto n(X&& x, axes_t<A...> a, correction_t<C>) {                                                   \
    return tenfold::reduce<ops::variance<root, C>>(std::forward<X>(x), a);                           \
  }                                                                                                  \
  template <expression X, int... A, int C>                                                           \
  auto n(X&& x, axes_t<A...> a, keepdims_t, correction_t<C>) {                                       \
    return tenfold::reduce<ops::variance<root, C>>(std::forward<X>(x), a, keepdims);                 \
  }
TENFOLD_CORRECTED(var, false)
TENFOLD_CORRECTED(std, true)
#undef TENFOLD_CORRECTED

// cumsum(x, axis<k>), cumprod(x, axis<k>): inclusive scans.
template <expression X, int A>
auto cumsum(X&& x, axes_t<A>) {
  using N = detail::node_t<X>;
  static_assert(detail::check_axes<typename N::shape_type, A>::ok);
  return detail::scan_node<ops::sum, N, detail::normalize_axis(A, N::rank)>{{}, detail::as_node(std::forward<X>(x))};
}
template <expression X, int A>
auto cumprod(X&& x, axes_t<A>) {
  using N = detail::node_t<X>;
  static_assert(detail::check_axes<typename N::shape_type, A>::ok);
  return detail::scan_node<ops::prod, N, detail::normalize_axis(A, N::rank)>{{}, detail::as_node(std::forward<X>(x))};
}

// ---- operators -------------------------------------------------------------------------------------
// == and != are deliberately absent: `if (a == b)` on tensors would silently build an expression.
// Use eq / ne (elementwise) or all(eq(a, b)). So is %: C++'s truncates, NumPy's and Python's floors;
// `remainder` (floored) and `fmod` (truncated) say which. An operator applies when either side is a tensor
// expression; the named function it calls then checks the other side (a static_assert says what is wrong).
template <class A, class B>
concept operator_operands = expression<A> || expression<B>;
// << and >> take only operands of an expression: `std::cout << t` must stay the stream's (core/print.hpp),
// so a stream (or anything else that is not a tensor, an expression or a number) never reaches left_shift.
template <class A, class B>
concept shift_operands = operator_operands<A, B> && operand<A> && operand<B>;

#define TENFOLD_BINARY_OPERATOR(sym, op, operands)                                                            \
  template <class A, class B>                                                                                \
    requires operands<A, B>                                                                                  \
  auto operator sym(A&& a, B&& b) {                                                                          \
    return op(std::forward<A>(a), std::forward<B>(b));                                                       \
  }                                                                                                          \
  namespace detail {                                                                                         \
  template <>                                                                                                \
  struct public_operator<ops::op> {                                                                          \
    template <class A, class B>                                                                              \
    static auto call(A&& a, B&& b) {                                                                         \
      return std::forward<A>(a) sym std::forward<B>(b);                                                      \
    }                                                                                                        \
  };                                                                                                         \
  template <>                                                                                                \
  inline constexpr bool has_public_operator<ops::op> = true;                                                 \
  }
#define TENFOLD_UNARY_OPERATOR(sym, op)                                                                       \
  template <expression A>                                                                                    \
  auto operator sym(A&& a) {                                                                                 \
    return op(std::forward<A>(a));                                                                           \
  }                                                                                                          \
  namespace detail {                                                                                         \
  template <>                                                                                                \
  struct public_operator<ops::op> {                                                                          \
    template <class A>                                                                                       \
    static auto call(A&& a) {                                                                                \
      return sym std::forward<A>(a);                                                                         \
    }                                                                                                        \
  };                                                                                                         \
  template <>                                                                                                \
  inline constexpr bool has_public_operator<ops::op> = true;                                                 \
  }
TENFOLD_BINARY_OPERATOR(+, add, operator_operands) TENFOLD_BINARY_OPERATOR(-, sub, operator_operands)
TENFOLD_BINARY_OPERATOR(*, mul, operator_operands) TENFOLD_BINARY_OPERATOR(/, div, operator_operands)
TENFOLD_BINARY_OPERATOR(<, lt, operator_operands) TENFOLD_BINARY_OPERATOR(<=, le, operator_operands)
TENFOLD_BINARY_OPERATOR(>, gt, operator_operands) TENFOLD_BINARY_OPERATOR(>=, ge, operator_operands)
TENFOLD_BINARY_OPERATOR(&&, logical_and, operator_operands) TENFOLD_BINARY_OPERATOR(||, logical_or, operator_operands)
TENFOLD_BINARY_OPERATOR(&, bitwise_and, operator_operands) TENFOLD_BINARY_OPERATOR(|, bitwise_or, operator_operands)
TENFOLD_BINARY_OPERATOR(^, bitwise_xor, operator_operands) TENFOLD_BINARY_OPERATOR(<<, left_shift, shift_operands)
TENFOLD_BINARY_OPERATOR(>>, right_shift, shift_operands)
TENFOLD_UNARY_OPERATOR(-, neg) TENFOLD_UNARY_OPERATOR(!, logical_not) TENFOLD_UNARY_OPERATOR(~, bitwise_not)
#undef TENFOLD_BINARY_OPERATOR
#undef TENFOLD_UNARY_OPERATOR

// Every entry of the table has its function here (the table names the ops; this file spells them).
namespace detail {
template <class Op>
constexpr bool check_public_function() {
  static_assert(has_public_function<Op>, "tenfold: this op table entry has no function in ops/api.hpp: add it to the "
                                         "TENFOLD_ELEMENTWISE / TENFOLD_REDUCTION list");
  return has_public_function<Op>;
}
template <class... Op>
constexpr bool all_public(ops::op_list<Op...>) {
  return (check_public_function<Op>() && ...);
}
static_assert(all_public(ops::unary_ops{}) && all_public(ops::binary_ops{}) && all_public(ops::bitwise_ops{}) &&
              all_public(ops::ternary_ops{}) &&
              all_public(ops::reduction_ops{}));
} // namespace detail
} // namespace tenfold
