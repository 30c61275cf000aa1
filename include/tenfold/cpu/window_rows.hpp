#pragma once
// Rows for pooling (included by cpu/rows.hpp, whose row types and make_row these use).
//
// Window rows. A reduction over a few trailing axes — max/mean over pooling's [.., OH, OW, KH, KW]
// windows — would otherwise be reduced one output at a time: a few scalar steps per output plus the
// loop around them. Here the outputs along the run (the last kept axis: OW in NCHW, C in NHWC) are the
// SIMD lanes: each reduced position is one row of the operand along that axis (a strided load:
// contiguous for NHWC, stride 2 with a permuting load for a stride-2 NCHW pool), and an output vector is
// `count` vector combines in registers, in the reduced positions' row-major order.
//
// Padded rows. A strided view of a pad walked along its last axis: the padded index moves by a fixed
// step per element, so the positions that fall inside the operand form one interval [lo, hi) of the
// run: the operand's own row there, the fill value outside, no bounds check per element.
#include <utility>

namespace tenfold::cpu {

// ---- padded rows -----------------------------------------------------------------------------------

template <class N>
constexpr bool padded_view() {
  if constexpr (plan::is_view_node_v<N>) return detail::is_strided_map_v<typename N::map_type> && detail::is_pad_node_v<typename N::child_type>;
  else return false;
}

// A leaf's row that keeps its offset as an integer: a position outside the operand (a padded one) is
// never turned into a pointer, only positions that are read.
template <class T, class L, index_t Stride>
struct offset_leaf_row {
  T* p;
  index_t off;
  TENFOLD_INLINE compute_t<std::remove_const_t<T>> scalar(index_t j) const {
    return static_cast<compute_t<std::remove_const_t<T>>>(p[off + j * Stride]);
  }
  TENFOLD_INLINE batch<L> load(index_t j) const { return leaf_row<T, L, Stride>{p + (off + j * Stride)}.load(0); }

  // Positions j .. j + lanes where only [lo, hi) is inside the operand (lo < hi): one hardware gather
  // with the outside lanes pointed at position lo, then the fill value blended in.
  using gather_row = leaf_row<T, L, Stride>;
  static constexpr bool gathers = std::is_same_v<std::remove_const_t<T>, L> && std::is_floating_point_v<L> && gather_row::has_gather_kernel;
  TENFOLD_INLINE batch<L> load_partial(index_t j, index_t lo, index_t hi, L fill) const
    requires gathers
  {
    using G = typename gather_row::gather_index;
    alignas(default_alignment) static constexpr auto iota = [] {
      std::array<G, lanes<L>> a{};
      for (index_t k = 0; k < lanes<L>; ++k) a[k] = G(k);
      return a;
    }();
    const auto pos = xsimd::batch<G>::load_aligned(iota.data()) + xsimd::batch<G>(G(j));
    const auto inside = xsimd::min(xsimd::max(pos, xsimd::batch<G>(G(lo))), xsimd::batch<G>(G(hi - 1)));
    const auto g = tenfold::simd::gather(static_cast<const L*>(p + (off + lo * Stride)), (inside - xsimd::batch<G>(G(lo))) * xsimd::batch<G>(G(Stride)));
    const auto posf = xsimd::batch_cast<L>(pos);
    return xsimd::select(posf >= batch<L>(L(lo)) && posf < batch<L>(L(hi)), g, batch<L>(fill));
  }
};

// make_row for the operand of a pad: the same rows, with leaves as offset_leaf_rows.
template <int K, class L, class N>
TENFOLD_INLINE auto make_offset_row(const N& n, const index_t* idx) {
  if constexpr (detail::is_leaf_v<N>) {
    index_t off = N::offset;
    for (int i = 0; i < K; ++i) off += idx[i] * N::strides[i];
    return offset_leaf_row<typename N::element_type, L, run_stride<N, K>()>{n.data(), off};
  } else if constexpr (detail::is_map_node_v<N>) {
    return detail::unpack(
        [idx](const auto&... c) {
          return map_row<typename N::op_type, typename N::value_type, L, decltype(make_offset_row<K, L>(c, idx))...>{
              {make_offset_row<K, L>(c, idx)...}};
        },
        n.args);
  } else {
    return make_row<K, L>(n, idx); // scalars, and nodes that compute each element from its index
  }
}

// Inner: the operand's row (read only inside [lo, hi)).
template <class Inner, class V, class L>
struct padded_row {
  Inner inner;
  index_t lo, hi;
  V fill;
  TENFOLD_INLINE V scalar(index_t j) const { return j >= lo && j < hi ? static_cast<V>(inner.scalar(j)) : fill; }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    if (j >= lo && j + lanes<L> <= hi) return inner.load(j);
    if (j + lanes<L> <= lo || j >= hi) return batch<L>(static_cast<L>(fill));
    if constexpr (requires { inner.load_partial(j, lo, hi, static_cast<L>(fill)); })
      return inner.load_partial(j, lo, hi, static_cast<L>(fill));
    alignas(default_alignment) L tmp[lanes<L>];
    for (index_t k = 0; k < lanes<L>; ++k) tmp[k] = static_cast<L>(fill);
    for (index_t k = std::max(j, lo); k < std::min(j + lanes<L>, hi); ++k) tmp[k - j] = static_cast<L>(inner.scalar(k));
    return batch<L>::load_aligned(tmp);
  }
};

TENFOLD_INLINE constexpr index_t floor_div(index_t a, index_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// Axis K of map M at output index idx (its last entry taken as 0), unrolled over constant coefficients.
template <class M, int K, int... I>
TENFOLD_INLINE index_t mapped_axis(const index_t* idx, std::integer_sequence<int, I...>) {
  constexpr int R = M::out_shape::rank;
  constexpr auto coef = detail::linear_coef<M>();
  return M::off[K] + (index_t(0) + ... + (coef[K * R + I] * idx[I]));
}

// Narrow [lo, hi) to the run positions j at which axis K of the padded index, v + S j, is inside the
// operand; v: that axis at j = 0.
template <class M, class P, int K>
TENFOLD_INLINE void clip_padded_axis(const index_t* idx, index_t& lo, index_t& hi) {
  constexpr int R = M::out_shape::rank;
  constexpr index_t S = detail::linear_coef<M>()[K * R + R - 1];
  constexpr index_t b = P::pads[2 * K], e = b + P::input_shape::dims[K];
  const index_t v = mapped_axis<M, K>(idx, std::make_integer_sequence<int, R - 1>{});
  if constexpr (S == 0) {
    if (v < b || v >= e) hi = lo;
  } else if constexpr (S > 0) { // b <= v + S j < e
    lo = std::max(lo, -floor_div(v - b, S));
    hi = std::min(hi, -floor_div(v - e, S));
  } else { // b <= v - |S| j < e
    lo = std::max(lo, floor_div(v - e, -S) + 1);
    hi = std::min(hi, floor_div(v - b, -S) + 1);
  }
}

// The view's map shifted into the operand's coordinates (minus the padding before each axis).
template <class M, class P>
constexpr std::array<index_t, P::rank> unpadded_offsets() {
  std::array<index_t, P::rank> o{};
  for (int k = 0; k < P::rank; ++k) o[k] = M::off[k] - P::pads[2 * k];
  return o;
}
template <class M, class P>
using unpadded_map = detail::linear_map<typename P::input_shape, typename M::out_shape, detail::canon(detail::linear_coef<M>()),
                                        detail::canon(unpadded_offsets<M, P>())>;

// N with each leaf that owns its storage (a temporary moved into the expression) replaced by one that
// refers to it: a row made from a copy of such a leaf would point into the copy.
template <class N>
auto borrowed(const N& n) {
  if constexpr (detail::is_leaf_v<N>) {
    if constexpr (detail::owns_storage_v<typename N::holder_type>) {
      using E = typename N::element_type;
      return detail::leaf<E, typename N::shape_type, N::strides, N::offset, detail::ref_holder<E>>{{}, {n.data()}};
    } else return n;
  } else if constexpr (detail::is_map_node_v<N> || detail::is_pad_node_v<N>) {
    return n.with_children(detail::unpack([](const auto&... c) { return detail::make_tuple(borrowed(c)...); }, detail::children(n)));
  } else return n;
}

// (Only for operands with cheap rows: leaves, scalars and maps of those hold no pointer to the view
// built here, which another node's row, a generic one, would.)
template <class L, class N>
auto make_padded_row(const N& n, const index_t* idx) {
  using M = typename N::map_type;
  using P = typename N::child_type;
  constexpr int R = N::rank;
  index_t lo = 0, hi = N::shape_type::dims[R - 1];
  [&]<int... K>(std::integer_sequence<int, K...>) { (clip_padded_axis<M, P, K>(idx, lo, hi), ...); }(std::make_integer_sequence<int, P::rank>{});
  if (hi < lo) hi = lo;
  const auto inner_view = detail::apply_view<unpadded_map<M, P>>(borrowed(n.arg.arg));
  using Inner = decltype(make_offset_row<R - 1, L>(inner_view, idx));
  return padded_row<Inner, compute_t<typename N::value_type>, L>{make_offset_row<R - 1, L>(inner_view, idx), lo, hi, n.arg.value};
}

// ---- window rows -----------------------------------------------------------------------------------
inline constexpr index_t window_reduce_max_count = 64;

// Reduced axes: exactly a non-empty suffix, with at least one kept axis before it.
template <int R, auto Mask>
constexpr bool reduces_trailing_axes() {
  int first = R;
  while (first > 0 && Mask[first - 1]) --first;
  for (int i = 0; i < first; ++i)
    if (Mask[i]) return false;
  return first >= 1 && first < R;
}

// Operands whose rows along any axis are cheap to make: leaves, scalars, elementwise trees of those,
// and strided views of pads of those. (Others — a row-fused reduction seen along another axis, a
// generator — would be computed element by element: the general reduction kernel is better there.)
template <class N>
constexpr bool cheap_rows() {
  if constexpr (detail::is_leaf_v<N> || detail::is_scalar_node_v<N>) return true;
  else if constexpr (detail::is_map_node_v<N>)
    return []<class... C>(detail::tuple<C...>*) { return (cheap_rows<C>() && ...); }(static_cast<decltype(N::args)*>(nullptr));
  else if constexpr (padded_view<N>()) return cheap_rows<typename N::child_type::child_type>();
  else return false;
}

// Rows of a strided view of a pad, and of a pad itself, where its operand has cheap rows (make_padded_row).
template <class N>
constexpr bool padded_view_rows() {
  if constexpr (padded_view<N>()) return cheap_rows<typename N::child_type::child_type>();
  else return false;
}
// (A pad itself: only of a tensor whose last axis is contiguous, the case measured and tested; pads of
// expressions or of strided views stay element by element. autodiff_views_test's overlapping pools
// crashed in offset_leaf_row::load_partial's gather for a pad of a sum of stride-4 views under ASan:
// not understood yet, see notes/training.md.)
template <class N>
constexpr bool bare_pad_rows() {
  if constexpr (detail::is_pad_node_v<N>) {
    using C = typename N::child_type;
    if constexpr (detail::is_leaf_v<C> && C::rank >= 1) return C::strides[C::rank >= 1 ? C::rank - 1 : 0] == 1;
    else return false;
  } else return false;
}

// A reduction read one row at a time with its outputs as lanes of L: a SIMD combine, reduced axes a
// short trailing suffix, a run at least one vector long, an operand with cheap rows.
template <class N, class L>
constexpr bool window_row_ok() {
  if constexpr (!detail::is_reduce_node_v<N>) return false;
  else {
    using I = typename N::input_t;
    using Op = typename N::op_type;
    if constexpr (N::keep || !std::is_same_v<I, L> || !lane_type_v<I> || !std::is_same_v<typename N::acc_type, I> ||
                  !std::is_same_v<compute_t<typename N::value_type>, I> || !simd_ok<typename N::child_type, I>::value)
      return false;
    else if constexpr (!requires(batch<I> b) { Op::simd_combine(b, b); }) return false;
    else
      return reduces_trailing_axes<N::child_type::rank, N::mask>() && N::count <= window_reduce_max_count && N::rank >= 1 &&
             N::shape_type::dims[N::rank >= 1 ? N::rank - 1 : 0] >= lanes<I> && cheap_rows<typename N::child_type>();
  }
}

// The operand with axis A moved last (a permutation: it folds into strides and composes with a window map).
template <int A, class S>
constexpr std::array<int, S::rank> move_last_src() {
  std::array<int, S::rank> src{};
  for (int j = 0; j < S::rank; ++j) src[j] = j < A ? j : j == A ? S::rank - 1 : j - 1;
  return src;
}
template <int A, class S>
constexpr detail::dims_t<S::rank> moved_last_dims() {
  detail::dims_t<S::rank> d{};
  for (int j = 0; j < S::rank; ++j) d[move_last_src<A, S>()[j]] = S::dims[j];
  return d;
}
template <class S>
constexpr std::array<index_t, S::rank> all_ones() {
  std::array<index_t, S::rank> a{};
  for (auto& v : a) v = 1;
  return a;
}
template <int A, class S>
using move_last_t = detail::affine_map<S, shape_from<moved_last_dims<A, S>()>, detail::canon(move_last_src<A, S>()),
                                       detail::canon(all_ones<S>()), detail::canon(std::array<index_t, S::rank>{})>;

// A pad itself, along its last axis: its identity view's padded row (the operand's own row inside, the
// fill outside), where element by element each value would check every axis (a conv weight gradient
// pads its input into a buffer: 4% of a CNN's training step that way).
template <class S>
constexpr std::array<int, S::rank> iota_axes() {
  std::array<int, S::rank> a{};
  for (int j = 0; j < S::rank; ++j) a[j] = j;
  return a;
}
template <class L, class N>
auto make_bare_pad_row(const N& n, const index_t* idx) {
  using S = typename N::shape_type;
  using M = detail::affine_map<S, S, detail::canon(iota_axes<S>()), detail::canon(all_ones<S>()), detail::canon(std::array<index_t, S::rank>{})>;
  using B = decltype(borrowed(n));
  return make_padded_row<L>(detail::view_node<M, B>{{}, borrowed(n)}, idx);
}

template <class Op, class I, index_t Count, class Row>
struct window_row {
  Row src[Count];
  TENFOLD_INLINE I scalar(index_t j) const {
    I acc = Op::template identity<I>();
    for (index_t p = 0; p < Count; ++p) acc = Op::combine(acc, static_cast<I>(src[p].scalar(j)), p);
    return static_cast<I>(Op::finalize(acc, Count));
  }
  TENFOLD_INLINE batch<I> load(index_t j) const {
    batch<I> acc(Op::template identity<I>());
    for (index_t p = 0; p < Count; ++p) acc = Op::simd_combine(acc, src[p].load(j));
    if constexpr (std::is_same_v<Op, ops::max> || std::is_same_v<Op, ops::min> || std::is_same_v<Op, ops::sum>) return acc;
    else if constexpr (std::is_same_v<Op, ops::mean>) return acc / batch<I>(I(Count)); // as finalize: a / n
    else {
      alignas(default_alignment) I lane[lanes<I>];
      acc.store_aligned(lane);
      for (auto& v : lane) v = static_cast<I>(Op::finalize(v, Count));
      return batch<I>::load_aligned(lane);
    }
  }
};

// The window row of reduction N at output index idx (idx[rank - 1] ignored): one operand row per
// reduced position, each along the output's last axis.
template <class L, class N>
auto make_window_row(const N& n, const index_t* idx) {
  using C = typename N::child_type;
  using CS = typename C::shape_type;
  constexpr int a = N::rank - 1, RC = C::rank;
  const auto moved = detail::apply_view<move_last_t<a, CS>>(n.arg);
  using Row = decltype(make_row<RC - 1, L>(moved, idx));
  window_row<typename N::op_type, L, N::count, Row> w;
  std::array<index_t, RC + 1> in{};
  for (int i = 0; i < a; ++i) in[i] = idx[i];
  constexpr auto dims = moved_last_dims<a, CS>();
  for (index_t p = 0; p < N::count; ++p) { // reduced positions in row-major order
    w.src[p] = make_row<RC - 1, L>(moved, in.data());
    for (int i = RC - 2; i >= a; --i) {
      if (++in[i] < dims[i]) break;
      in[i] = 0;
    }
  }
  return w;
}
} // namespace tenfold::cpu
