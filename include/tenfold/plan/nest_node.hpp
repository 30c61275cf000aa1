#pragma once
// The node kinds a loop nest runs, after the walk (plan/walk.hpp) has taken lets, chains and every
// materialised node out of it. Every analysis over a nest's tree (the CPU's row and block paths, the
// CUDA kernels) asks `nest_kind_v<N>` first, so a node kind none of them knows is a compile error
// naming it here, not a silent default in each.
#include "tenfold/core/gather_node.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/plan/fusion.hpp"

namespace tenfold::plan {

enum class nest_node {
  leaf,        // a tensor, a view folded into its strides, or a buffer of the walk
  scalar,      // a number, the same for every element
  generator,   // a value computed from the element's index (arange, Philox draws)
  map,         // an elementwise op over its children
  reduce_view, // a reduction broadcast back along what it reduced (softmax's max): fused in the rows
  reduction,   // a reduction read directly, its innermost input axis reduced: one result per element
  view,        // a view the walk could not fold (of a pad or concat): reads through its map
  pad,         // a padded child
  concat,      // children side by side along an axis
  take,        // a source read at indices from a tensor (take, embedding, take_along_axis): by index
  block,       // a result the backend hands to the nest (a finished GEMM or convolution block)
  by_index,    // a GEMM-driven node computed one element at a time from its index (integer types)
};

template <class N>
struct unknown_to_the_nest {
  static_assert(sizeof(N) == 0, "tenfold: this node kind is unknown to the loop nests: classify it in plan/nest_node.hpp "
                                "and say in each nest analysis what it does with it");
};

template <class N>
consteval nest_node nest_kind() {
  if constexpr (detail::is_leaf_v<N>) return nest_node::leaf;
  else if constexpr (detail::is_scalar_node_v<N>) return nest_node::scalar;
  else if constexpr (detail::is_generator_node_v<N>) return nest_node::generator;
  else if constexpr (detail::is_map_node_v<N>) return nest_node::map;
  else if constexpr (is_reduce_view_v<N>) return nest_node::reduce_view;
  else if constexpr (detail::is_reduce_node_v<N>) return nest_node::reduction;
  else if constexpr (is_view_node_v<N>) return nest_node::view;
  else if constexpr (detail::is_pad_node_v<N>) return nest_node::pad;
  else if constexpr (detail::is_concat_node_v<N>) return nest_node::concat;
  else if constexpr (detail::is_take_node_v<N>) return nest_node::take;
  else if constexpr (requires { N::nest_block; }) return nest_node::block;
  else if constexpr (is_gemm_driven_v<N>) return nest_node::by_index;
  else return (unknown_to_the_nest<N>{}, nest_node::leaf);
}
template <class N>
inline constexpr nest_node nest_kind_v = nest_kind<N>();

} // namespace tenfold::plan
