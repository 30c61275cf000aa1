#pragma once
// Compile-time rewrites. Every elementwise node is built through `rewrite_rule<Op, Operands...>`; a rule
// that applies builds something cheaper that computes the same values, so the rewrite is visible in
// the expression's type (tests/rewrite_test.cpp checks them with std::is_same):
//  - identities with compile-time constants: x * literal<1>, x + literal<0>, x - literal<0>,
//    x / literal<1>, pow(x, literal<1>) are x; pow(x, literal<2>) is square(x);
//  - online log-softmax: (x - max) - log(sum(exp(x - max))), the plain definition of log_softmax, keeps
//    its form but both row constants, max and log Σ exp(x - max), come from one pass over x (one
//    reduction instead of two): ops::shifted_logsumexp_part, two halves of one accumulation that a row
//    computes once, and which keeps the definition's IEEE results for ±inf and NaN. (x - lse(x), with
//    lse rounded once, rounds at the scale of the row's max: 2e-4 relative error on rows spanning ±1e4.)
//  - softmax, exp(x - max) / Σ exp(x - max), in the form the build machine's tuned table chooses for its
//    row length (ops/softmax_config.hpp): two-pass, the definition itself, run with E = exp(x - max) kept
//    in the output row (cpu/row_tee.hpp), one exp per element; or online, exp(x - M) * (1 / S) with M and
//    S the max and Σ exp(x - max) from one accumulation, two exps per element and no pass over the
//    output. Both keep exp(x - max)'s accuracy (~1e-7); exp(x - lse(x)) is not used: x - lse rounds at the
//    scale of |x|, so logits of magnitude ~100 lose ~1e-5 relative accuracy.
//  - a / r, r a reduction kept for broadcasting: a * reciprocal(r), one division per row.
// (Views are simplified where they are applied: core/view.hpp composes views of views.)
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/ops/table.hpp"
#include "tenfold/tuned/softmax_cpu.hpp"

namespace tenfold {

// literal<V>: a constant known at compile time (`x * literal<1>` is x itself, see make_map).
template <auto V>
struct literal_t {
  static constexpr auto value = V;
};
template <auto V>
inline constexpr literal_t<V> literal{};

namespace detail {
template <class X>
inline constexpr bool is_literal_v = false;
template <auto V>
inline constexpr bool is_literal_v<literal_t<V>> = true;
} // namespace detail

namespace detail {
template <class Op, class... X>
auto make_map_plain(X&&... x); // ops/api.hpp: the node without rewrites

// Compile-time rewrites of one elementwise op: x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 and x ** 1 are x
// (when that changes neither the shape nor the element type); x ** 2 is square(x).
template <auto V, class X>
constexpr bool literal_is() {
  if constexpr (is_literal_v<X>) return X::value == V;
  else return false;
}
template <class Op, class... X>
constexpr int identity_operand() {
  if constexpr (sizeof...(X) != 2) return -1;
  else {
    using A = std::remove_cvref_t<std::tuple_element_t<0, std::tuple<X...>>>;
    using B = std::remove_cvref_t<std::tuple_element_t<1, std::tuple<X...>>>;
    if constexpr (std::is_same_v<Op, ops::mul>) return literal_is<1, B>() ? 0 : literal_is<1, A>() ? 1 : -1;
    else if constexpr (std::is_same_v<Op, ops::add>) return literal_is<0, B>() ? 0 : literal_is<0, A>() ? 1 : -1;
    else if constexpr (std::is_same_v<Op, ops::sub>) return literal_is<0, B>() ? 0 : -1;
    else if constexpr (std::is_same_v<Op, ops::div> || std::is_same_v<Op, ops::pow>) return literal_is<1, B>() ? 0 : -1;
    else return -1;
  }
}

// The general rule: the identities above.
template <class Op, class... X>
struct rewrite_rule {
  static constexpr int kept = identity_operand<Op, X...>();
  static constexpr bool square = [] {
    if constexpr (std::is_same_v<Op, ops::pow> && sizeof...(X) == 2) return literal_is<2, std::tuple_element_t<1, std::tuple<X...>>>();
    else return false;
  }();
  // Only where the result keeps the plain node's shape and element type.
  static constexpr bool same_type() {
    if constexpr (kept < 0) return false;
    else {
      using Kept = node_t<std::tuple_element_t<kept, std::tuple<X...>>>;
      using Full = decltype(make_map_plain<Op>(std::declval<X>()...));
      return std::is_same_v<typename Kept::value_type, typename Full::value_type> &&
             std::is_same_v<typename Kept::shape_type, typename Full::shape_type>;
    }
  }
  static constexpr bool applies = square || same_type();
  template <class... Y>
  static auto apply(Y&&... y) {
    if constexpr (square) return make_map_plain<ops::square>(detail::get<0>(detail::forward_as_tuple(std::forward<Y>(y)...)));
    else return as_node(detail::get<kept>(detail::forward_as_tuple(std::forward<Y>(y)...)));
  }
};

// (x - max) - log Σ exp(x - max) over the axes of Mask, both constants from one accumulation.
template <class Mask_holder, class X>
auto online_log_softmax(const X& x) {
  using max_part = reduce_node<ops::shifted_logsumexp_part<ops::lse_part::max>, X, Mask_holder::value, true>;
  using log_sum_part = reduce_node<ops::shifted_logsumexp_part<ops::lse_part::log_sum>, X, Mask_holder::value, true>;
  return make_map_plain<ops::sub>(make_map_plain<ops::sub>(x, max_part{{}, x}), log_sum_part{{}, x});
}
template <auto Mask>
struct mask_holder {
  static constexpr auto value = Mask;
};

// a / r with r a reduction kept for broadcasting (softmax's sum, a mean): a * (1 / r). The reciprocal
// is computed once per row (cpu/rows.hpp folds row-constant subtrees), a multiply per element replaces
// a division (the division is as costly as an exp here); the result may differ from a / r in the last bit.
template <class A, class R>
struct reciprocal_rule {
  static constexpr bool applies = [] {
    if constexpr (!expression<A>) return false;
    else return is_floating_v<typename R::value_type> && std::is_same_v<typename node_t<A>::value_type, typename R::value_type>;
  }();
  template <class X, class Y>
  static auto apply(X&& a, Y&& r) {
    return make_map_plain<ops::mul>(std::forward<X>(a), make_map_plain<ops::reciprocal>(std::forward<Y>(r)));
  }
};
template <class A, class Op, class C, auto Mask>
struct rewrite_rule<ops::div, A, reduce_node<Op, C, Mask, true>> : reciprocal_rule<A, reduce_node<Op, C, Mask, true>> {
};

// softmax's two forms over the axes of Mask (ops/softmax_config.hpp), whatever the tuned table says.
template <class Mask_holder, class X>
auto softmax_two_pass(const X& x) {
  auto e =
      make_map_plain<ops::exp>(make_map_plain<ops::sub>(x, reduce_node<ops::max, X, Mask_holder::value, true>{{}, x}));
  return make_map_plain<ops::mul>(
      e, make_map_plain<ops::reciprocal>(reduce_node<ops::sum, decltype(e), Mask_holder::value, true>{{}, e}));
}
template <class Mask_holder, class X>
auto softmax_online(const X& x) {
  using max_part = reduce_node<ops::shifted_logsumexp_part<ops::lse_part::max>, X, Mask_holder::value, true>;
  using sum_part = reduce_node<ops::shifted_logsumexp_part<ops::lse_part::sum>, X, Mask_holder::value, true>;
  return make_map_plain<ops::mul>(make_map_plain<ops::exp>(make_map_plain<ops::sub>(x, max_part{{}, x})),
                                  make_map_plain<ops::reciprocal>(sum_part{{}, x}));
}
// The build machine's choice (tools/tune --write-softmax), or the default where it has no entry.
consteval softmax_config softmax_config_for() {
  for (const softmax_tuned_entry& e : tuned::softmax_cpu)
    if (e.machine == build_machine) return e.config;
  return {};
}
// Whether rows of `bytes` take the online form under `c`.
constexpr bool softmax_online_for(index_t bytes, softmax_config c) {
  return c.online_from_bytes > 0 && bytes >= c.online_from_bytes;
}

// softmax's definition, exp(x - max) / Σ exp(x - max): online over rows the build machine's table says
// it wins on, else a * (1 / r) like any other quotient by a kept reduction.
template <class X, class M, auto Mask>
struct rewrite_rule<
    ops::div, map_node<ops::exp, map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>>,
    reduce_node<ops::sum, map_node<ops::exp, map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>>,
                Mask, true>> {
  using E = map_node<ops::exp, map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>>;
  using R = reduce_node<ops::sum, E, Mask, true>;
  static constexpr bool online =
      is_floating_v<typename R::value_type> &&
      softmax_online_for(R::count * index_t(sizeof(typename R::value_type)), softmax_config_for());
  static constexpr bool applies = online || reciprocal_rule<E, R>::applies;
  template <class A, class B>
  static auto apply(A&& e, B&& r) {
    if constexpr (online) return softmax_online<mask_holder<Mask>>(detail::get<0>(detail::get<0>(e.args).args));
    else return reciprocal_rule<E, R>::apply(std::forward<A>(e), std::forward<B>(r));
  }
};

// log_softmax: (x - max) - log(sum(exp(x - max))) -> (x - M) - L, M and L from one online pass.
template <class X, class M, auto Mask>
struct rewrite_rule<ops::sub, map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>,
                    map_node<ops::log, reduce_node<ops::sum, map_node<ops::exp, map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>>, Mask, true>>> {
  using S = map_node<ops::sub, X, view_node<M, reduce_node<ops::max, X, Mask, true>>>;
  static auto build(const S& s) { return online_log_softmax<mask_holder<Mask>>(detail::get<0>(s.args)); }
  static constexpr bool applies = std::is_same_v<typename decltype(build(std::declval<const S&>()))::value_type, typename S::value_type>;
  template <class A, class B>
  static auto apply(A&& s, B&&) {
    return build(s);
  }
};
} // namespace detail
} // namespace tenfold
