#pragma once
// chain<N>(x, layer): x through N layers of one form. `layer(i, h)` gives layer i's output from the
// previous layer's output h (a placeholder, as in `let`), for i = 0 .. N-1; i is a run-time index, so
// layers differ in their weights (`w[i]`), not in their types. The layer's expression type is made
// once: a model of 48 layers compiles as fast as one layer and its type does not nest once per layer
// (which would exceed the compilers' template and constexpr depths near 30 layers). Each layer's
// output is one buffer, read by the next layer: the planner alternates two slots.
#include <array>
#include <type_traits>

#include "tenfold/core/error.hpp"
#include "tenfold/core/let.hpp"

namespace tenfold::detail {

template <class Tag, class V, class B, index_t N>
struct chain_node : node_tag {
  using tag_type = Tag;
  using value_node = V;
  using body_node = B;
  using value_type = typename B::value_type;
  using shape_type = typename B::shape_type;
  static constexpr int rank = shape_type::rank;
  static constexpr index_t layers = N;
  static constexpr bool in_place = let_node<Tag, V, B>::in_place; // the input: as a let's value
  V value;
  std::array<B, N> bodies{}; // layer i's expression, reading layer i-1's output (or the input)

  // The kinds of its children: the input and a layer (every layer has the same type).
  template <class V2, class B2>
  constexpr auto with_children(detail::tuple<V2, B2>&& c) const {
    chain_node<Tag, V2, B2, N> r{{}, detail::get<0>(std::move(c)), {}};
    for (auto& b : r.bodies) b = detail::get<1>(c);
    return r;
  }
  static std::string str() { return message("chain<", N, ">(", V::str(), ") of ", B::str()); }
};

template <class E>
inline constexpr bool is_chain_node_v = false;
template <class Tag, class V, class B, index_t N>
inline constexpr bool is_chain_node_v<chain_node<Tag, V, B, N>> = true;
} // namespace tenfold::detail

namespace tenfold {
template <index_t N, expression V, class F>
auto chain(V&& x, F&& layer) {
  static_assert(N >= 1, "tenfold::chain: needs at least one layer");
  auto v = detail::as_node(std::forward<V>(x));
  using VN = decltype(v);
  using P = detail::placeholder<typename VN::value_type, typename VN::shape_type, std::remove_cvref_t<F>>;
  static_assert(std::is_invocable_v<F&, index_t, P>, "tenfold::chain: a layer must be callable as layer(index, h)");
  using B = detail::node_t<std::invoke_result_t<F&, index_t, P>>;
  static_assert(std::is_same_v<typename B::shape_type, typename VN::shape_type> &&
                    std::is_same_v<typename B::value_type, typename VN::value_type>,
                "tenfold::chain: a layer must give a value of its input's shape and element type");
  detail::chain_node<std::remove_cvref_t<F>, VN, B, N> c{{}, std::move(v)};
  for (index_t i = 0; i < N; ++i) c.bodies[std::size_t(i)] = detail::as_node(layer(i, P{}));
  return c;
}
} // namespace tenfold
