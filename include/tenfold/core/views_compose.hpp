#pragma once
// Views that enlarge or combine operands: pad, concat, stack, split, tile, repeat. None copies.
// tile and repeat only re-index, so they are index maps pushed down to the leaves (affine — a plain
// broadcast — where the repeated extent is 1); split is a tuple of affine windows. pad and concat choose a
// source per element, so they are opaque nodes with their own `at` (views of them stay `view_node`s).
//
// Misuse is a static_assert in a `check_*` helper whose template arguments are the offending shapes, so
// the compiler's note shows them. After a failed check the function returns `invalid_view` instead of
// building the node, so the user sees the one message rather than a cascade from inside the node.
#include <tuple>

#include "tenfold/core/views.hpp"

namespace tenfold {
namespace detail {

// Returned only after a static_assert has already reported the misuse.
// (Through a member type: nvcc's front end folds an alias that ignores its parameter and then loses
// the pack expansion `invalid_part<N>...`.)
template <index_t>
struct invalid_part_of {
  using type = invalid_view;
};
template <index_t N>
using invalid_part = typename invalid_part_of<N>::type; // split's parts: a structured binding adds no error

template <class S>
constexpr index_t extent_or_zero(int axis) {
  return axis >= 0 && axis < S::rank ? S::dims[axis] : 0;
}

// ---- pad -------------------------------------------------------------------------------------------
template <class S, index_t... P>
struct check_pad {
  static constexpr bool arity_ok = sizeof...(P) == 2 * S::rank;
  static constexpr bool signs_ok = ((P >= 0) && ...);
  static_assert(arity_ok, "tenfold::pad: needs two values (before, after) per axis: pad<B0, A0, B1, A1, ...>");
  static_assert(signs_ok, "tenfold::pad: padding must be non-negative (slice crops)");
  static constexpr bool valid = arity_ok && signs_ok;
};

template <class S, auto Pads>
constexpr dims_t<S::rank> padded_dims() {
  dims_t<S::rank> d{};
  for (int i = 0; i < S::rank; ++i) d[i] = Pads[2 * i] + S::dims[i] + Pads[2 * i + 1];
  return d;
}

// Pads = {before0, after0, before1, after1, ...}. Reads the operand inside the window, `value` outside.
template <class C, auto Pads>
struct pad_node : node_tag {
  using child_type = C;
  using value_type = typename C::value_type;
  using input_shape = typename C::shape_type;
  using shape_type = shape_from<padded_dims<input_shape, Pads>()>;
  static constexpr int rank = shape_type::rank;
  static constexpr auto pads = Pads;
  C arg;
  compute_t<value_type> value{};
  template <class D>
  constexpr auto with_children(detail::tuple<D>&& c) const {
    return pad_node<D, Pads>{{}, detail::get<0>(std::move(c)), value};
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    index_t in[rank > 0 ? rank : 1];
    for (int i = 0; i < rank; ++i) {
      in[i] = idx[i] - Pads[2 * i];
      if (in[i] < 0 || in[i] >= extent<input_shape>(i)) return value;
    }
    return arg.at(in);
  }
  static std::string str() { return "pad(" + C::str() + ")"; }
};

template <class E>
inline constexpr bool is_pad_node_v = false;
template <class C, auto P>
inline constexpr bool is_pad_node_v<pad_node<C, P>> = true;

// ---- concat ----------------------------------------------------------------------------------------
template <class... S>
using first_shape_t = std::tuple_element_t<0, std::tuple<S..., shape<>>>;

template <int Axis, class... S>
constexpr bool same_except_axis() {
  using F = first_shape_t<S...>;
  if (!((S::rank == F::rank) && ...) || !axis_in_range(Axis, F::rank)) return true; // reported separately
  const int a = normalize_axis(Axis, F::rank);
  for (int i = 0; i < F::rank; ++i)
    if (i != a && !((S::dims[i] == F::dims[i]) && ...)) return false;
  return true;
}

template <int Axis, class... S>
struct check_concat {
  using first = first_shape_t<S...>;
  static constexpr bool count_ok = sizeof...(S) >= 1;
  static constexpr bool rank_ok = ((S::rank == first::rank) && ...);
  static constexpr bool axis_ok = !count_ok || !rank_ok || axis_in_range(Axis, first::rank);
  static constexpr bool shapes_ok = same_except_axis<Axis, S...>();
  static_assert(count_ok, "tenfold::concat: needs at least one operand");
  static_assert(rank_ok, "tenfold::concat: the operands must have the same rank");
  static_assert(axis_ok, "tenfold::concat: axis out of range for the operands (valid axes are -rank .. rank-1)");
  static_assert(shapes_ok,
                "tenfold::concat: the operands' shapes must agree on every axis except the concatenation axis");
  static constexpr bool valid = count_ok && rank_ok && axis_ok && shapes_ok;
  static constexpr int axis = valid ? normalize_axis(Axis, first::rank) : 0;
};

template <int Axis, class... S>
constexpr dims_t<first_shape_t<S...>::rank> concat_dims() {
  dims_t<first_shape_t<S...>::rank> d = first_shape_t<S...>::dims;
  d[Axis] = (index_t(0) + ... + S::dims[Axis]);
  return d;
}

// bounds[i] .. bounds[i+1] is operand i's range along the axis.
template <int Axis, class... S>
constexpr std::array<index_t, sizeof...(S) + 1> concat_bounds() {
  std::array<index_t, sizeof...(S) + 1> b{};
  const index_t ext[] = {S::dims[Axis]...};
  for (std::size_t i = 0; i < sizeof...(S); ++i) b[i + 1] = b[i] + ext[i];
  return b;
}

template <class A, class... R>
struct promote_each {
  using type = A;
};
template <class A, class B, class... R>
struct promote_each<A, B, R...> : promote_each<promote_t<A, B>, R...> {};

// The operands laid end to end along Axis (already normalised). Element types promote as in NumPy.
template <int Axis, class... C>
struct concat_node : node_tag {
  using value_type = typename promote_each<typename C::value_type...>::type;
  using shape_type = shape_from<concat_dims<Axis, typename C::shape_type...>()>;
  static constexpr int rank = shape_type::rank;
  static constexpr int axis = Axis;
  static constexpr auto bounds = concat_bounds<Axis, typename C::shape_type...>();
  detail::tuple<C...> args;
  template <class... D>
  constexpr auto with_children(detail::tuple<D...>&& c) const {
    return concat_node<Axis, D...>{{}, std::move(c)};
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    index_t in[rank];
    for (int i = 0; i < rank; ++i) in[i] = idx[i];
    return at_operand<0>(in);
  }
  static std::string str() {
    std::string s = "concat(";
    bool first = true;
    ((s += (first ? "" : ", ") + C::str(), first = false), ...);
    return s + ")";
  }

 private:
  template <std::size_t I>
  TENFOLD_HD compute_t<value_type> at_operand(index_t* in) const {
    if constexpr (I + 1 < sizeof...(C)) {
      if (in[Axis] >= bounds[I + 1]) return at_operand<I + 1>(in);
    }
    in[Axis] -= bounds[I];
    return convert<compute_t<value_type>>(detail::get<I>(args).at(in));
  }
};

template <class E>
inline constexpr bool is_concat_node_v = false;
template <int A, class... C>
inline constexpr bool is_concat_node_v<concat_node<A, C...>> = true;

// ---- stack -----------------------------------------------------------------------------------------
template <int Axis, class... S>
struct check_stack {
  using first = first_shape_t<S...>;
  static constexpr bool count_ok = sizeof...(S) >= 1;
  static constexpr bool same_ok = (std::is_same_v<S, first> && ...);
  static constexpr bool axis_ok = Axis >= -(first::rank + 1) && Axis <= first::rank;
  static_assert(count_ok, "tenfold::stack: needs at least one operand");
  static_assert(same_ok, "tenfold::stack: all operands must have the same shape");
  static_assert(axis_ok, "tenfold::stack: axis out of range (valid axes for the new axis are -rank-1 .. rank)");
  static constexpr bool valid = count_ok && same_ok && axis_ok;
  static constexpr int axis = Axis < 0 ? Axis + first::rank + 1 : Axis;
};

// ---- split -----------------------------------------------------------------------------------------
template <class S, int Axis, index_t... N>
struct check_split {
  static constexpr bool axis_ok = axis_in_range(Axis, S::rank);
  static constexpr bool count_ok = sizeof...(N) >= 1;
  static constexpr bool signs_ok = ((N >= 0) && ...);
  static constexpr int axis = axis_ok ? normalize_axis(Axis, S::rank) : 0;
  static constexpr bool sum_ok = !axis_ok || (index_t(0) + ... + N) == extent_or_zero<S>(axis);
  static_assert(axis_ok, "tenfold::split: axis out of range for this shape (valid axes are -rank .. rank-1)");
  static_assert(count_ok, "tenfold::split: give at least one part size: split<axis, sizes...>");
  static_assert(signs_ok, "tenfold::split: part sizes must be non-negative");
  static_assert(sum_ok, "tenfold::split: the part sizes must add up to the extent of the split axis");
  static constexpr bool valid = axis_ok && count_ok && signs_ok && sum_ok;
};

// The window [Start, Start + Len) along Axis: a slice with every other axis whole.
template <class S, int Axis, index_t Start, index_t Len, int... I>
constexpr auto window_map(std::integer_sequence<int, I...>) {
  return slice_map<S, std::conditional_t<I == Axis, range<Start, Start + Len>, whole>...>();
}

template <std::size_t Part, index_t... N>
constexpr index_t part_start() {
  const index_t n[] = {N...};
  index_t s = 0;
  for (std::size_t i = 0; i < Part; ++i) s += n[i];
  return s;
}
template <class S, int Axis, std::size_t Part, index_t... N>
using split_part_map =
    decltype(window_map<S, Axis, part_start<Part, N...>(), std::array<index_t, sizeof...(N)>{N...}[Part]>(
        std::make_integer_sequence<int, S::rank>{}));

// ---- tile and repeat -------------------------------------------------------------------------------
template <class S, index_t... Reps>
struct check_tile {
  static constexpr bool signs_ok = ((Reps >= 0) && ...);
  static_assert(signs_ok, "tenfold::tile: repetition counts must be non-negative");
  static constexpr bool valid = signs_ok;
};

// NumPy's tile: the shorter of (shape, reps) is padded with leading 1s, then extents multiply.
template <class In, index_t... Reps>
constexpr auto tiled_dims() {
  constexpr int nr = sizeof...(Reps), ri = In::rank, ro = nr > ri ? nr : ri;
  const index_t reps[] = {Reps..., 0};
  dims_t<ro> d{};
  for (int i = 0; i < ro; ++i) {
    const int j = i - (ro - ri), k = i - (ro - nr);
    d[i] = (j >= 0 ? In::dims[j] : 1) * (k >= 0 ? reps[k] : 1);
  }
  return d;
}

// Out's trailing In::rank axes wrap around In's extents.
template <class In, class Out>
struct tile_map {
  using in_shape = In;
  using out_shape = Out;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < In::rank; ++j) in[j] = extent<In>(j) > 1 ? out[Out::rank - In::rank + j] % extent<In>(j) : 0;
  }
};

// True when every extent is either kept or 1: the result is then a broadcast (an affine view).
template <class In, class Out>
constexpr bool is_broadcast_of() {
  for (int j = 0; j < In::rank; ++j)
    if (In::dims[j] != 1 && In::dims[j] != Out::dims[Out::rank - In::rank + j]) return false;
  return true;
}

template <class S, index_t K, int Axis>
struct check_repeat {
  static constexpr bool axis_ok = axis_in_range(Axis, S::rank);
  static constexpr bool count_ok = K >= 0;
  static_assert(axis_ok, "tenfold::repeat: axis out of range for this shape (valid axes are -rank .. rank-1)");
  static_assert(count_ok, "tenfold::repeat: the repetition count must be non-negative");
  static constexpr bool valid = axis_ok && count_ok;
  static constexpr int axis = axis_ok ? normalize_axis(Axis, S::rank) : 0;
};

template <class In, int Axis, index_t K>
constexpr dims_t<In::rank> repeated_dims() {
  dims_t<In::rank> d = In::dims;
  d[Axis] *= K;
  return d;
}

// Each element along Axis appears K times in a row.
template <class In, int Axis, index_t K>
struct repeat_map {
  using in_shape = In;
  using out_shape = shape_from<repeated_dims<In, Axis, K>()>;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < In::rank; ++j) in[j] = out[j];
    in[Axis] = K > 0 ? out[Axis] / K : 0;
  }
};

// Broadcast where possible (the leaves keep strides the evaluator vectorises), else the general map.
template <class Map, class N>
auto apply_repeating_view(N&& node) {
  using In = typename Map::in_shape;
  using Out = typename Map::out_shape;
  if constexpr (std::is_same_v<In, Out>) return std::remove_cvref_t<N>(std::forward<N>(node));
  else if constexpr (is_broadcast_of<In, Out>())
    return apply_view<decltype(expand_map_t<In, Out>())>(std::forward<N>(node));
  else return apply_view<Map>(std::forward<N>(node));
}
} // namespace detail

// pad<B0, A0, B1, A1, ...>(x, value): `Bi` elements of `value` before axis i and `Ai` after it.
template <index_t... P, expression X, arithmetic_scalar V = int>
auto pad(X&& x, V value = 0) {
  using S = detail::shape_of_t<X>;
  using Check = detail::check_pad<S, P...>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else {
    using N = detail::node_t<X>;
    using T = compute_t<typename N::value_type>;
    return detail::pad_node<N, detail::canon(std::array<index_t, 2 * S::rank>{P...})>{
        {}, detail::as_node(std::forward<X>(x)), static_cast<T>(value)};
  }
}

// concat<axis>(a, b, ...): the operands end to end along `axis`; every other extent must agree.
template <int Axis, expression... X>
auto concat(X&&... x) {
  using Check = detail::check_concat<Axis, detail::shape_of_t<X>...>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else if constexpr (sizeof...(X) == 1) return detail::as_node(std::forward<X>(x)...);
  else return detail::concat_node<Check::axis, detail::node_t<X>...>{{}, {detail::as_node(std::forward<X>(x))...}};
}

// stack<axis>(a, b, ...): same-shaped operands along a new axis (it becomes axis `axis` of the result).
template <int Axis, expression... X>
auto stack(X&&... x) {
  using Check = detail::check_stack<Axis, detail::shape_of_t<X>...>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else return concat<Check::axis>(unsqueeze<Check::axis>(std::forward<X>(x))...);
}

// auto [a, b, c] = split<axis, 2, 3, 1>(x): consecutive slices along `axis` whose extents are the sizes.
// Each part is a view; a temporary Tensor operand is owned by each part (so they may outlive one another).
template <int Axis, index_t... N, expression X>
auto split(X&& x) {
  using S = detail::shape_of_t<X>;
  using Check = detail::check_split<S, Axis, N...>;
  if constexpr (!Check::valid) return std::tuple<detail::invalid_part<N>...>{};
  else {
    const auto node = detail::as_node(std::forward<X>(x));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple{detail::apply_view<detail::split_part_map<S, Check::axis, I, N...>>(node)...};
    }(std::make_index_sequence<sizeof...(N)>{});
  }
}

// tile<r0, r1, ...>(x): NumPy's tile — the operand repeated whole r_i times along each axis.
template <index_t... Reps, expression X>
auto tile(X&& x) {
  using In = detail::shape_of_t<X>;
  if constexpr (!detail::check_tile<In, Reps...>::valid) return detail::invalid_view{};
  else {
    using Out = shape_from<detail::tiled_dims<In, Reps...>()>;
    return detail::apply_repeating_view<detail::tile_map<In, Out>>(detail::as_node(std::forward<X>(x)));
  }
}

// repeat<k, axis>(x): NumPy's repeat — each element repeated k times in a row along `axis`.
template <index_t K, int Axis, expression X>
auto repeat(X&& x) {
  using In = detail::shape_of_t<X>;
  using Check = detail::check_repeat<In, K, Axis>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else return detail::apply_repeating_view<detail::repeat_map<In, Check::axis, K>>(detail::as_node(std::forward<X>(x)));
}
} // namespace tenfold
