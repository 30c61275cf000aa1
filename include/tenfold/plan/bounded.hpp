#pragma once
// Bounded extents (shape<upto<N>, ...>) in a tree to be evaluated: which nodes take them so far (a
// compile-time check that names the rest), and the run-time length the tree's bounded leaves share.
// Backend-independent: each evaluator asks these before it runs a tree.
#include "tenfold/core/children.hpp"
#include "tenfold/core/attention_node.hpp"
#include "tenfold/core/error.hpp"
#include "tenfold/core/gather_node.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/plan/fusion.hpp"

namespace tenfold::detail {
// Does a node have a bounded shape, or read a bounded tensor (a leaf over one, seen through a view)?
template <class N>
struct touches_bounded {
  static constexpr bool value = [] {
    if constexpr (is_leaf_v<N>) return N::shape_type::has_bounded || has_length<typename N::holder_type>;
    else return N::shape_type::has_bounded;
  }();
};

// What evaluates over an upto<N> extent so far: leaves, scalars, elementwise ops (with broadcasting),
// reductions (over the bounded axis, or keeping it anywhere), take/embedding at bounded indices, a matmul of a [upto<M>,
// K] matrix by a static one, attention over [..., upto<S>, D] queries (and keys), and views that carry
// the bounded axis on one to one. Anything else that meets one is refused by name at compile time.
template <class N>
struct refuses_bounded {
  static constexpr bool child_bounded =
      []<class... C>(detail::tuple<C...>*) { return (false || ... || C::shape_type::has_bounded); }(static_cast<children_t<N>*>(nullptr));
  static constexpr bool value = [] {
    // a view of a bounded tensor that drops the bound (a slice, a transpose, a reshape)
    // (or reverses it: a flip of the bounded axis would run from its capacity, not its length)
    if constexpr (is_leaf_v<N>)
      return has_length<typename N::holder_type> &&
             (!N::shape_type::has_bounded || N::strides[N::shape_type::has_bounded ? N::shape_type::bounded_axis : 0] < 0);
    else if constexpr (is_terminal_v<N> || is_map_node_v<N> || is_let_node_v<N>) return false;
    else if constexpr (is_reduce_node_v<N>) return false; // (over the bounded axis too: the count is the length's)
    // a lookup in a static source at indices of a bounded shape (an embedding of [upto<T>] token ids);
    // only the active indices are checked and read
    else if constexpr (is_take_node_v<N>) return N::source_shape::has_bounded;
    else if constexpr (is_attention_node_v<N>) { // [..., upto<S>, D]: bounded queries, keys bounded or static
      using Q = typename N::q_type::shape_type;
      using K = typename N::k_type::shape_type;
      using V = typename N::v_type::shape_type;
      return child_bounded && !(Q::bounded_axis == Q::rank - 2 && K::has_bounded == V::has_bounded &&
                                (!K::has_bounded || (K::bounded_axis == K::rank - 2 && V::bounded_axis == V::rank - 2)) &&
                                std::is_floating_point_v<compute_t<typename N::value_type>>);
    }
    else if constexpr (is_matmul_node_v<N>) // a matrix of a bounded number of rows times a static one
      return child_bounded && !(N::rank == 2 && N::a_type::rank == 2 && N::a_type::shape_type::bounded_axis == 0 &&
                                !N::b_type::shape_type::has_bounded);
    else if constexpr (plan::is_view_node_v<N>) {
      // a broadcast of a reduction's result back along its axes: the bounded axis maps to itself
      using M = typename N::map_type;
      using Out = typename N::shape_type;
      if constexpr (!is_reshape_map_v<M> && !is_affine_map_v<M>) return child_bounded || Out::has_bounded;
      else if constexpr (!M::in_shape::has_bounded) { // a static operand: fine broadcast along the bounded axis
        if constexpr (!is_affine_map_v<M> || !Out::has_bounded) return false;
        else {
          for (int j = 0; j < M::in_shape::rank; ++j) // (not read along it: no in-axis follows that out-axis)
            if (M::src[j] == Out::bounded_axis && M::scale[j] != 0) return true;
          return false;
        }
      } // a bounded operand: the bounded axis runs on, one to one (core/view.hpp)
      else return !(Out::has_bounded && follows_bounded_axis<M>() == Out::bounded_axis);
    }
    else return child_bounded || N::shape_type::has_bounded;
  }();
};
template <class N>
struct check_bounded_support {
  static_assert(!any_node<refuses_bounded, N>(),
                "tenfold: an upto<N> extent reaches an operation or a view that does not support bounded extents yet "
                "(so far: elementwise ops, broadcasting, reductions, take/embedding at "
                "bounded indices, matmul of [upto<M>, K] by a static matrix, attention over [..., upto<S>, D], and views "
                "that carry the bounded axis on one to one: slices and broadcasts of the other axes, permutations, "
                "reshapes of the other axes)");
  static constexpr bool ok = true;
};

// The run-time length of the bounded axis in n's leaves: every leaf that has one must agree.
template <class N>
void find_length(const N& n, index_t& length) {
  if constexpr (is_leaf_v<N>) {
    // (a let's placeholder reads its value, whose leaves are walked where the let is)
    if constexpr (N::reads_bounded && std::is_void_v<slot_of_t<N>>) {
      static_assert(has_length<typename N::holder_type>, "tenfold: an expression over an upto<N> extent needs an intermediate "
                                                         "buffer here (not supported yet for bounded extents)");
      if (length >= 0 && length != n.length())
        throw error(detail::message("tenfold::eval: operands of upto<", N::shape_type::dims[0], "> extents have different lengths (",
                                    length, " and ", n.length(), ")"));
      length = n.length();
    }
  } else if constexpr (!is_terminal_v<N>) {
    detail::unpack([&](const auto&... c) { (find_length(c, length), ...); }, children(n));
  }
}

} // namespace tenfold::detail
