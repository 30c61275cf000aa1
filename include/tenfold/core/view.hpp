#pragma once
// Index maps and how they reach the leaves. A view never copies: it is an index map from the view's
// multi-index to its operand's. Affine maps (broadcast, permute, slice, flip, squeeze, unsqueeze) fold
// into a leaf's static strides; reshape folds too when NumPy's no-copy rule allows it. Elementwise nodes
// commute with every index map, so a view of `a + b` becomes `view(a) + view(b)`. Only views of opaque
// nodes (reductions, scans, pads, concats) stay as a `view_node` that maps indices element by element.
#include <optional>

#include "tenfold/core/expr.hpp"

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

// Row-major reshape: out multi-index -> linear -> in multi-index.
template <class In, class Out>
struct reshape_map {
  using in_shape = In;
  using out_shape = Out;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    index_t linear = 0;
    for (int i = 0; i < Out::rank; ++i) linear = linear * Out::dims[i] + out[i];
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
  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    index_t in[C::rank > 0 ? C::rank : 1];
    Map::map(idx, in);
    return arg.at(in);
  }
  static std::string str() { return "view(" + C::str() + ")"; }
};

template <class M>
inline constexpr bool is_affine_map_v = false;
template <class I, class O, auto S, auto Sc, auto Of>
inline constexpr bool is_affine_map_v<affine_map<I, O, S, Sc, Of>> = true;
template <class M>
inline constexpr bool is_reshape_map_v = false;
template <class I, class O>
inline constexpr bool is_reshape_map_v<reshape_map<I, O>> = true;

// (A function, not an `&&` in apply_view's condition: `if constexpr` does not short-circuit the
// instantiation, and a non-leaf has no strides.)
template <class D, class Out>
constexpr bool reshape_folds() {
  if constexpr (is_leaf_v<D>) return reshape_strides(D::shape_type::dims, D::strides, Out::dims).has_value();
  else return false;
}

template <class Map, class N>
auto apply_view(N&& node) {
  using D = std::remove_cvref_t<N>;
  using Out = typename Map::out_shape;
  static_assert(std::is_same_v<typename D::shape_type, typename Map::in_shape>);
  if constexpr (is_scalar_node_v<D>) {
    return scalar_node<typename D::value_type, Out>{{}, node.value};
  } else if constexpr (is_map_node_v<D>) {
    return std::apply(
        [](auto&&... c) {
          return map_node<typename D::op_type, decltype(apply_view<Map>(std::forward<decltype(c)>(c)))...>{
              {}, {apply_view<Map>(std::forward<decltype(c)>(c))...}};
        },
        std::forward<N>(node).args);
  } else if constexpr (is_leaf_v<D> && is_affine_map_v<Map>) {
    return leaf<typename D::element_type, Out, canon(Map::compose_strides(D::strides)),
                D::offset + Map::compose_offset(D::strides), decltype(node.holder)>{{}, std::forward<N>(node).holder};
  } else if constexpr (is_reshape_map_v<Map> && reshape_folds<D, Out>()) {
    return leaf<typename D::element_type, Out, canon(*reshape_strides(D::shape_type::dims, D::strides, Out::dims)), D::offset,
                decltype(node.holder)>{{}, std::forward<N>(node).holder};
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
