#pragma once
// Rotary position embeddings (Su et al., RoFormer), in the layout of GPT-NeoX, Llama and Hugging Face
// transformers: dimension i of the first half of the last axis pairs with i + D/2, and position t turns
// each pair by the angle θ(t, i) = t · base^(-2i/D):
//
//   rope(x, cos, sin) = x · cos + rotate_half(x) · sin,   rotate_half([x1, x2]) = [-x2, x1]
//
// x [..., T, D] (D even: heads and batch axes lead), cos and sin [T, D] with each angle's cosine and sine
// in both halves (what transformers' rotary embedding returns; `rope_tables` makes them). For a bounded
// number of positions, x [upto<T>, D] (a prefill's), the tables are [upto<T>, D] of the same length
// (`rope_tables::first(n)` gives them). A composite,
// not a kernel: the halves are an axis of 2 ([..., T, 2, D/2]) and rotate_half is a flip of that axis
// times [-1, 1], so the whole is one elementwise pass, computed in that shape into a buffer (a let) of
// which [..., T, D] is a view. Its derivative is what the autodiff walk derives from this form (a flip's
// adjoint is the same flip): the rotation by -θ.
#include <cmath>

#include "tenfold/core/let.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/ops/api.hpp"
#include "tenfold/ops/creation.hpp"

namespace tenfold {
namespace detail {
// The shapes appear in the compiler's note as this template's arguments.
template <class X, class C, class S>
struct check_rope {
  static constexpr bool rank_ok = X::rank >= 2;
  static_assert(rank_ok, "tenfold::rope: x needs rank >= 2 ([..., positions, features])");
  // (T as written: positions [upto<T>] of a prefill take tables of as many rows, [upto<T>, D])
  static constexpr index_t T = rank_ok ? X::extents[X::rank - 2] : 0, D = rank_ok ? X::dims[X::rank - 1] : 0;
  static constexpr bool even = D % 2 == 0;
  static_assert(even, "tenfold::rope: the feature extent D of x [..., T, D] must be even (pairs i, i + D/2)");
  static constexpr bool tables_ok = std::is_same_v<C, shape<T, D>> && std::is_same_v<S, shape<T, D>>;
  static_assert(tables_ok, "tenfold::rope: cos and sin must be [T, D] for x [..., T, D]");
  static constexpr bool valid = rank_ok && even && tables_ok;
};
// [..., T, D] -> [..., T, 2, D/2]
template <class X>
constexpr auto rope_pair_dims() {
  dims_t<X::rank + 1> d{};
  for (int i = 0; i + 1 < X::rank; ++i) d[i] = X::extents[i]; // (a bounded axis kept bounded)
  d[X::rank - 1] = 2;
  d[X::rank] = X::dims[X::rank - 1] / 2;
  return d;
}
template <class In, class Out, class X>
auto reshape_to(X&& x) {
  return apply_view<reshape_map<In, Out>>(as_node(std::forward<X>(x)));
}
} // namespace detail

template <expression X, expression C, expression S>
auto rope(X&& x, C&& cos, S&& sin) {
  using XS = detail::shape_of_t<X>;
  using Check = detail::check_rope<XS, detail::shape_of_t<C>, detail::shape_of_t<S>>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else {
    constexpr index_t T = Check::T, h = Check::D / 2;
    using Pairs = shape_from<detail::rope_pair_dims<XS>()>;
    using Table = shape<T, 2, h>;
    auto halves = detail::reshape_to<XS, Pairs>(std::forward<X>(x));
    auto c = detail::reshape_to<shape<T, Check::D>, Table>(std::forward<C>(cos));
    // rotate_half's sign: -1 on the first half's partner, +1 on the second's ([2, 1], broadcast)
    auto s = detail::reshape_to<shape<T, Check::D>, Table>(std::forward<S>(sin)) * reshape<2, 1>(arange<float, 2>(-1, 2));
    return let(halves * c + flip<XS::rank - 1>(halves) * s, [](const auto& r) { return detail::reshape_to<Pairs, XS>(r); });
  }
}

// The [T, D] cos and sin tables of rope for positions 0 .. T-1: θ(t, i) = t · base^(-2i/D), each in both
// halves. Computed in double, rounded once. With T = upto<N> they are [upto<N>, D], every row filled
// and the length N; set_length(n) on both (first(n)) makes them the tables of a prefill of n positions.
template <class E, index_t T, index_t D>
struct rope_tables {
  static_assert(D % 2 == 0, "tenfold::rope_tables: D must be even");
  Tensor<E, shape<T, D>> cos, sin;
  explicit rope_tables(double base = 10000.0) {
    for (index_t t = 0; t < detail::capacity_of(T); ++t)
      for (index_t i = 0; i < D / 2; ++i) {
        const double theta = double(t) * std::pow(base, -2.0 * double(i) / double(D));
        cos(t, i) = cos(t, i + D / 2) = E(std::cos(theta));
        sin(t, i) = sin(t, i + D / 2) = E(std::sin(theta));
      }
  }
  // The first n positions' tables (bounded T only): n outside 0..N is a tenfold::error.
  rope_tables& first(index_t n) requires(detail::is_bounded(T)) {
    cos.set_length(n);
    sin.set_length(n);
    return *this;
  }
};
} // namespace tenfold
