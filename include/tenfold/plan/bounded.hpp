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
// reductions (over the bounded axis too), take/embedding at bounded indices, a matmul of a [upto<M>, K] matrix by a static one, and
// one head's attention over [upto<S>, D] queries (and keys). Anything else that meets one is refused by name at compile time.
template <class N>
struct refuses_bounded {
  static constexpr bool child_bounded =
      []<class... C>(detail::tuple<C...>*) { return (false || ... || C::shape_type::has_bounded); }(static_cast<children_t<N>*>(nullptr));
  static constexpr bool value = [] {
    // a view of a bounded tensor that drops the bound (a slice, a transpose, a reshape)
    // (or reverses it: a flip of the bounded axis would run from its capacity, not its length)
    if constexpr (is_leaf_v<N>) return has_length<typename N::holder_type> && (!N::shape_type::has_bounded || N::strides[0] < 0);
    else if constexpr (is_terminal_v<N> || is_map_node_v<N> || is_let_node_v<N>) return false;
    else if constexpr (is_reduce_node_v<N>) return false; // (over the bounded axis too: the count is the length's)
    // a lookup in a static source at indices of a bounded shape (an embedding of [upto<T>] token ids);
    // only the active indices are checked and read
    else if constexpr (is_take_node_v<N>) return N::source_shape::has_bounded;
    else if constexpr (is_attention_node_v<N>) { // one head, [upto<S>, D]: bounded queries, keys bounded or static
      using Q = typename N::q_type::shape_type;
      using K = typename N::k_type::shape_type;
      using V = typename N::v_type::shape_type;
      return child_bounded && !(N::rank == 2 && Q::rank == 2 && Q::has_bounded && K::has_bounded == V::has_bounded &&
                                std::is_floating_point_v<compute_t<typename N::value_type>>);
    }
    else if constexpr (is_matmul_node_v<N>) // a matrix of a bounded number of rows times a static one
      return child_bounded && !(N::rank == 2 && N::a_type::rank == 2 && N::a_type::shape_type::has_bounded &&
                                !N::b_type::shape_type::has_bounded);
    else if constexpr (plan::is_view_node_v<N>) {
      // a broadcast of a reduction's result back along its axes: the bounded axis maps to itself
      using M = typename N::map_type;
      if constexpr (is_reshape_map_v<M>) // (bounded in and out: it kept the first axis, core/view.hpp)
        return M::in_shape::has_bounded != N::shape_type::has_bounded;
      else if constexpr (!is_affine_map_v<M>) return child_bounded || N::shape_type::has_bounded;
      else if constexpr (!M::in_shape::has_bounded) { // a static operand: fine broadcast along the bounded axis
        for (int j = 0; j < M::in_shape::rank; ++j)  // (not read along it: no in-axis follows out-axis 0)
          if (M::src[j] == 0 && M::scale[j] != 0) return N::shape_type::has_bounded;
        return false;
      }
      else return !(N::shape_type::has_bounded && M::in_shape::dims[0] == N::shape_type::dims[0] && M::src[0] == 0 &&
                    M::scale[0] == 1 && M::off[0] == 0);
    }
    else return child_bounded || N::shape_type::has_bounded;
  }();
};
template <class N>
struct check_bounded_support {
  static_assert(!any_node<refuses_bounded, N>(),
                "tenfold: an upto<N> extent reaches an operation or a view that does not support bounded extents yet "
                "(so far: elementwise ops, broadcasting, reductions, take/embedding at bounded indices, matmul of [upto<M>, K] by a static matrix, and "
                "one head's attention over [upto<S>, D])");
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
