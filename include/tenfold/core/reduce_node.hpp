#pragma once
// Reduction and scan nodes: data only. `at` computes one output element by a plain loop (used on the
// device and as the fallback); the CPU evaluator has vectorised, pairwise, threaded kernels for them.
#include "tenfold/core/expr.hpp"

namespace tenfold::detail {

template <int Rank>
constexpr int kept_rank(std::array<bool, Rank> mask, bool keep) {
  int n = 0;
  for (int i = 0; i < Rank; ++i) n += (keep || !mask[i]);
  return n;
}

// (No lambdas over template parameters in these helpers: GCC 12 reuses one closure across
// instantiations that differ only in a class-type template argument.)
template <class S, auto Mask, bool Keep>
constexpr auto reduced_dims() {
  constexpr int r = kept_rank<S::rank>(Mask, Keep);
  dims_t<r> d{};
  for (int i = 0, k = 0; i < S::rank; ++i)
    if (!Mask[i]) d[k++] = S::extents[i]; // (a kept bounded axis stays bounded)
    else if (Keep) d[k++] = 1;
  return d;
}

template <class S, auto Mask>
constexpr index_t reduced_count() {
  index_t n = 1;
  for (int i = 0; i < S::rank; ++i)
    if (Mask[i]) n *= S::dims[i];
  return n;
}

template <class Op, class C, auto Mask, bool Keep>
struct reduce_node : node_tag {
  using op_type = Op;
  using child_type = C;
  using input_shape = typename C::shape_type;
  using value_type = typename Op::template result_type<typename C::value_type>;
  using shape_type = shape_from<reduced_dims<input_shape, Mask, Keep>()>;
  using input_t = typename Op::template input_type<typename C::value_type>;
  using acc_type = typename Op::template acc_type<input_t>;
  static constexpr int rank = shape_type::rank;
  static constexpr auto mask = Mask;
  static constexpr bool keep = Keep;
  static constexpr index_t count = reduced_count<input_shape, Mask>(); // elements per output
  static_assert(!Op::needs_nonempty || count > 0, "tenfold: this reduction has no identity; the reduced extent must be non-empty");
  C arg;
  template <class D>
  constexpr auto with_children(detail::tuple<D>&& c) const {
    return reduce_node<Op, D, Mask, Keep>{{}, detail::get<0>(std::move(c))};
  }

  // Input multi-index of output `out` with the reduced axes at zero.
  TENFOLD_HD static constexpr void base_index(const index_t* out, index_t* in) {
    for (int i = 0, k = 0; i < C::rank; ++i) {
      if (!Mask[i]) in[i] = out[k++];
      else {
        in[i] = 0;
        if (Keep) ++k;
      }
    }
  }
  TENFOLD_HD compute_t<value_type> at(const index_t* out) const {
    index_t in[C::rank > 0 ? C::rank : 1];
    base_index(out, in);
    acc_type acc = Op::template identity<acc_type>();
    for (index_t n = 0; n < count; ++n) {
      acc = Op::combine(acc, static_cast<input_t>(arg.at(in)), n);
      for (int i = C::rank - 1; i >= 0; --i) { // odometer over the reduced axes
        if (!Mask[i]) continue;
        if (++in[i] < extent<input_shape>(i)) break;
        in[i] = 0;
      }
    }
    return static_cast<compute_t<value_type>>(Op::finalize(acc, count));
  }
  static std::string str() { return std::string(Op::name) + "(" + C::str() + ")"; }
};

template <class E>
inline constexpr bool is_reduce_node_v = false;
template <class Op, class C, auto M, bool K>
inline constexpr bool is_reduce_node_v<reduce_node<Op, C, M, K>> = true;

// Inclusive scan (cumsum, cumprod) along one axis, with a reduction entry's combine.
template <class Op, class C, int Axis>
struct scan_node : node_tag {
  using op_type = Op;
  using child_type = C;
  using value_type = typename Op::template result_type<typename C::value_type>;
  using shape_type = typename C::shape_type;
  using input_t = typename Op::template input_type<typename C::value_type>;
  static constexpr int rank = shape_type::rank;
  static constexpr int axis = Axis;
  C arg;
  template <class D>
  constexpr auto with_children(detail::tuple<D>&& c) const {
    return scan_node<Op, D, Axis>{{}, detail::get<0>(std::move(c))};
  }
  TENFOLD_HD compute_t<value_type> at(const index_t* out) const {
    index_t in[rank];
    for (int i = 0; i < rank; ++i) in[i] = out[i];
    input_t acc = Op::template identity<input_t>();
    for (in[Axis] = 0; in[Axis] <= out[Axis]; ++in[Axis]) acc = Op::combine(acc, static_cast<input_t>(arg.at(in)), in[Axis]);
    return static_cast<compute_t<value_type>>(acc);
  }
  static std::string str() { return std::string("cum") + std::string(Op::name) + "(" + C::str() + ")"; }
};

template <class E>
inline constexpr bool is_scan_node_v = false;
template <class Op, class C, int A>
inline constexpr bool is_scan_node_v<scan_node<Op, C, A>> = true;

// Values computed from the index alone: arange, linspace, eye, random draws.
template <class T, class S, class Gen>
struct generator_node : node_tag {
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = S::rank;
  Gen gen{};
  TENFOLD_HD compute_t<T> at(const index_t* idx) const { return static_cast<compute_t<T>>(gen(idx)); }
  static std::string str() { return std::string(Gen::name); }
};

template <class E>
inline constexpr bool is_generator_node_v = false;
template <class T, class S, class Gen>
inline constexpr bool is_generator_node_v<generator_node<T, S, Gen>> = true;
} // namespace tenfold::detail
