#pragma once
// A node's children, the one way every analysis reaches them. Each node kind declares its children
// once, as `args` (a tuple) or `arg` (one child) — a let as its `value` and `body`, a chain as its
// `value` and (the type of) its layers — and rebuilds itself
// over other children with `with_children(detail::tuple<...>)`, keeping its own data (a scale, a pad
// value). Leaves, scalars and generators have none. A node that declares neither is a compile error
// here, so a new node kind cannot be walked past silently.
#include <tuple>

#include "tenfold/core/chain.hpp"
#include "tenfold/core/expr.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::detail {

template <class N>
inline constexpr bool is_terminal_v = is_leaf_v<N> || is_scalar_node_v<N> || is_generator_node_v<N>;

template <class N>
struct unknown_node_kind {
  static_assert(sizeof(N) == 0, "tenfold: this node kind declares no children (`args`, `arg`, or a let's "
                                "`value` and `body`) and is not a leaf, scalar or generator: see core/children.hpp");
};

// The children of n as a tuple of references, forwarded (children(std::move(n)) moves them out).
template <class N>
constexpr auto children(N&& n) {
  using D = std::remove_cvref_t<N>;
  if constexpr (is_terminal_v<D>) return detail::tuple<>{};
  else if constexpr (requires { n.args; }) {
    return detail::unpack([](auto&&... c) { return detail::forward_as_tuple(std::forward<decltype(c)>(c)...); }, std::forward<N>(n).args);
  } else if constexpr (requires { n.arg; }) return detail::forward_as_tuple(std::forward<N>(n).arg);
  else if constexpr (is_let_node_v<D>) return detail::forward_as_tuple(std::forward<N>(n).value, std::forward<N>(n).body);
  else if constexpr (is_chain_node_v<D>) return detail::forward_as_tuple(std::forward<N>(n).value, std::forward<N>(n).bodies[0]);
  else return unknown_node_kind<D>{};
}

template <class R>
struct decayed_tuple;
template <class... C>
struct decayed_tuple<detail::tuple<C...>> {
  using type = detail::tuple<std::remove_cvref_t<C>...>;
};
// The children's types, as a tuple.
template <class N>
using children_t = typename decayed_tuple<decltype(children(std::declval<const N&>()))>::type;

// Does any node of the tree rooted at N (N included) satisfy Pred? Every analysis that looks for a
// kind of node anywhere in a tree is this fold over the declared children.
template <template <class> class Pred, class N>
constexpr bool any_node() {
  if constexpr (Pred<N>::value) return true;
  else return []<class... C>(detail::tuple<C...>*) { return (false || ... || any_node<Pred, C>()); }(static_cast<children_t<N>*>(nullptr));
}
} // namespace tenfold::detail
