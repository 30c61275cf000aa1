#pragma once
// matmul(a, b): [..., M, K] x [..., K, N] -> [..., M, N], batch axes broadcast as in NumPy. A node like
// the others: it holds its operands, and `at` computes one element (the device and fallback path);
// the CPU evaluator runs a packed, blocked GEMM and fuses elementwise consumers into its store.
#include "tenfold/core/expr.hpp"

namespace tenfold::detail {

// The user's shapes, before a vector operand (rank 1, NumPy's rule: ops/linear.hpp) becomes a matrix.
template <class A, class B>
struct check_matmul {
  static constexpr bool ranks_ok = A::rank >= 1 && B::rank >= 1;
  static_assert(ranks_ok, "tenfold::matmul: operands need rank >= 1 (rank 0 is a number: multiply instead)");
  static constexpr bool inner_ok = !ranks_ok || A::dims[A::rank >= 1 ? A::rank - 1 : 0] == B::dims[B::rank >= 2 ? B::rank - 2 : 0];
  static_assert(inner_ok, "tenfold::matmul: inner dimensions differ (the last extent of the first operand must equal "
                          "the second-to-last of the second, or its only one if it is a vector)");
  static constexpr bool valid = ranks_ok && inner_ok;
};

// Batch shapes: everything but the last two axes.
template <class S>
constexpr auto batch_dims() {
  dims_t<(S::rank > 2 ? S::rank - 2 : 0)> d{};
  for (int i = 0; i + 2 < S::rank; ++i) d[i] = S::extents[i];
  return d;
}

template <class A, class B>
constexpr auto matmul_dims() {
  using BA = shape_from<batch_dims<A>()>;
  using BB = shape_from<batch_dims<B>()>;
  using BS = broadcast_shape_t<BA, BB>;
  dims_t<BS::rank + 2> d{};
  for (int i = 0; i < BS::rank; ++i) d[i] = BS::dims[i];
  d[BS::rank] = A::extents[A::rank - 2]; // (rows of a bounded length stay bounded)
  d[BS::rank + 1] = B::dims[B::rank - 1];
  return d;
}

template <class CA, class CB>
struct matmul_node : node_tag {
  using a_type = CA;
  using b_type = CB;
  using value_type = promote_t<typename CA::value_type, typename CB::value_type>;
  using shape_type = shape_from<matmul_dims<typename CA::shape_type, typename CB::shape_type>()>;
  static constexpr int rank = shape_type::rank;
  static constexpr index_t M = CA::shape_type::dims[CA::rank - 2], K = CA::shape_type::dims[CA::rank - 1],
                           N = CB::shape_type::dims[CB::rank - 1];
  detail::tuple<CA, CB> args;
  // The same node over other operands (the walk prepares them into strided leaves).
  template <class... C>
  constexpr auto with_children(detail::tuple<C...>&& c) const {
    return matmul_node<C...>{{}, std::move(c)};
  }

  // Operand multi-index for output index `out` (batch axes broadcast from the right).
  template <class S>
  TENFOLD_HD static void operand_index(const index_t* out, index_t row, index_t col, index_t* in) {
    for (int i = 0; i + 2 < S::rank; ++i) {
      const int o = rank - S::rank + i;
      in[i] = extent<S>(i) == 1 ? 0 : out[o];
    }
    in[S::rank - 2] = row;
    in[S::rank - 1] = col;
  }
  TENFOLD_HD compute_t<value_type> at(const index_t* out) const { return partial_at(out, 0, 1); }
  // The terms k = first, first + step, ... of the element's sum (a group of threads shares one output
  // this way on the GPU).
  TENFOLD_HD compute_t<value_type> partial_at(const index_t* out, index_t first, index_t step) const {
    index_t ia[CA::rank], ib[CB::rank];
    compute_t<value_type> acc{};
    for (index_t k = first; k < K; k += step) {
      operand_index<typename CA::shape_type>(out, out[rank - 2], k, ia);
      operand_index<typename CB::shape_type>(out, k, out[rank - 1], ib);
      acc += static_cast<compute_t<value_type>>(detail::get<0>(args).at(ia)) *
             static_cast<compute_t<value_type>>(detail::get<1>(args).at(ib));
    }
    return acc;
  }
  static std::string str() { return "matmul(" + CA::str() + ", " + CB::str() + ")"; }
};

template <class E>
inline constexpr bool is_matmul_node_v = false;
template <class A, class B>
inline constexpr bool is_matmul_node_v<matmul_node<A, B>> = true;
} // namespace tenfold::detail
