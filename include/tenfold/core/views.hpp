#pragma once
// User-facing views: reshape, permute, transpose, broadcast_to, slice, flip, squeeze, unsqueeze.
// Each is an index map folded into the operand (see core/view.hpp); none copies.
#include <limits>

#include "tenfold/core/view.hpp"

namespace tenfold {
namespace detail {
template <class X>
using shape_of_t = typename node_t<X>::shape_type;

template <class In, index_t... N>
struct reshape_target {
  static constexpr int holes = ((N == -1) + ... + 0);
  static_assert(holes <= 1, "tenfold::reshape: at most one extent may be -1");
  static_assert(((N == -1 || N >= 0) && ...), "tenfold::reshape: extents must be non-negative (or one -1)");
  static constexpr index_t known = ((N == -1 ? 1 : capacity_of(N)) * ... * index_t(1)); // (upto<M>: its capacity)
  static_assert(holes == 0 || (known > 0 && In::size % known == 0),
                "tenfold::reshape: the -1 extent cannot be inferred: the known extents do not divide the size");
  using type = shape<(N == -1 ? In::size / (known ? known : 1) : N)...>;
  static_assert(type::size == In::size, "tenfold::reshape: the new shape must have the same number of elements");
};
} // namespace detail

// reshape<2, -1>(x): row-major, one extent may be -1. Free when the operand's layout allows (NumPy's rule).
template <index_t... N, expression X>
auto reshape(X&& x) {
  using In = detail::shape_of_t<X>;
  using Out = typename detail::reshape_target<In, N...>::type;
  if constexpr (std::is_same_v<In, Out> || In::size != Out::size) // (a size mismatch is reported above, once)
    return detail::as_node(std::forward<X>(x));
  else return detail::apply_view<detail::reshape_map<In, Out>>(detail::as_node(std::forward<X>(x)));
}

namespace detail {
// Extents after merging axes [a, b] into one.
template <class In, int Start, int End>
constexpr auto flattened_dims() {
  static_assert(check_axes<In, Start>::ok && check_axes<In, End>::ok);
  constexpr int a = normalize_axis(Start, In::rank), b = normalize_axis(End, In::rank);
  static_assert(a <= b, "tenfold::flatten<Start, End>: Start must not come after End");
  dims_t<In::rank - (b - a)> d{};
  for (int i = 0, k = 0; i < In::rank; ++i) {
    if (i <= a || i > b) d[k++] = In::dims[i];
    else d[k - 1] *= In::dims[i];
  }
  return d;
}
} // namespace detail

// flatten(x): x as one axis, row-major (a 0-d x gives one element). flatten<Start, End>(x) merges only
// axes Start..End, inclusive and negative from the end, as torch.flatten. A reshape: no copy where
// reshape needs none (a contiguous tensor's flatten is a leaf over its elements).
template <int Start = 0, int End = -1, expression X>
auto flatten(X&& x) {
  using In = detail::shape_of_t<X>;
  if constexpr (In::rank == 0) return reshape<1>(std::forward<X>(x));
  else {
    static constexpr auto d = detail::flattened_dims<In, Start, End>();
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return reshape<d[I]...>(std::forward<X>(x)); }(
        std::make_index_sequence<d.size()>{});
  }
}

namespace detail {
template <class In, int... P>
struct check_permutation {
  static constexpr bool valid = [] {
    if (sizeof...(P) != In::rank) return false;
    std::array<bool, sizeof...(P)> seen{};
    for (int p : {P...}) {
      const int a = p < 0 ? p + In::rank : p;
      if (a < 0 || a >= In::rank || seen[a]) return false;
      seen[a] = true;
    }
    return true;
  }();
  static_assert(valid, "tenfold::permute: the axes must be a permutation of 0 .. rank-1 (one entry per axis)");
};
template <class In, int... P>
constexpr auto permute_map() {
  constexpr std::array<int, In::rank> p{(P < 0 ? P + In::rank : P)...};
  constexpr auto out = [&] { dims_t<In::rank> d{}; for (int i = 0; i < In::rank; ++i) d[i] = In::dims[p[i]]; return d; }();
  constexpr auto src = [&] { std::array<int, In::rank> s{}; for (int i = 0; i < In::rank; ++i) s[p[i]] = i; return s; }();
  constexpr auto ones = [] { std::array<index_t, In::rank> a{}; for (auto& v : a) v = 1; return a; }();
  return affine_map<In, shape_from<out>, canon(src), canon(ones), canon(std::array<index_t, In::rank>{})>{};
}
} // namespace detail

// permute<2, 0, 1>(x): output axis i is input axis P[i].
template <int... P, expression X>
auto permute(X&& x) {
  if constexpr (!detail::check_permutation<detail::shape_of_t<X>, P...>::valid) return detail::invalid_view{};
  else {
    using Map = decltype(detail::permute_map<detail::shape_of_t<X>, P...>());
    return detail::apply_view<Map>(detail::as_node(std::forward<X>(x)));
  }
}

// transpose(x) reverses the axes (a matrix transpose for rank 2); swapaxes<a, b>(x) exchanges two.
template <expression X>
auto transpose(X&& x) {
  constexpr int r = detail::shape_of_t<X>::rank;
  return [&]<int... I>(std::integer_sequence<int, I...>) { return permute<(r - 1 - I)...>(std::forward<X>(x)); }(
      std::make_integer_sequence<int, r>{});
}
template <int A, int B, expression X>
auto swapaxes(X&& x) {
  using S = detail::shape_of_t<X>;
  static_assert(detail::check_axes<S, A>::ok && detail::check_axes<S, B>::ok);
  constexpr int a = detail::normalize_axis(A, S::rank), b = detail::normalize_axis(B, S::rank);
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return permute<(I == a ? b : I == b ? a : I)...>(std::forward<X>(x));
  }(std::make_integer_sequence<int, S::rank>{});
}

template <class Out, expression X>
auto broadcast_to(X&& x) {
  static_assert(is_shape_v<Out>, "tenfold::broadcast_to<S>: S must be tenfold::shape<...>");
  return detail::expand_to<Out>(detail::as_node(std::forward<X>(x)));
}

// ---- slice -----------------------------------------------------------------------------------------
inline constexpr index_t none = std::numeric_limits<index_t>::min();
// Python's slice semantics per axis: negative indices count from the end, bounds clamp, step may be
// negative (then the defaults run from the end backwards). Missing trailing axes are taken whole.
template <index_t Begin = none, index_t End = none, index_t Step = 1>
struct range {
  static_assert(Step != 0, "tenfold::range: step must not be zero");
  static constexpr index_t begin = Begin, end = End, step = Step;
};
using whole = range<>; // the full axis, like `:` in NumPy

namespace detail {
struct slice_axis {
  index_t start, length, step;
};
constexpr slice_axis resolve(index_t b, index_t e, index_t s, index_t n) {
  auto clamp = [&](index_t v, index_t lo, index_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  if (s > 0) {
    b = b == none ? 0 : clamp(b < 0 ? b + n : b, 0, n);
    e = e == none ? n : clamp(e < 0 ? e + n : e, 0, n);
    return {b, e > b ? (e - b + s - 1) / s : 0, s};
  }
  b = b == none ? n - 1 : clamp(b < 0 ? b + n : b, -1, n - 1);
  e = e == none ? -1 : clamp(e < 0 ? e + n : e, -1, n - 1);
  return {b, b > e ? (b - e - s - 1) / -s : 0, s};
}
template <class In, class... Ranges>
constexpr auto slice_map() {
  static_assert(sizeof...(Ranges) <= In::rank, "tenfold::slice: more ranges than axes");
  constexpr int r = In::rank;
  constexpr auto axes = [&] {
    std::array<slice_axis, r> a{};
    constexpr index_t b[] = {Ranges::begin..., 0}, e[] = {Ranges::end..., 0}, s[] = {Ranges::step..., 0};
    for (int i = 0; i < r; ++i)
      a[i] = i < int(sizeof...(Ranges)) ? resolve(b[i], e[i], s[i], In::dims[i]) : slice_axis{0, In::dims[i], 1};
    return a;
  }();
  constexpr auto out = [&] { dims_t<r> d{}; for (int i = 0; i < r; ++i) d[i] = axes[i].length; return d; }();
  constexpr auto src = [&] { std::array<int, r> s{}; for (int i = 0; i < r; ++i) s[i] = i; return s; }();
  constexpr auto scale = [&] { std::array<index_t, r> s{}; for (int i = 0; i < r; ++i) s[i] = axes[i].step; return s; }();
  constexpr auto off = [&] { std::array<index_t, r> s{}; for (int i = 0; i < r; ++i) s[i] = axes[i].start; return s; }();
  return affine_map<In, shape_from<out>, canon(src), canon(scale), canon(off)>{};
}
} // namespace detail

// slice<range<1, -1>, whole, range<none, none, -1>>(x)
template <class... Ranges, expression X>
auto slice(X&& x) {
  using Map = decltype(detail::slice_map<detail::shape_of_t<X>, Ranges...>());
  return detail::apply_view<Map>(detail::as_node(std::forward<X>(x)));
}

// flip<axes...>(x): reverse the listed axes (all of them when none are listed).
template <int... A, expression X>
auto flip(X&& x) {
  using S = detail::shape_of_t<X>;
  static_assert(detail::check_axes<S, A...>::ok);
  constexpr auto mask = detail::axis_mask<S::rank, A...>();
  constexpr auto src = [] { std::array<int, S::rank> s{}; for (int i = 0; i < S::rank; ++i) s[i] = i; return s; }();
  constexpr auto scale = [&] { std::array<index_t, S::rank> s{}; for (int i = 0; i < S::rank; ++i) s[i] = mask[i] ? -1 : 1; return s; }();
  constexpr auto off = [&] { std::array<index_t, S::rank> s{}; for (int i = 0; i < S::rank; ++i) s[i] = mask[i] ? S::dims[i] - 1 : 0; return s; }();
  return detail::apply_view<detail::affine_map<S, S, detail::canon(src), detail::canon(scale), detail::canon(off)>>(detail::as_node(std::forward<X>(x)));
}

namespace detail {
template <class S, int... A>
struct check_squeeze {
  static_assert(check_axes<S, A...>::ok);
  static_assert(((S::dims[normalize_axis(A, S::rank)] == 1) && ...), "tenfold::squeeze: a listed axis does not have extent 1");
  static constexpr bool ok = true;
};
// Drops the axes in `drop` (all of extent 1); keeps the others in order.
template <class S, std::array<bool, S::rank> Drop>
constexpr auto drop_axes_map() {
  constexpr int ro = [] { int n = 0; for (bool d : Drop) n += !d; return n; }();
  constexpr auto out = [] { dims_t<ro> d{}; for (int i = 0, k = 0; i < S::rank; ++i) if (!Drop[i]) d[k++] = S::dims[i]; return d; }();
  constexpr auto src = [] { std::array<int, S::rank> s{}; for (int i = 0, k = 0; i < S::rank; ++i) s[i] = Drop[i] ? -1 : k++; return s; }();
  constexpr auto ones = [] { std::array<index_t, S::rank> a{}; for (auto& v : a) v = 1; return a; }();
  return affine_map<S, shape_from<out>, canon(src), canon(ones), canon(std::array<index_t, S::rank>{})>{};
}
} // namespace detail

// squeeze<axes...>(x): remove the listed extent-1 axes (every extent-1 axis when none are listed).
template <int... A, expression X>
auto squeeze(X&& x) {
  using S = detail::shape_of_t<X>;
  static_assert(detail::check_squeeze<S, A...>::ok);
  constexpr auto drop = [] {
    std::array<bool, S::rank> d{};
    if constexpr (sizeof...(A) == 0) {
      for (int i = 0; i < S::rank; ++i) d[i] = S::dims[i] == 1;
    } else {
      for (int a : {A...}) d[detail::normalize_axis(a, S::rank)] = true;
    }
    return d;
  }();
  return detail::apply_view<decltype(detail::drop_axes_map<S, detail::canon(drop)>())>(detail::as_node(std::forward<X>(x)));
}

// unsqueeze<a>(x): insert an extent-1 axis so that it becomes axis a of the result (-1: last).
template <int A, expression X>
auto unsqueeze(X&& x) {
  using S = detail::shape_of_t<X>;
  static_assert(A >= -(S::rank + 1) && A <= S::rank, "tenfold::unsqueeze: axis out of range (valid: -rank-1 .. rank)");
  constexpr int a = A < 0 ? A + S::rank + 1 : A;
  constexpr auto out = [] { detail::dims_t<S::rank + 1> d{}; for (int i = 0, k = 0; i <= S::rank; ++i) d[i] = i == a ? 1 : S::dims[k++]; return d; }();
  constexpr auto src = [] { std::array<int, S::rank> s{}; for (int i = 0; i < S::rank; ++i) s[i] = i < a ? i : i + 1; return s; }();
  constexpr auto ones = [] { std::array<index_t, S::rank> v{}; for (auto& e : v) e = 1; return v; }();
  return detail::apply_view<detail::affine_map<S, shape_from<out>, detail::canon(src), detail::canon(ones), detail::canon(std::array<index_t, S::rank>{})>>(
      detail::as_node(std::forward<X>(x)));
}
} // namespace tenfold
