#pragma once
// Block evaluation for expressions with a transposed operand: the output is produced W rows x W columns
// at a time (W = SIMD lanes). A leaf that is contiguous down the rows (a transpose) is read with W
// full-width loads and transposed in registers; every other leaf is read row by row as usual. Each
// node returns a block: W batches, one per output row.
#include "tenfold/cpu/rows.hpp"
#include "tenfold/cpu/transpose.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cpu {

template <class B>
using block = std::array<B, std::size_t(B::size)>;

// Strides of a leaf along the last two axes of the output.
template <class N>
inline constexpr index_t row_stride_v = N::rank >= 2 ? N::strides[N::rank >= 2 ? N::rank - 2 : 0] : 0;
template <class N>
inline constexpr index_t col_stride_v = N::rank >= 1 ? (N::shape_type::dims[N::rank - 1] == 1 ? 0 : N::strides[N::rank - 1]) : 0;

// A leaf read down its rows with unit stride: the case the block path exists for.
template <class N>
constexpr bool has_transposed_leaf() {
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == plan::nest_node::leaf) return N::rank >= 2 && row_stride_v<N> == 1 && col_stride_v<N> != 0 && col_stride_v<N> != 1;
  else if constexpr (kind == plan::nest_node::map)
    return []<class... C>(detail::tuple<C...>*) { return (has_transposed_leaf<C>() || ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // the block path reads leaves only; other kinds keep the row path
}

// An elementwise tree with a leaf that is strided along the last axis and contiguous along an axis
// before the last two, of at least W (a block's rows) elements (a permute that moves the innermost
// axis: [N, H, W, C] -> [C, H, W, N]): that axis, else -1. Swapping it with the rows' axis (swap_axes) relabels the nest into one whose blocks
// transpose that leaf in registers, the same assignment element for element.
template <class N, index_t W>
constexpr int transposed_axis() {
  if constexpr (detail::is_leaf_v<N>) {
    if constexpr (N::rank < 3 || N::shape_type::has_bounded || col_stride_v<N> == 0 || col_stride_v<N> == 1) return -1;
    else {
      for (int a = 0; a < N::rank - 2; ++a)
        if (N::strides[a] == 1 && N::shape_type::dims[a] >= W) return a;
      return -1;
    }
  } else if constexpr (detail::is_map_node_v<N>) {
    return []<class... C>(detail::tuple<C...>*) {
      int a = -1;
      ((a = a >= 0 ? a : transposed_axis<C, W>()), ...);
      return a;
    }(static_cast<decltype(N::args)*>(nullptr));
  } else return -1;
}
template <int A, int B, class S>
constexpr auto swapped_dims() {
  auto d = S::dims;
  const index_t t = d[A];
  d[A] = d[B], d[B] = t;
  return d;
}
// The same tree (leaves, scalars, elementwise ops) with axes A and B exchanged.
template <int A, int B, class N>
auto swap_axes(const N& n) {
  using S = shape_from<swapped_dims<A, B, typename N::shape_type>()>;
  if constexpr (detail::is_leaf_v<N>) {
    constexpr auto st = [] {
      auto s = N::strides;
      const index_t t = s[A];
      s[A] = s[B], s[B] = t;
      return s;
    }();
    return detail::leaf<typename N::element_type, S, detail::canon(st), N::offset, typename N::holder_type>{{}, n.holder};
  } else if constexpr (detail::is_scalar_node_v<N>) {
    return detail::scalar_node<typename N::value_type, S>{{}, n.value};
  } else {
    return detail::unpack(
        [](const auto&... c) { return detail::map_node<typename N::op_type, decltype(swap_axes<A, B>(c))...>{{}, {swap_axes<A, B>(c)...}}; },
        n.args);
  }
}

template <class T, class L, index_t RS, index_t CS>
struct leaf_block {
  T* p; // element (r0, 0) of the block row
  TENFOLD_INLINE block<batch<L>> load(index_t j) const {
    constexpr index_t w = lanes<L>;
    block<batch<L>> out;
    if constexpr (RS == 1 && CS != 0 && CS != 1 && std::is_same_v<std::remove_const_t<T>, L>) {
      for (index_t c = 0; c < w; ++c) out[c] = batch<L>::load_unaligned(p + (j + c) * CS);
      transpose_square(out);
    } else {
      for (index_t q = 0; q < w; ++q) out[q] = leaf_row<T, L, CS>{p + q * RS}.load(j);
    }
    return out;
  }
};

template <class T, class L>
struct scalar_block {
  batch<L> v;
  TENFOLD_INLINE block<batch<L>> load(index_t) const {
    block<batch<L>> out;
    out.fill(v);
    return out;
  }
};

template <class Op, class L, class... C>
struct map_block {
  detail::tuple<C...> children;
  TENFOLD_INLINE auto load(index_t j) const {
    return detail::unpack(
        [j](const auto&... c) {
          const auto in = detail::make_tuple(c.load(j)...);
          using B = decltype(detail::unpack([](const auto&... b) { return Op::simd(b[0]...); }, in));
          block<B> out;
          for (std::size_t q = 0; q < out.size(); ++q) out[q] = detail::unpack([q](const auto&... b) { return Op::simd(b[q]...); }, in);
          return out;
        },
        children);
  }
};

// Opaque nodes: one row at a time through the generic row.
template <class N, class L>
struct generic_block {
  const N* node;
  std::array<index_t, N::rank> idx;
  TENFOLD_INLINE block<batch<L>> load(index_t j) const {
    block<batch<L>> out;
    for (index_t q = 0; q < lanes<L>; ++q) {
      generic_row<N, N::rank - 1, L> r{node, idx};
      r.idx[N::rank - 2] += q;
      out[q] = r.load(j);
    }
    return out;
  }
};

// idx: the output index of the block's first row (last axis ignored).
template <class L, class N>
TENFOLD_INLINE auto make_block(const N& n, const index_t* idx) {
  constexpr int K = N::rank - 1;
  if constexpr (detail::is_leaf_v<N>) {
    index_t off = N::offset;
    for (int i = 0; i < K; ++i) off += idx[i] * N::strides[i];
    return leaf_block<typename N::element_type, L, row_stride_v<N>, col_stride_v<N>>{n.data() + off};
  } else if constexpr (detail::is_scalar_node_v<N>) {
    return scalar_block<typename N::value_type, L>{batch<L>(static_cast<L>(n.value))};
  } else if constexpr (detail::is_map_node_v<N>) {
    return detail::unpack(
        [idx](const auto&... c) { return map_block<typename N::op_type, L, decltype(make_block<L>(c, idx))...>{{make_block<L>(c, idx)...}}; },
        n.args);
  } else {
    generic_block<N, L> b{&n, {}};
    for (int i = 0; i < K; ++i) b.idx[i] = idx[i];
    return b;
  }
}
} // namespace tenfold::cpu
