#pragma once
// Index maps and how they reach the leaves. A view never copies: it is an index map from the view's
// multi-index to its operand's. Affine maps (broadcast, permute, slice, flip, squeeze, unsqueeze) fold
// into a leaf's static strides; reshape folds too when NumPy's no-copy rule allows it. Elementwise nodes
// commute with every index map, so a view of `a + b` becomes `view(a) + view(b)`. Only views of opaque
// nodes (reductions, scans, pads, concats) stay as a `view_node` that maps indices element by element.
#include <optional>

#include "tenfold/core/expr.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::detail {

// What a view or reduction returns after its static_assert has reported a misuse: building nothing
// more keeps the compiler to one error message instead of a cascade.
struct invalid_view {};

// in[j] = off[j] + scale[j] * out[src[j]]   (src[j] < 0: the in-axis is pinned to off[j])
template <class In, class Out, std::array<int, In::rank> Src, std::array<index_t, In::rank> Scale,
          std::array<index_t, In::rank> Off>
struct affine_map {
  using in_shape = In;
  using out_shape = Out;
  static constexpr auto src = Src;
  static constexpr auto scale = Scale;
  static constexpr auto off = Off;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < In::rank; ++j) in[j] = Off[j] + Scale[j] * (Src[j] >= 0 ? out[Src[j]] : 0);
  }
  static constexpr auto compose_strides(const std::array<index_t, In::rank>& s) {
    std::array<index_t, Out::rank> r{};
    for (int j = 0; j < In::rank; ++j)
      if (Src[j] >= 0) r[Src[j]] += s[j] * Scale[j];
    return r;
  }
  static constexpr index_t compose_offset(const std::array<index_t, In::rank>& s) {
    index_t o = 0;
    for (int j = 0; j < In::rank; ++j) o += s[j] * Off[j];
    return o;
  }
};

// in[j] = off[j] + sum_k coef[j * Out::rank + k] * out[k]: an input axis may read several output axes
// (a sliding window reads h = oh * stride + kh * dilation). Affine maps are the special case of one
// nonzero per row; linear maps fold into a leaf's strides the same way.
template <class In, class Out, std::array<index_t, In::rank * Out::rank> Coef, std::array<index_t, In::rank> Off>
struct linear_map {
  using in_shape = In;
  using out_shape = Out;
  static constexpr auto coef = Coef;
  static constexpr auto off = Off;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < In::rank; ++j) {
      index_t v = Off[j];
      for (int k = 0; k < Out::rank; ++k) v += Coef[j * Out::rank + k] * out[k];
      in[j] = v;
    }
  }
  static constexpr auto compose_strides(const std::array<index_t, In::rank>& s) {
    std::array<index_t, Out::rank> r{};
    for (int j = 0; j < In::rank; ++j)
      for (int k = 0; k < Out::rank; ++k) r[k] += s[j] * Coef[j * Out::rank + k];
    return r;
  }
  static constexpr index_t compose_offset(const std::array<index_t, In::rank>& s) {
    index_t o = 0;
    for (int j = 0; j < In::rank; ++j) o += s[j] * Off[j];
    return o;
  }
};

// Row-major reshape: out multi-index -> linear -> in multi-index.
template <class In, class Out>
struct reshape_map {
  using in_shape = In;
  using out_shape = Out;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    index_t linear = 0;
    for (int i = 0; i < Out::rank; ++i) linear = linear * extent<Out>(i) + out[i];
    unravel<In>(linear, in);
  }
};

// NumPy's no-copy reshape rule: strides for the new extents if the old strided layout allows them.
template <std::size_t RO, std::size_t RN>
constexpr std::optional<std::array<index_t, RN>> reshape_strides(std::array<index_t, RO> od, std::array<index_t, RO> os,
                                                                 std::array<index_t, RN> nd) {
  std::array<index_t, RO> d{}, s{};
  std::size_t r = 0;
  for (std::size_t i = 0; i < RO; ++i) {
    if (od[i] == 0) return std::nullopt;
    if (od[i] != 1) d[r] = od[i], s[r] = os[i], ++r;
  }
  for (auto x : nd)
    if (x == 0) return std::nullopt;
  std::array<index_t, RN> ns{};
  std::size_t oi = 0, ni = 0;
  while (ni < RN && oi < r) {
    index_t np = nd[ni], op = d[oi];
    std::size_t nj = ni + 1, oj = oi + 1;
    while (np != op) {
      if (np < op) np *= nd[nj++];
      else op *= d[oj++];
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)
      if (s[k] != s[k + 1] * d[k + 1]) return std::nullopt;
    ns[nj - 1] = s[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    ni = nj, oi = oj;
  }
  for (; ni < RN; ++ni) ns[ni] = 0; // trailing extents of 1
  return ns;
}

// A view of an opaque node: maps each index and asks the operand.
template <class Map, class C>
struct view_node : node_tag {
  using map_type = Map;
  using child_type = C;
  using value_type = typename C::value_type;
  using shape_type = typename Map::out_shape;
  static constexpr int rank = shape_type::rank;
  C arg;
  template <class D>
  constexpr auto with_children(detail::tuple<D>&& c) const {
    return view_node<Map, D>{{}, detail::get<0>(std::move(c))};
  }
  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    index_t in[C::rank > 0 ? C::rank : 1];
    Map::map(idx, in);
    return arg.at(in);
  }
  static std::string str() { return "view(" + C::str() + ")"; }
};

// Affine maps are the index maps with a source-axis list. (Detected by that member: nvcc's front end
// does not match a partial specialization with `auto` parameters against affine_map's typed ones.)
template <class M>
inline constexpr bool is_affine_map_v = requires { M::src; typename M::in_shape; };
template <class M>
inline constexpr bool is_linear_map_v = requires { M::coef; typename M::in_shape; };
// Maps that fold into strides: a view of a view of these kinds is one map of the linear kind.
template <class M>
inline constexpr bool is_strided_map_v = is_affine_map_v<M> || is_linear_map_v<M>;
template <class M>
inline constexpr bool is_reshape_map_v = false;
template <class I, class O>
inline constexpr bool is_reshape_map_v<reshape_map<I, O>> = true;
template <class N>
inline constexpr bool is_reshape_view_v = false;
template <class I, class O, class C>
inline constexpr bool is_reshape_view_v<view_node<reshape_map<I, O>, C>> = true;

// (A function, not an `&&` in apply_view's condition: `if constexpr` does not short-circuit the
// instantiation, and a non-leaf has no strides.)
template <class D, class Out>
constexpr bool reshape_folds() {
  if constexpr (is_leaf_v<D>) return reshape_strides(D::shape_type::dims, D::strides, Out::dims).has_value();
  else return false;
}

// Two views in a row are one: affine maps compose into one affine map, reshapes into one reshape.
// A composition that maps every index to itself (transpose of a transpose) is no view at all.
template <class Outer, class Inner>
constexpr auto compose_affine() {
  constexpr int r = Inner::in_shape::rank;
  std::array<int, r> src{};
  std::array<index_t, r> scale{}, off{};
  for (int i = 0; i < r; ++i) {
    const int mid = Inner::src[i];
    src[i] = mid < 0 ? -1 : Outer::src[mid];
    scale[i] = src[i] < 0 ? 1 : Inner::scale[i] * Outer::scale[mid];
    off[i] = Inner::off[i] + (mid < 0 ? 0 : Inner::scale[i] * Outer::off[mid]);
  }
  return detail::make_tuple(src, scale, off);
}
template <class Outer, class Inner>
using composed_affine_t =
    affine_map<typename Inner::in_shape, typename Outer::out_shape, canon(detail::get<0>(compose_affine<Outer, Inner>())),
               canon(detail::get<1>(compose_affine<Outer, Inner>())), canon(detail::get<2>(compose_affine<Outer, Inner>()))>;

// Any strided map as a coefficient matrix and offsets, and the composition of two of them (the outer
// map feeds the inner one: in = off_i + C_i (off_o + C_o out)).
template <class M>
constexpr auto linear_coef() {
  constexpr int ri = M::in_shape::rank, ro = M::out_shape::rank;
  std::array<index_t, ri * ro> c{};
  if constexpr (is_linear_map_v<M>) c = M::coef;
  else
    for (int j = 0; j < ri; ++j)
      if (M::src[j] >= 0) c[j * ro + M::src[j]] = M::scale[j];
  return c;
}
template <class Outer, class Inner>
constexpr auto compose_linear() {
  constexpr int ri = Inner::in_shape::rank, rm = Inner::out_shape::rank, ro = Outer::out_shape::rank;
  constexpr auto ci = linear_coef<Inner>();
  constexpr auto co = linear_coef<Outer>();
  std::array<index_t, ri * ro> c{};
  std::array<index_t, ri> off{};
  for (int j = 0; j < ri; ++j) {
    off[j] = Inner::off[j];
    for (int m = 0; m < rm; ++m) {
      off[j] += ci[j * rm + m] * Outer::off[m];
      for (int k = 0; k < ro; ++k) c[j * ro + k] += ci[j * rm + m] * co[m * ro + k];
    }
  }
  return std::pair{c, off};
}
template <class Outer, class Inner>
using composed_linear_t = linear_map<typename Inner::in_shape, typename Outer::out_shape, canon(compose_linear<Outer, Inner>().first),
                                     canon(compose_linear<Outer, Inner>().second)>;

template <class Map>
constexpr bool is_identity_map() {
  using In = typename Map::in_shape;
  using Out = typename Map::out_shape;
  if constexpr (!std::is_same_v<In, Out>) return false;
  else if constexpr (is_affine_map_v<Map>) {
    for (int i = 0; i < In::rank; ++i)
      if (Map::src[i] != i || Map::scale[i] != 1 || Map::off[i] != 0) return false;
    return true;
  } else if constexpr (is_linear_map_v<Map>) {
    for (int j = 0; j < In::rank; ++j) {
      if (Map::off[j] != 0) return false;
      for (int k = 0; k < In::rank; ++k)
        if (Map::coef[j * In::rank + k] != (j == k)) return false;
    }
    return true;
  } else return true; // a reshape to the same shape
}

template <class E>
inline constexpr bool is_view_of_v = false;
template <class M, class C>
inline constexpr bool is_view_of_v<view_node<M, C>> = true;
// Is D a view whose map and Map are both affine (kind 1), both reshapes (kind 2), or both strided
// with at least one linear (kind 3)? (A function: `if constexpr` does not short-circuit the
// instantiation of D::map_type.)
template <class Map, class D>
constexpr int composable() {
  if constexpr (is_view_of_v<D>) {
    if constexpr (is_affine_map_v<Map> && is_affine_map_v<typename D::map_type>) return 1;
    else if constexpr (is_reshape_map_v<Map> && is_reshape_map_v<typename D::map_type>) return 2;
    else if constexpr (is_strided_map_v<Map> && is_strided_map_v<typename D::map_type>) return 3;
    else return 0;
  } else return 0;
}

// The out-axis of a view that runs along the bounded in-axis (upto<N>) one to one, or -1: a slice or
// broadcast of the other axes, a permutation (transpose, permute), a reshape of the other axes. Such a
// view keeps the bound: its out-shape, computed from the capacities, gets it back on that axis. (Any
// other view of a bounded operand keeps a static out-shape, and the evaluator refuses it.)
template <class Map>
constexpr int follows_bounded_axis() {
  using In = typename Map::in_shape;
  using Out = typename Map::out_shape;
  if constexpr (!In::has_bounded || Out::rank == 0) return -1;
  else {
    constexpr int b = In::bounded_axis;
    if constexpr (is_reshape_map_v<Map>) {
      // as many elements before it in both shapes, and the axis unchanged: index i of it is index i there
      index_t before = 1, p = 1;
      for (int i = 0; i < b; ++i) before *= In::dims[i];
      for (int c = 0; c < Out::rank; ++c) {
        if (p == before && Out::dims[c] == In::dims[b]) return c;
        p *= Out::dims[c];
      }
      return -1;
    } else if constexpr (is_affine_map_v<Map>) {
      constexpr int c = Map::src[b];
      if constexpr (c < 0) return -1;
      else return Map::scale[b] == 1 && Map::off[b] == 0 && Out::dims[c] == In::dims[b] ? c : -1;
    } else return -1;
  }
}
template <class Map>
constexpr bool keeps_bounded_axis() {
  if constexpr (Map::out_shape::has_bounded) return false; // (given already)
  else return follows_bounded_axis<Map>() >= 0;
}
template <class S, int C>
constexpr auto bounded_at(const std::array<index_t, S::rank>& extents) {
  auto e = extents;
  e[C] = upto<S::dims[C]>;
  return e;
}
template <class Map>
struct rebound {
  using type = Map;
};
template <class In, class Out, std::array<int, In::rank> Src, std::array<index_t, In::rank> Scale, std::array<index_t, In::rank> Off>
struct rebound<affine_map<In, Out, Src, Scale, Off>> {
  using type = affine_map<In, shape_from<bounded_at<Out, follows_bounded_axis<affine_map<In, Out, Src, Scale, Off>>()>(Out::extents)>, Src, Scale, Off>;
};
template <class In, class Out>
struct rebound<reshape_map<In, Out>> {
  using type = reshape_map<In, shape_from<bounded_at<Out, follows_bounded_axis<reshape_map<In, Out>>()>(Out::extents)>>;
};

template <class Map, class N>
constexpr auto apply_view_as(N&& node);
template <class Map, class N>
constexpr auto apply_view(N&& node) {
  if constexpr (keeps_bounded_axis<Map>()) return apply_view<typename rebound<Map>::type>(std::forward<N>(node));
  else return apply_view_as<Map>(std::forward<N>(node));
}

template <class Map, class N>
constexpr auto apply_view_as(N&& node) {
  using D = std::remove_cvref_t<N>;
  using Out = typename Map::out_shape;
  static_assert(std::is_same_v<typename D::shape_type, typename Map::in_shape>);
  if constexpr (is_scalar_node_v<D>) {
    return scalar_node<typename D::value_type, Out>{{}, node.value};
  } else if constexpr (is_map_node_v<D>) {
    return detail::unpack(
        [](auto&&... c) {
          return map_node<typename D::op_type, decltype(apply_view<Map>(std::forward<decltype(c)>(c)))...>{
              {}, {apply_view<Map>(std::forward<decltype(c)>(c))...}};
        },
        std::forward<N>(node).args);
  } else if constexpr (is_leaf_v<D> && is_strided_map_v<Map>) {
    return leaf<typename D::element_type, Out, canon(Map::compose_strides(D::strides)),
                D::offset + Map::compose_offset(D::strides), decltype(node.holder)>{{}, std::forward<N>(node).holder};
  } else if constexpr (is_reshape_map_v<Map> && reshape_folds<D, Out>()) {
    return leaf<typename D::element_type, Out, canon(*reshape_strides(D::shape_type::dims, D::strides, Out::dims)), D::offset,
                decltype(node.holder)>{{}, std::forward<N>(node).holder};
  } else if constexpr (is_identity_map<Map>()) {
    return D(std::forward<N>(node));
  } else if constexpr (composable<Map, D>() == 1) {
    return apply_view<composed_affine_t<Map, typename D::map_type>>(std::forward<N>(node).arg);
  } else if constexpr (composable<Map, D>() == 2) {
    return apply_view<reshape_map<typename D::map_type::in_shape, Out>>(std::forward<N>(node).arg);
  } else if constexpr (composable<Map, D>() == 3) {
    return apply_view<composed_linear_t<Map, typename D::map_type>>(std::forward<N>(node).arg);
  } else {
    return view_node<Map, D>{{}, std::forward<N>(node)};
  }
}

// ---- the affine views ----------------------------------------------------------------------------
template <class In, class Out>
constexpr auto expand_map_t() {
  constexpr int ri = In::rank, ro = Out::rank;
  constexpr auto src = [] {
    std::array<int, ri> s{};
    for (int j = 0; j < ri; ++j) s[j] = In::dims[j] == Out::dims[ro - ri + j] ? ro - ri + j : -1;
    return s;
  }();
  constexpr auto ones = [] { std::array<index_t, ri> a{}; for (auto& x : a) x = 1; return a; }();
  return affine_map<In, Out, canon(src), canon(ones), canon(std::array<index_t, ri>{})>{};
}

template <class In, class Out>
struct check_expand {
  static_assert(In::rank <= Out::rank && std::is_same_v<broadcast_shape_t<In, Out>, Out>,
                "tenfold: the source shape cannot be broadcast to the target shape (broadcast_to, or assigning "
                "an expression to a tensor or view of another shape)");
  static constexpr bool ok = true;
};

// Broadcast a node to shape Out (a no-op when it already has it).
template <class Out, class N>
auto expand_to(N&& node) {
  using In = typename std::remove_cvref_t<N>::shape_type;
  if constexpr (std::is_same_v<In, Out>) return std::remove_cvref_t<N>(std::forward<N>(node));
  else {
    static_assert(check_expand<In, Out>::ok);
    return apply_view<decltype(expand_map_t<In, Out>())>(std::forward<N>(node));
  }
}
} // namespace tenfold::detail
