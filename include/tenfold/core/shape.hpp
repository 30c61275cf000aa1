#pragma once
// Static shapes, row-major strides, NumPy broadcasting and axis normalisation — all at compile time.
#include <array>
#include <cstdint>
#include <type_traits>

#include "tenfold/core/config.hpp"

namespace tenfold {

// A bounded extent: `shape<upto<64>, 128>` holds up to 64 rows; how many it holds now is a run-time
// length kept by the tensor (Tensor::set_length). Everything static (strides, the arena plan, kernel
// choice) sees the capacity; loops run to the length. The extent is the capacity plus this marker, so
// that compiler messages show upto<64> as 1000000000000064.
inline constexpr index_t bounded_flag = 1000000000000000;
template <index_t Capacity>
  requires(Capacity >= 0 && Capacity < bounded_flag)
inline constexpr index_t upto = bounded_flag + Capacity;

namespace detail {
constexpr bool is_bounded(index_t e) { return e >= bounded_flag; }
constexpr index_t capacity_of(index_t e) { return is_bounded(e) ? e - bounded_flag : e; }

// One bounded extent per shape so far: the rows of activations (a prefill's tokens, [upto<T>, D]) or a
// head's positions ([B, H, upto<T>, D]). With the first axis bounded, the active elements are a prefix;
// elsewhere, blocks of them (active_at).
template <class S>
struct check_bounded_axes {
  static_assert([] {
    int n = 0;
    for (int i = 0; i < S::rank; ++i) n += S::bounded[i] ? 1 : 0;
    return n <= 1;
  }(), "tenfold::shape: at most one upto<N> extent per shape (so far)");
  static constexpr bool ok = true;
};

// Of `full` elements (or rows, or outputs) that span the bounded axis of S, those whose index on it is
// below `length`.
template <class S>
constexpr index_t active_part(index_t full, index_t length) {
  constexpr index_t cap = S::dims[S::bounded_axis];
  return cap == 0 ? 0 : full / cap * length;
}

// Where the a-th active one of those is among all: elements of S or rows of its first K axes (K > the
// bounded axis). A bounded first axis: a itself (a prefix); axis b > 0: blocks of length x (the
// axes b+1 .. K) every capacity x (those axes).
template <class S, int K = S::rank>
constexpr index_t active_at(index_t a, index_t length) {
  constexpr int b = S::bounded_axis;
  static_assert(b >= 0 && b < K);
  if constexpr (b == 0) return a;
  else {
    constexpr index_t after = [] {
      index_t p = 1;
      for (int i = b + 1; i < K; ++i) p *= S::dims[i];
      return p;
    }();
    const index_t block = length * after;
    return a / block * (S::dims[b] * after) + a % block;
  }
}
} // namespace detail

template <index_t... N>
struct shape {
  static_assert(sizeof...(N) <= max_rank, "tenfold::shape: rank is limited to 8");
  static_assert(((N >= 0) && ...), "tenfold::shape: extents must be non-negative");
  static constexpr int rank = sizeof...(N);
  // The extents (a bounded one's capacity), as everything static reads them.
  static constexpr std::array<index_t, sizeof...(N)> dims{detail::capacity_of(N)...};
  // The extents as written (bounded ones flagged): what shape computations carry to their results.
  static constexpr std::array<index_t, sizeof...(N)> extents{N...};
  static constexpr std::array<bool, sizeof...(N)> bounded{detail::is_bounded(N)...};
  static constexpr bool has_bounded = (false || ... || detail::is_bounded(N));
  // The bounded axis (upto<N>), -1 if none.
  static constexpr int bounded_axis = [] {
    for (int i = 0; i < rank; ++i)
      if (bounded[i]) return i;
    return -1;
  }();
  static constexpr index_t size = (index_t{1} * ... * detail::capacity_of(N));
  static_assert(!has_bounded || detail::check_bounded_axes<shape>::ok);
};

template <class S>
inline constexpr bool is_shape_v = false;
template <index_t... N>
inline constexpr bool is_shape_v<shape<N...>> = true;

// Axis lists and keepdims tags: `sum(x, axes<0, -1>, keepdims)`.
template <int... A>
struct axes_t {
  static constexpr std::array<int, sizeof...(A)> values{A...};
};
template <int... A>
inline constexpr axes_t<A...> axes{};
template <int A>
inline constexpr axes_t<A> axis{};
struct keepdims_t {};
inline constexpr keepdims_t keepdims{};

namespace detail {

template <std::size_t R>
using dims_t = std::array<index_t, R>;

template <std::size_t R>
constexpr dims_t<R> row_major_strides(const dims_t<R>& d) {
  dims_t<R> s{};
  index_t acc = 1;
  for (std::size_t i = R; i-- > 0;) {
    s[i] = acc;
    acc *= d[i];
  }
  return s;
}

template <std::size_t R>
constexpr index_t product(const dims_t<R>& d, std::size_t from = 0, std::size_t to = R) {
  index_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

// GCC 12 confuses class-type template arguments whose zero elements were left value-initialized
// ({0, 1} and {1, 0} become one specialization). Every computed array that becomes a template argument
// goes through canon(), which writes each element explicitly. tests/core_test.cpp guards this.
template <class T, std::size_t N>
constexpr std::array<T, N> canon(const std::array<T, N>& a) {
  std::array<T, N> r;
  for (std::size_t i = 0; i < N; ++i) r[i] = a[i];
  return r;
}

// shape_from<array> turns a constexpr-computed extent list back into a shape type.
template <auto Dims, class Seq = std::make_index_sequence<Dims.size()>>
struct shape_from_impl;
template <auto Dims, std::size_t... I>
struct shape_from_impl<Dims, std::index_sequence<I...>> {
  using type = shape<Dims[I]...>;
};
} // namespace detail

template <auto Dims>
using shape_from = typename detail::shape_from_impl<detail::canon(Dims)>::type;

template <class S>
inline constexpr auto strides_of = detail::row_major_strides<S::rank>(S::dims);

namespace detail {

// Broadcasting reads the extents as written: a bounded extent meets only the same bounded extent (the
// same run-time length, checked when evaluated) or a static 1.
template <class A, class B>
constexpr bool broadcastable() {
  constexpr int r = A::rank > B::rank ? A::rank : B::rank;
  for (int i = 0; i < r; ++i) {
    const int ia = A::rank - r + i, ib = B::rank - r + i;
    const index_t a = ia >= 0 ? A::extents[ia] : 1, b = ib >= 0 ? B::extents[ib] : 1;
    if (a != b && a != 1 && b != 1) return false;
  }
  return true;
}

template <class A, class B>
constexpr bool bounded_meets_static() {
  constexpr int r = A::rank > B::rank ? A::rank : B::rank;
  for (int i = 0; i < r; ++i) {
    const int ia = A::rank - r + i, ib = B::rank - r + i;
    const index_t a = ia >= 0 ? A::extents[ia] : 1, b = ib >= 0 ? B::extents[ib] : 1;
    if (a != b && a != 1 && b != 1 && (is_bounded(a) || is_bounded(b))) return true;
  }
  return false;
}

template <class A, class B>
constexpr auto broadcast_dims() {
  constexpr int r = A::rank > B::rank ? A::rank : B::rank;
  dims_t<r> out{};
  for (int i = 0; i < r; ++i) {
    const int ia = A::rank - r + i, ib = B::rank - r + i;
    const index_t a = ia >= 0 ? A::extents[ia] : 1, b = ib >= 0 ? B::extents[ib] : 1;
    out[i] = a == 1 ? b : a;
  }
  return out;
}

// The failing shapes appear in the compiler's note as this template's arguments.
template <class A, class B>
struct check_broadcast {
  static_assert(!bounded_meets_static<A, B>(), "tenfold: an upto<N> extent meets a static extent other than 1 (bounded "
                                               "extents broadcast only with the same upto<N> or with 1)");
  static_assert(broadcastable<A, B>() || bounded_meets_static<A, B>(),
                "tenfold: shapes cannot be broadcast together (NumPy rules: trailing extents must match or be 1)");
  using type = shape_from<broadcast_dims<A, B>()>;
};

template <class A, class B>
struct broadcast_pair {
  using type = typename check_broadcast<A, B>::type;
};
} // namespace detail

// broadcast_shape_t<S...>: the NumPy broadcast of all the shapes; a mismatch is a static_assert naming them.
template <class... S>
struct broadcast_shape;
template <class S>
struct broadcast_shape<S> {
  using type = S;
};
template <class A, class B, class... Rest>
struct broadcast_shape<A, B, Rest...> {
  using type = typename broadcast_shape<typename detail::broadcast_pair<A, B>::type, Rest...>::type;
};
template <class... S>
using broadcast_shape_t = typename broadcast_shape<S...>::type;

namespace detail {
constexpr bool axis_in_range(int a, int rank) { return a >= -rank && a < rank; }
constexpr int normalize_axis(int a, int rank) { return a < 0 ? a + rank : a; }

// Reduced-axis mask for an axis list; empty list means "all axes".
template <int Rank, int... A>
constexpr std::array<bool, Rank> axis_mask() {
  std::array<bool, Rank> m{};
  if constexpr (sizeof...(A) == 0) {
    for (auto& x : m) x = true;
  } else {
    for (int a : {A...}) m[normalize_axis(a, Rank)] = true;
  }
  return m;
}

template <int Rank, int... A>
constexpr bool axes_unique() {
  if constexpr (sizeof...(A) == 0) return true;
  else {
    std::array<int, sizeof...(A)> v{normalize_axis(A, Rank)...};
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (v[i] == v[j]) return false;
    return true;
  }
}

// Names the shape and the offending axes in the compiler's note.
template <class S, int... A>
struct check_axes {
  static_assert((axis_in_range(A, S::rank) && ...),
                "tenfold: axis out of range for this shape (valid axes are -rank .. rank-1)");
  static_assert(axes_unique<S::rank, A...>(), "tenfold: an axis is listed twice");
  static constexpr bool ok = true;
  static constexpr bool valid = (axis_in_range(A, S::rank) && ...) && axes_unique<S::rank, A...>();
};

template <class S, class Seq = std::make_integer_sequence<int, S::rank>>
struct index_of;
template <class S, int... I>
struct index_of<S, std::integer_sequence<int, I...>> {
  using type = dims_t<S::rank>;
};

// Extent i of S for a run-time i, in code that may run on a CUDA device: nvcc keeps a static constexpr
// array member (shape::dims) in host memory only, but it does emit template parameter objects.
template <auto A>
TENFOLD_HD constexpr auto element_of(int i) {
  return A[i];
}
template <class S>
TENFOLD_HD constexpr index_t extent(int i) {
  return element_of<canon(S::dims)>(i);
}

// Row-major linear index <-> multi-index.
template <class S>
TENFOLD_HD constexpr void unravel(index_t linear, index_t* idx) {
  for (int i = S::rank - 1; i >= 0; --i) {
    idx[i] = linear % extent<S>(i);
    linear /= extent<S>(i);
  }
}
} // namespace detail
} // namespace tenfold
