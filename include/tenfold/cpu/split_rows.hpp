#pragma once
// Nests that read a reshape of [..., n/B, B] back to [..., n] under views that keep the last axis: RoPE's
// adjoint, whose halves [..., T, 2, D/2] (flipped, times rotate_half's sign) are read back as
// [..., T, D] and then permuted into the heads' layout [B, T, H, D]. Over [..., n] such an operand is no
// strided tensor: a reshape of a leaf is read in runs (reshaped_rows.hpp), one of a generator (the sign)
// element by element through its index maps, several ns each. The same nest over [..., n/B, B] is
// ordinary: each such reshape cancels, the views above it get the extra axis (they keep the last one,
// so it passes through), and what is left folds into leaves' strides. split_last<B> is that rewrite of
// the destination and the tree; the evaluator takes it where every node of the tree allows it.
#include "tenfold/core/expr.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/cpu/reshaped_rows.hpp"

namespace tenfold::cpu {
namespace split_detail {
// [..., n] -> [..., n / B, B]
template <index_t B, class S>
constexpr auto split_dims() {
  detail::dims_t<S::rank + 1> d{};
  for (int i = 0; i + 1 < S::rank; ++i) d[i] = S::dims[i];
  d[S::rank - 1] = S::dims[S::rank - 1] / B;
  d[S::rank] = B;
  return d;
}
template <index_t B, class S>
using split_t = shape_from<split_dims<B, S>()>;

// Does this reshape split its output's last axis off, In = [Out's leading axes..., a, b] (b > 1)? Its b.
template <class M>
consteval index_t splitting_reshape() {
  if constexpr (!detail::is_reshape_map_v<M>) return 0;
  else {
    using In = typename M::in_shape;
    using Out = typename M::out_shape;
    if constexpr (Out::rank < 1 || In::rank != Out::rank + 1 || Out::has_bounded || In::has_bounded) return 0;
    else {
      for (int i = 0; i + 1 < Out::rank; ++i)
        if (In::dims[i] != Out::dims[i]) return 0;
      const index_t b = In::dims[In::rank - 1];
      return b > 1 && In::dims[In::rank - 2] * b == Out::dims[Out::rank - 1] ? b : 0;
    }
  }
}

template <class N>
struct splits_as;
// B of the first splitting reshape in N (0: none)
template <class N>
consteval index_t factor() {
  if constexpr (detail::is_map_node_v<N>) return splits_as<N>::factor();
  else if constexpr (plan::is_view_node_v<N>) {
    if constexpr (constexpr index_t b = splitting_reshape<typename N::map_type>(); b > 0) return b;
    else return factor<typename N::child_type>();
  } else return 0;
}
// Can N be rewritten over split_t<B, shape>?
template <index_t B, class N>
consteval bool allows() {
  using S = typename N::shape_type;
  if constexpr (S::rank < 1 || S::has_bounded) return false;
  else if constexpr (S::dims[S::rank - 1] % B != 0) return false;
  else if constexpr (detail::is_leaf_v<N> || detail::is_scalar_node_v<N>) return true;
  else if constexpr (detail::is_map_node_v<N>) return splits_as<N>::template allows<B>();
  else if constexpr (plan::is_view_node_v<N>) {
    using M = typename N::map_type;
    if constexpr (splitting_reshape<M>() > 0) return splitting_reshape<M>() == B;
    else if constexpr (keeps_last_axis<M>()) return allows<B, typename N::child_type>();
    else return false;
  } else return false;
}
template <class Op, class... C>
struct splits_as<detail::map_node<Op, C...>> {
  static consteval index_t factor() {
    index_t b = 0;
    ((b = b > 0 ? b : split_detail::factor<C>()), ...);
    return b;
  }
  template <index_t B>
  static consteval bool allows() {
    return (split_detail::allows<B, C>() && ...);
  }
};

// The affine map M (keeping the last axis) with that axis split in both shapes: the new last axis reads
// the output's new last axis.
template <index_t B, class M>
struct split_affine {
  static constexpr int ri = M::in_shape::rank, ro = M::out_shape::rank;
  static constexpr auto src = [] {
    std::array<int, ri + 1> s{};
    for (int j = 0; j < ri; ++j) s[j] = M::src[j];
    s[ri] = ro;
    return s;
  }();
  static constexpr auto scale = [] {
    std::array<index_t, ri + 1> s{};
    for (int j = 0; j < ri; ++j) s[j] = M::scale[j];
    s[ri] = 1;
    return s;
  }();
  static constexpr auto off = [] {
    std::array<index_t, ri + 1> s{};
    for (int j = 0; j < ri; ++j) s[j] = M::off[j];
    return s;
  }();
  using type = detail::affine_map<split_t<B, typename M::in_shape>, split_t<B, typename M::out_shape>, src, scale, off>;
};
} // namespace split_detail

// The split factor the evaluator uses for a nest writing Dst from N: 0 where it does not apply.
template <class Dst, class N>
consteval index_t split_rows_factor() {
  constexpr index_t b = split_detail::factor<N>();
  if constexpr (b == 0) return 0;
  else return split_detail::allows<b, N>() && split_detail::allows<b, Dst>() ? b : 0;
}

// N over split_t<B, N's shape> (split_detail::allows<B, N>()).
template <index_t B, class N>
auto split_last(const N& n) {
  using S2 = split_detail::split_t<B, typename N::shape_type>;
  if constexpr (detail::is_leaf_v<N> || detail::is_scalar_node_v<N>) {
    return detail::apply_view<detail::reshape_map<typename N::shape_type, S2>>(n);
  } else if constexpr (detail::is_map_node_v<N>) {
    return detail::unpack([](const auto&... c) { return detail::map_node<typename N::op_type, decltype(split_last<B>(c))...>{{}, {split_last<B>(c)...}}; },
                          n.args);
  } else if constexpr (split_detail::splitting_reshape<typename N::map_type>() > 0) {
    return n.arg; // [..., n/B, B] already
  } else {
    return detail::apply_view<typename split_detail::split_affine<B, typename N::map_type>::type>(split_last<B>(n.arg));
  }
}
} // namespace tenfold::cpu
