#pragma once
// The user-facing functions, generated from the op table: one function object per entry, NumPy
// broadcasting and scalar operands for the elementwise ones, axis lists and keepdims for reductions.
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/ops/rewrite.hpp"
#include "tenfold/ops/table.hpp"

namespace tenfold {

template <class X>
concept operand = expression<X> || arithmetic_scalar<X> || detail::is_literal_v<std::remove_cvref_t<X>>;

namespace detail {

template <class X>
struct operand_value {
  using type = void;
};
template <expression X>
struct operand_value<X> {
  using type = typename node_t<X>::value_type;
};

// The element type the tensor operands agree on; scalars then adopt it ("weak" scalars, as in
// PyTorch), except that a floating scalar makes an integer expression floating.
template <class... X>
using tensor_common_t = ops::promote_all_t<typename operand_value<X>::type...>;

template <class Common, class X>
auto to_node(X&& x) {
  if constexpr (expression<X>) return as_node(std::forward<X>(x));
  else if constexpr (is_literal_v<std::remove_cvref_t<X>>) return to_node<Common>(std::remove_cvref_t<X>::value);
  else {
    using S = std::remove_cvref_t<X>;
    using T = std::conditional_t<(std::is_floating_point_v<S> || is_half_v<S>) && !is_floating_v<Common>, float, Common>;
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
  using Common = tensor_common_t<X...>;
  return map_of<Op>(to_node<Common>(std::forward<X>(x))...);
}

// Every elementwise node is built here: a compile-time rewrite (ops/rewrite.hpp) may stand in for it.
template <class Op, class... X>
auto make_map(X&&... x) {
  using R = rewrite_rule<Op, std::remove_cvref_t<X>...>;
  if constexpr (R::applies) return R::apply(std::forward<X>(x)...);
  else return make_map_plain<Op>(std::forward<X>(x)...);
}
} // namespace detail

// void is skipped in promotion so that scalars don't take part.
namespace ops {
template <class V>
struct promote_all<void, V> {
  using type = V;
};
template <class V>
struct promote_all<V, void> {
  using type = V;
};
template <>
struct promote_all<void, void> {
  using type = void;
};
} // namespace ops

namespace detail {
template <class Op, class... X>
concept elementwise_call = sizeof...(X) == Op::arity && (operand<X> && ...) && (expression<X> || ...);
// An empty axis list reduces every axis.
template <class Op, bool Keep, class X, int... A>
auto reduce(X&& x, axes_t<A...>) {
  using N = node_t<X>;
  static_assert(check_axes<typename N::shape_type, A...>::ok);
  if constexpr (!check_axes<typename N::shape_type, A...>::valid) return invalid_view{};
  else return reduce_node<Op, N, canon(axis_mask<N::rank, A...>()), Keep>{{}, as_node(std::forward<X>(x))};
}
} // namespace detail

// ---- the names (one per table entry) ----------------------------------------------------------------
// Function templates rather than function objects, so that `using namespace tenfold; exp(x)` never
// competes with ::exp from <math.h>. At least one operand must be a tensor expression.
#define TENFOLD_ELEMENTWISE(n)                                                           \
  template <class... X>                                                                  \
    requires detail::elementwise_call<ops::n, X...>                                      \
  auto n(X&&... x) {                                                                     \
    return detail::make_map<ops::n>(std::forward<X>(x)...);                              \
  }
// sum(x), sum(x, axes<0, 2>), sum(x, axis<-1>, keepdims)
#define TENFOLD_REDUCTION(n, op)                                                                                     \
  template <expression X>                                                                                            \
  auto n(X&& x) {                                                                                                    \
    return detail::reduce<ops::op, false>(std::forward<X>(x), axes_t<>{});                                                    \
  }                                                                                                                  \
  template <expression X, int... A>                                                                                  \
  auto n(X&& x, axes_t<A...> a) {                                                                                    \
    return detail::reduce<ops::op, false>(std::forward<X>(x), a);                                               \
  }                                                                                                                  \
  template <expression X, int... A>                                                                                  \
  auto n(X&& x, axes_t<A...> a, keepdims_t) {                                                                        \
    return detail::reduce<ops::op, true>(std::forward<X>(x), a);                                                \
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
TENFOLD_ELEMENTWISE(pow) TENFOLD_ELEMENTWISE(fmod) TENFOLD_ELEMENTWISE(atan2) TENFOLD_ELEMENTWISE(minimum)
TENFOLD_ELEMENTWISE(maximum) TENFOLD_ELEMENTWISE(eq) TENFOLD_ELEMENTWISE(ne) TENFOLD_ELEMENTWISE(lt)
TENFOLD_ELEMENTWISE(le) TENFOLD_ELEMENTWISE(gt) TENFOLD_ELEMENTWISE(ge) TENFOLD_ELEMENTWISE(logical_and)
TENFOLD_ELEMENTWISE(logical_or) TENFOLD_ELEMENTWISE(logical_xor)
TENFOLD_ELEMENTWISE(where) TENFOLD_ELEMENTWISE(clamp) TENFOLD_ELEMENTWISE(lerp)
TENFOLD_REDUCTION(sum, sum) TENFOLD_REDUCTION(mean, mean) TENFOLD_REDUCTION(prod, prod) TENFOLD_REDUCTION(max, max)
TENFOLD_REDUCTION(min, min) TENFOLD_REDUCTION(argmax, argmax) TENFOLD_REDUCTION(argmin, argmin)
TENFOLD_REDUCTION(any, any) TENFOLD_REDUCTION(all, all) TENFOLD_REDUCTION(var, var) TENFOLD_REDUCTION(std, stddev)
TENFOLD_REDUCTION(logsumexp, logsumexp) TENFOLD_REDUCTION(norm, norm)
#undef TENFOLD_ELEMENTWISE
#undef TENFOLD_REDUCTION

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
// Use eq / ne (elementwise) or all(eq(a, b)).
template <class A, class B>
concept operator_operands = operand<A> && operand<B> && (expression<A> || expression<B>);

template <class A, class B> requires operator_operands<A, B> auto operator+(A&& a, B&& b) { return add(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator-(A&& a, B&& b) { return sub(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator*(A&& a, B&& b) { return mul(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator/(A&& a, B&& b) { return div(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator<(A&& a, B&& b) { return lt(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator<=(A&& a, B&& b) { return le(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator>(A&& a, B&& b) { return gt(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator>=(A&& a, B&& b) { return ge(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator&&(A&& a, B&& b) { return logical_and(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires operator_operands<A, B> auto operator||(A&& a, B&& b) { return logical_or(std::forward<A>(a), std::forward<B>(b)); }
template <expression A> auto operator-(A&& a) { return neg(std::forward<A>(a)); }
template <expression A> auto operator!(A&& a) { return logical_not(std::forward<A>(a)); }
} // namespace tenfold
