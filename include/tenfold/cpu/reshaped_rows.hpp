#pragma once
// Rows of a reshape the walk could not fold into strides: reshape<...>(x) of a strided x whose axes do
// not merge (merging attention heads back, [B, H, T, D] permuted to [B, T, H, D] and reshaped to
// [B·T, H·D]; RoPE's halves, [..., 2, D/2] flipped and reshaped to [..., D]). Element by element through
// the view's index map (generic_row) such a copy ran at several ns per element. Here the view is read
// in runs of its source's innermost axis, which is contiguous: a vector of lanes that lies inside one
// such run is one load, one that straddles two runs is filled lane by lane.
//
// The shape handled: view_node<reshape_map, leaf> with the leaf's innermost stride 1, under any number of
// affine views that keep the last axis as it is (a permute of the other axes, a slice of them), so that
// consecutive elements of a row are consecutive elements of the reshape's output.
#include <array>

#include "tenfold/core/view.hpp"
#include "tenfold/cpu/rows.hpp"

namespace tenfold::cpu {

// Does the affine map M leave the last axis alone (input last = output last, no other input axis reads it)?
template <class M>
consteval bool keeps_last_axis() {
  if constexpr (!detail::is_affine_map_v<M>) return false;
  else {
    constexpr int ri = M::in_shape::rank, ro = M::out_shape::rank;
    if constexpr (ri == 0 || ro == 0) return false;
    else {
      if (M::src[ri - 1] != ro - 1 || M::scale[ri - 1] != 1 || M::off[ri - 1] != 0) return false;
      for (int j = 0; j + 1 < ri; ++j)
        if (M::src[j] == ro - 1) return false;
      return M::in_shape::dims[ri - 1] == M::out_shape::dims[ro - 1];
    }
  }
}

template <class N>
consteval bool reshaped_leaf() {
  if constexpr (!plan::is_view_node_v<N>) return false;
  else {
    using M = typename N::map_type;
    using C = typename N::child_type;
    if constexpr (detail::is_reshape_map_v<M>) {
      if constexpr (detail::is_leaf_v<C> && C::rank > 0) return C::strides[C::rank - 1] == 1 && C::shape_type::dims[C::rank - 1] > 1;
      else return false;
    } else return keeps_last_axis<M>() && reshaped_leaf<C>();
  }
}

template <class N, int K, class L>
struct reshaped_leaf_row {
  const N* node;
  std::array<index_t, N::rank> idx;

  // The element j of the row: its address, and its place in the source's innermost axis.
  template <class V>
  static TENFOLD_INLINE auto* find(const V& v, const index_t* out, index_t& pos) {
    using M = typename V::map_type;
    using C = typename V::child_type;
    std::array<index_t, C::rank> in{};
    M::map(out, in.data());
    if constexpr (detail::is_leaf_v<C>) {
      pos = in[C::rank - 1];
      return v.arg.data() + C::offset_of(in.data());
    } else {
      return find(v.arg, in.data(), pos);
    }
  }
  TENFOLD_INLINE auto* element(index_t j, index_t& pos) const {
    std::array<index_t, N::rank> i = idx;
    for (int a = N::rank - 1; a >= K; --a) {
      i[a] = j % N::shape_type::dims[a];
      j /= N::shape_type::dims[a];
    }
    return find(*node, i.data(), pos);
  }

  TENFOLD_INLINE compute_t<typename N::value_type> scalar(index_t j) const {
    index_t pos;
    return static_cast<compute_t<typename N::value_type>>(*element(j, pos));
  }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    constexpr index_t w = lanes<L>;
    index_t pos;
    auto* p = element(j, pos);
    using T = std::remove_pointer_t<decltype(p)>;
    if (pos + w <= run_length()) return leaf_row<T, L, 1>{p}.load(0);
    alignas(default_alignment) L tmp[w];
    for (index_t k = 0; k < w; ++k) tmp[k] = static_cast<L>(scalar(j + k));
    return batch<L>::load_aligned(tmp);
  }
  // The source's innermost extent: a run of consecutive elements in memory.
  static constexpr index_t run_length() {
    return innermost<N>();
  }
  template <class V>
  static constexpr index_t innermost() {
    if constexpr (detail::is_leaf_v<V>) return V::shape_type::dims[V::rank - 1];
    else return innermost<typename V::child_type>();
  }
};

template <int K, class L, class N>
auto make_reshaped_leaf_row(const N& n, const index_t* idx) {
  reshaped_leaf_row<N, K, L> r{&n, {}};
  for (int i = 0; i < K; ++i) r.idx[i] = idx[i];
  return r;
}
} // namespace tenfold::cpu
