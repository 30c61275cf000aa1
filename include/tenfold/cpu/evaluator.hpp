#pragma once
// The CPU evaluator: `tenfold::eval(dst, expr)` and Tensor assignment land here. One loop nest per
// assignment, chosen at compile time from the expression type: elementwise trees run as flat (or
// row-wise) SIMD loops split across the thread pool; a reduction or scan at the root runs its own kernel.
#include "tenfold/core/tensor.hpp"
#include "tenfold/cpu/reduce.hpp"

namespace tenfold {
namespace cpu {

// Elements below which an assignment stays on the calling thread.
inline constexpr index_t parallel_grain = 1 << 15;

template <class T, class L, index_t Stride, class V, class Row>
TENFOLD_INLINE void store_run(const leaf_row<T, L, Stride>& dst, const Row& src, index_t j, index_t stop) {
  using D = std::remove_const_t<T>;
  constexpr index_t w = lanes<L>;
  if constexpr (std::is_same_v<compute_t<D>, L> && Stride == 1) {
    for (; j + w <= stop; j += w) {
      const auto b = src.load(j);
      if constexpr (std::is_same_v<D, L>) b.store_unaligned(dst.p + j);
      else {
        alignas(default_alignment) L tmp[w];
        b.store_aligned(tmp);
        for (index_t k = 0; k < w; ++k) dst.p[j + k] = convert<D>(tmp[k]);
      }
    }
  } else if constexpr (std::is_same_v<D, bool> && std::is_same_v<V, bool>) {
    for (; j + w <= stop; j += w) {
      if constexpr (Stride == 1) src.load(j).store_unaligned(dst.p + j);
      else {
        bool tmp[w];
        src.load(j).store_unaligned(tmp);
        for (index_t k = 0; k < w; ++k) dst.p[(j + k) * Stride] = tmp[k];
      }
    }
  }
  for (; j < stop; ++j) dst.p[j * Stride] = convert<D>(src.scalar(j));
}

template <class T, class L, index_t Stride, class Row>
TENFOLD_INLINE void store_run_scalar(const leaf_row<T, L, Stride>& dst, const Row& src, index_t j, index_t stop) {
  for (; j < stop; ++j) dst.p[j * Stride] = convert<std::remove_const_t<T>>(src.scalar(j));
}

// dst: a writable leaf with N's shape.
template <class Dst, class N>
void run_elementwise(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  constexpr int R = S::rank, K = coalesce_start<N, Dst>();
  constexpr index_t inner = detail::product(S::dims, K, R), outer = detail::product(S::dims, 0, K);
  using L0 = typename lane_of<N>::type;
  constexpr bool vec = lane_type_v<L0> && simd_ok<N, L0>::value;
  using L = std::conditional_t<vec, L0, float>;
  if constexpr (S::size == 0) return;
  else {
    auto row = [&](const index_t* idx, index_t j, index_t stop) {
      const auto d = make_row<K, L>(dst, idx);
      const auto s = make_row<K, L>(n, idx);
      if constexpr (vec) store_run<typename Dst::element_type, L, run_stride<Dst, K>(), typename N::value_type>(d, s, j, stop);
      else store_run_scalar(d, s, j, stop);
    };
    using index_array = std::array<index_t, R + 1>; // (outside the lambdas: GCC 12 crashes on it inside)
    index_array idx{};
    if constexpr (S::size <= parallel_grain) {
      // Small static extents: plain nested loops with constant trip counts, which the compiler unrolls.
      for (index_t o = 0; o < outer; ++o) {
        detail::unravel<shape_from<prefix_dims<S, K>()>>(o, idx.data());
        row(idx.data(), 0, inner);
      }
    } else {
      parallel_for(S::size, parallel_grain, lanes<L>, [&](index_t begin, index_t end) {
        index_array i{};
        index_t o = begin / inner, j = begin % inner;
        while (begin < end) {
          detail::unravel<shape_from<prefix_dims<S, K>()>>(o, i.data());
          const index_t stop = std::min(inner, j + (end - begin));
          row(i.data(), j, stop);
          begin += stop - j;
          j = 0;
          ++o;
        }
      });
    }
  }
}

// ---- aliasing: a destination read through a different index map must not be overwritten early ----
template <class Dst, class N>
bool aliases(const Dst& dst, const N& n, bool opaque = false) {
  if constexpr (detail::is_leaf_v<N>) {
    if (static_cast<const void*>(n.data()) != static_cast<const void*>(dst.data())) return false;
    if constexpr (N::rank == Dst::rank) {
      if (!opaque && N::strides == Dst::strides && N::offset == Dst::offset) return false;
    }
    return true;
  } else if constexpr (detail::is_map_node_v<N>) {
    return std::apply([&](const auto&... c) { return (aliases(dst, c, opaque) || ...); }, n.args);
  } else if constexpr (requires { n.arg; }) {
    return aliases(dst, n.arg, true);
  } else if constexpr (requires { n.args; }) {
    return std::apply([&](const auto&... c) { return (aliases(dst, c, true) || ...); }, n.args);
  } else {
    return false;
  }
}

template <class Dst, class N>
void run(const Dst& dst, const N& n) {
  if constexpr (detail::is_reduce_node_v<N>) run_reduce(dst, n);
  else if constexpr (detail::is_scan_node_v<N>) run_scan(dst, n);
  else run_elementwise(dst, n);
}
} // namespace cpu

namespace detail {
template <class X>
auto as_destination(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_tensor_v<D>) {
    static_assert(std::is_lvalue_reference_v<X>, "tenfold::eval: the destination must be an lvalue tensor");
    return as_node(x);
  } else {
    static_assert(is_leaf_v<D> && !std::is_const_v<typename D::element_type>,
                  "tenfold::eval: the destination must be a Tensor or a writable view of one");
    return D(x);
  }
}
} // namespace detail

template <class Dst, class Src>
void eval(Dst&& dst, Src&& src) {
  const auto out = detail::as_destination(std::forward<Dst>(dst));
  using O = std::remove_const_t<decltype(out)>;
  using S = typename O::shape_type;
  auto node = detail::expand_to<S>(detail::as_node(std::forward<Src>(src)));
  if (cpu::aliases(out, node)) {
    // Rare: the destination is read through another index map (x = transpose(x)). Evaluate aside.
    Tensor<typename O::value_type, S> tmp;
    cpu::run(detail::as_node(tmp), node);
    cpu::run(out, detail::as_node(std::as_const(tmp)));
    return;
  }
  cpu::run(out, node);
}
} // namespace tenfold
