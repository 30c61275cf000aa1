#pragma once
// What fuses and what materialises, decided from the expression type alone. Backends consult this;
// they do not decide it themselves.
//
// In an elementwise consumer:
//  - leaves, scalars, generators, elementwise nodes and index maps cost O(1) per element: fused;
//  - a reduction broadcast back along the axes it reduced, with its innermost axis reduced
//    (`x - max(x, axis<-1>, keepdims)`), is constant along each output row: computed once per row
//    into a local (row fusion): fused, no buffer;
//  - a reduction read directly (not broadcast), with its innermost axis reduced, is computed once per
//    element that reads it: each result is used once, so nothing is recomputed: fused, no buffer;
//  - a matmul or conv (GEMM-driven) whose result is consumed elementwise at its own shape, through
//    elementwise nodes only (relu(matmul(x, w) + b)), runs as the root: the consumer is applied to each
//    finished block of the GEMM in its store. Any other one materialises, and so does an operand of one
//    that is not a tensor or a view of one (the GEMM packs straight from memory);
//  - a node with leaf operands (core/leaf_operand_node.hpp: attention) runs its own kernel: it
//    materialises unless it is the root, and so does each of its operands that is not a tensor or a
//    view of one;
//  - any other reduction or scan would be recomputed for many elements (or read with a stride): it
//    materialises into a buffer first, which costs one more loop nest and is then read like a tensor.
#include "tenfold/core/conv_node.hpp"
#include "tenfold/core/leaf_operand_node.hpp"
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/view.hpp"

namespace tenfold::plan {

// A node that runs on the GEMM (matmul, conv): its operands must be strided leaves (materialised
// otherwise), and an elementwise consumer at its own shape runs in its store. The one trait the
// planner, the arena and the evaluators ask.
template <class N>
inline constexpr bool is_gemm_driven_v = detail::is_matmul_node_v<N> || detail::is_conv_node_v<N>;

template <class N>
inline constexpr bool is_heavy_v = detail::is_reduce_node_v<N> || detail::is_scan_node_v<N> || is_gemm_driven_v<N> ||
                                   detail::is_leaf_operand_node_v<N>;

// How many GEMM-driven nodes (matmuls, convs) are reachable from N through elementwise nodes alone.
template <class N>
constexpr int epilogue_matmuls() {
  if constexpr (is_gemm_driven_v<N>) return 1;
  else if constexpr (detail::is_map_node_v<N>)
    return []<class... C>(detail::tuple<C...>*) { return (0 + ... + epilogue_matmuls<C>()); }(static_cast<decltype(N::args)*>(nullptr));
  else return 0;
}
// An elementwise root over exactly one GEMM-driven node of its own shape: the GEMM drives, the root is its epilogue.
template <class N>
inline constexpr bool gemm_root_v = [] {
  if constexpr (is_gemm_driven_v<N>) return true;
  else if constexpr (detail::is_map_node_v<N>) return epilogue_matmuls<N>() == 1;
  else return false;
}();

template <class N>
inline constexpr bool is_view_node_v = false;
template <class M, class C>
inline constexpr bool is_view_node_v<detail::view_node<M, C>> = true;

// Does a reduction run over a bounded axis (upto<N>)? Its count is known only at run time, which only
// the reduction kernel at a root takes: such a reduction never fuses into its consumer's rows.
template <class R>
constexpr bool reduces_bounded_axis() {
  if constexpr (R::input_shape::rank == 0) return false;
  else return R::input_shape::has_bounded && R::mask[R::input_shape::has_bounded ? R::input_shape::bounded_axis : 0];
}

// A reduction seen through an affine broadcast, whose innermost input axis is reduced.
template <class N>
inline constexpr bool is_reduce_view_v = false;
template <class M, class C>
inline constexpr bool is_reduce_view_v<detail::view_node<M, C>> = [] {
  if constexpr (detail::is_reduce_node_v<C> && detail::is_affine_map_v<M>)
    return (C::input_shape::rank == 0 || C::mask[C::input_shape::rank - 1]) && !reduces_bounded_axis<C>();
  else return false;
}();

// Is N a reduction view that is constant along output axes [k, rank)? (No operand axis is read
// from them.)
template <class N>
constexpr bool constant_from(int k) {
  if constexpr (is_reduce_view_v<N>) {
    for (int j = 0; j < int(N::map_type::src.size()); ++j) {
      const int a = N::map_type::src[j];
      if (a >= k && N::shape_type::dims[a] != 1) return false;
    }
    return true;
  } else {
    return false;
  }
}

// Computed once per output row inside its consumer's loop nest.
template <class N>
inline constexpr bool row_fused_v = [] {
  if constexpr (is_reduce_view_v<N>) return constant_from<N>(N::rank > 0 ? N::rank - 1 : 0);
  else return false;
}();

// A reduction read directly, innermost axis reduced: each of its results is computed where it is read.
template <class N>
inline constexpr bool direct_fused_v = [] {
  if constexpr (detail::is_reduce_node_v<N>) return (N::input_shape::rank == 0 || N::mask[N::input_shape::rank - 1]) && !reduces_bounded_axis<N>();
  else return false;
}();

// What a stack of views is a view of: permute(reshape(matmul(...))) looks through to the matmul.
template <class N>
struct view_base {
  using type = N;
};
template <class M, class C>
struct view_base<detail::view_node<M, C>> {
  using type = typename view_base<C>::type;
};
template <class N>
using view_base_t = typename view_base<N>::type;

// Must be evaluated into a buffer before its consumer runs. For views of a heavy node it is the node
// that is buffered; the views are then applied to the buffer (and fold into its strides).
template <class N>
inline constexpr bool materializes_v = [] {
  if constexpr (direct_fused_v<N>) return false;
  else if constexpr (is_heavy_v<N>) return true;
  else if constexpr (is_view_node_v<N>) return is_heavy_v<view_base_t<N>> && !row_fused_v<N>;
  else return false;
}();

} // namespace tenfold::plan
