#pragma once
// Reads at indices held in a tensor: take (NumPy's np.take with an axis; embedding is take along 0)
// and take_along_axis (NumPy's; torch.gather). Each is an opaque node of two children, the source and
// the indices, read element by element through `at`, so whatever consumes it (an addition, a
// layer_norm's row) runs in the same loop nest: an embedding lookup plus a position embedding plus a
// layer_norm is one nest, nothing materialised between them.
//
// The indices are a tensor of int32 or int64 (or a view of one): their values must be known before
// the nest runs, because every one is checked against the source's extent first (check_indices,
// called by the evaluator before it runs anything): an index out of range is a tenfold::error naming
// the index, its position and the extent, never a read out of bounds. Negative indices are out of
// range (as in PyTorch's embedding; NumPy's wrap-around is not taken).
#include <cstdint>
#include <string>
#include <tuple>

#include "tenfold/core/error.hpp"
#include "tenfold/core/expr.hpp"
#include "tenfold/core/children.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::detail {

// (The indices' extents as written: a bounded first axis of token ids, [upto<T>], gives an embedding of
// [upto<T>, D] rows.)
template <int Axis, class S, class I>
constexpr dims_t<S::rank + I::rank - 1> take_dims() {
  dims_t<S::rank + I::rank - 1> d{};
  int k = 0;
  for (int a = 0; a < Axis; ++a) d[k++] = S::dims[a];
  for (int a = 0; a < I::rank; ++a) d[k++] = I::extents[a];
  for (int a = Axis + 1; a < S::rank; ++a) d[k++] = S::dims[a];
  return d;
}

// Every value of the index leaf ids in [0, Extent), else a tenfold::error naming the index, its position,
// the axis and the extent (the check of take and of its adjoint, core/scatter_node.hpp). source() names
// the source in that message: called only then (a valid lookup allocates nothing). Indices of a bounded
// shape ([upto<T>]): the active ones, below length() on the bounded axis (the rest are never read).
template <index_t Extent, class Ids>
void check_index_values(const Ids& ids, const char* what, int axis, std::string (*source)()) {
  using IS = typename Ids::shape_type;
  index_t at_[IS::rank > 0 ? IS::rank : 1] = {};
  index_t count = IS::size;
  if constexpr (IS::has_bounded) count = active_part<IS>(IS::size, ids.length());
  for (index_t k = 0; k < count; ++k) {
    if constexpr (IS::has_bounded) unravel<IS>(active_at<IS>(k, ids.length()), at_);
    else unravel<IS>(k, at_);
    const auto v = ids.data()[ids.offset_of(at_)];
    if (v < 0 || v >= Extent) {
      std::string where;
      for (int a = 0; a < IS::rank; ++a) (where += a ? ", " : "") += std::to_string(at_[a]);
      throw error(message("tenfold::", what, ": index ", static_cast<long long>(v), " at [", where,
                          "] of the indices is out of range for axis ", axis, " of extent ", Extent, " (source ",
                          source(), ")"));
    }
  }
}

// Along = false: take. out[pre..., j..., post...] = src[pre..., idx[j...], post...]
// Along = true:  take_along_axis. out[i...] = src[i... with i[Axis] replaced by idx[i...]]
template <int Axis, bool Along, class Src, class Idx>
struct take_node : node_tag {
  using value_type = typename Src::value_type;
  using source_shape = typename Src::shape_type;
  using index_shape = typename Idx::shape_type;
  using shape_type = std::conditional_t<Along, index_shape, shape_from<take_dims<Axis, source_shape, index_shape>()>>;
  static constexpr int rank = shape_type::rank;
  static constexpr int axis = Axis;
  static constexpr bool along = Along;
  detail::tuple<Src, Idx> args;
  template <class S2, class I2>
  constexpr auto with_children(detail::tuple<S2, I2>&& c) const {
    return take_node<Axis, Along, S2, I2>{{}, std::move(c)};
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    index_t in[source_shape::rank];
    if constexpr (Along) {
      for (int a = 0; a < rank; ++a) in[a] = idx[a];
      in[Axis] = static_cast<index_t>(detail::get<1>(args).at(idx));
    } else {
      constexpr int r = index_shape::rank;
      for (int a = 0; a < Axis; ++a) in[a] = idx[a];
      in[Axis] = static_cast<index_t>(detail::get<1>(args).at(idx + Axis));
      for (int a = Axis + 1; a < source_shape::rank; ++a) in[a] = idx[a + r - 1];
    }
#ifdef __CUDA_ARCH__
    // The host checks indices it can read (check_indices); device indices (a token id written by an
    // earlier kernel, a CUDA graph's input) cannot be checked there: one out of range reads the
    // nearest row, never past the source.
    constexpr index_t extent = source_shape::dims[Axis];
    in[Axis] = in[Axis] < 0 ? 0 : in[Axis] >= extent ? extent - 1 : in[Axis];
#endif
    return detail::get<0>(args).at(in);
  }

  // Every index in [0, extent): called on the host before the nest runs (the indices are a leaf).
  void check_indices() const {
    check_index_values<source_shape::dims[Axis]>(detail::get<1>(args), Along ? "take_along_axis" : "take", Axis,
                                                 &Src::str);
  }
  static std::string str() {
    return std::string(Along ? "take_along_axis<" : "take<") + std::to_string(Axis) + ">(" + Src::str() + ", " +
           Idx::str() + ")";
  }
};

template <class E>
inline constexpr bool is_take_node_v = false;
template <int A, bool L, class S, class I>
inline constexpr bool is_take_node_v<take_node<A, L, S, I>> = true;
// A node whose indices are checked before anything runs: take, and its adjoint (core/scatter_node.hpp).
template <class N>
concept checks_indices = requires(const N& n) {
  n.check_indices();
};
template <class N>
struct is_take : std::bool_constant<checks_indices<N>> {};

// Checks every take node's indices in the tree (the evaluator calls this before it prepares the tree).
template <class N>
void check_take_indices(const N& n) {
  if constexpr (checks_indices<N>) n.check_indices();
  detail::unpack([](const auto&... c) { (check_take_indices(c), ...); }, children(n));
}

template <class S, class I, class T, int Axis, bool Along>
struct check_take {
  static constexpr bool index_type_ok = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
  static constexpr bool axis_ok = S::rank > 0 && Axis >= -S::rank && Axis < S::rank;
  static constexpr int axis = axis_ok ? (Axis < 0 ? Axis + S::rank : Axis) : 0;
  static constexpr bool along_ok = [] {
    if constexpr (!Along) return true;
    else {
      if (I::rank != S::rank) return false;
      for (int a = 0; a < S::rank; ++a)
        if (a != axis && I::dims[a] > S::dims[a]) return false;
      return true;
    }
  }();
  static_assert(index_type_ok, "tenfold::take/embedding/take_along_axis: the indices must be int32 or int64");
  static_assert(axis_ok, "tenfold::take/take_along_axis: axis out of range for the source (valid axes are -rank .. rank-1)");
  static_assert(along_ok, "tenfold::take_along_axis: the indices must have the source's rank and, on every other axis "
                          "than `axis`, at most its extent");
  static constexpr bool valid = index_type_ok && axis_ok && along_ok;
};

// The indices as a node: a tensor or a view of one (their values are checked before the nest runs).
template <class X>
constexpr bool index_leaf() {
  using N = node_t<X>;
  if constexpr (!is_leaf_v<N>) return false;
  else return std::is_void_v<slot_of_t<N>>;
}
} // namespace tenfold::detail
