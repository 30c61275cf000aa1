#pragma once
// Before an assignment runs, every subtree that plan/fusion.hpp marks as materialising is evaluated
// into a buffer of its own and replaced by a leaf reading it; row-fused reductions stay in place.
// Buffers come from a source: the heap (a plain `eval`), or an arena laid out at compile time by
// plan/arena.hpp (`eval(out, expr, arena)`), which then allocates nothing. The order in which buffers
// are taken here is the order plan/arena.hpp numbers them in: keep the two in step.
#include <cstddef>

#include "tenfold/core/tensor.hpp"
#include "tenfold/plan/fusion.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run(const Dst& dst, const N& n);

// Each buffer is a fresh tensor, owned by the leaf that reads it.
struct heap_buffers {
  template <class T, class S>
  auto take() {
    return detail::as_node(Tensor<T, S>{});
  }
};
// Each buffer is the next slot of a planned arena.
struct arena_buffers {
  std::byte* base;
  const index_t* offsets;
  int next = 0;
  template <class T, class S>
  auto take() {
    T* p = reinterpret_cast<T*>(base + offsets[next++]);
    return detail::leaf<T, S, detail::canon(strides_of<S>), 0, detail::ref_holder<T>>{{}, {p}};
  }
};

template <class Src, class N>
auto materialize(N&& n, Src& src);
template <class Src, class N>
auto materialize_root(N&& n, Src& src);

// A matmul operand must be memory the GEMM can pack from: a tensor or a strided view of one.
template <class Src, class X>
auto as_operand_leaf(X&& x, Src& src) {
  using D = std::remove_cvref_t<X>;
  if constexpr (detail::is_leaf_v<D>) return D(std::forward<X>(x));
  else {
    auto buffer = src.template take<typename D::value_type, typename D::shape_type>();
    run(buffer, materialize_root(std::forward<X>(x), src));
    return buffer;
  }
}

// The same reduction, scan or matmul over prepared inputs (whose types may differ from the original's).
template <class Src, class H>
auto with_prepared_input(H&& h, Src& src) {
  using D = std::remove_cvref_t<H>;
  if constexpr (detail::is_matmul_node_v<D>) {
    auto a = as_operand_leaf(std::get<0>(std::forward<H>(h).args), src);
    auto b = as_operand_leaf(std::get<1>(std::forward<H>(h).args), src);
    return detail::matmul_node<decltype(a), decltype(b)>{{}, {std::move(a), std::move(b)}};
  } else {
    auto c = materialize(std::forward<H>(h).arg, src);
    if constexpr (detail::is_reduce_node_v<D>)
      return detail::reduce_node<typename D::op_type, decltype(c), D::mask, D::keep>{{}, std::move(c)};
    else return detail::scan_node<typename D::op_type, decltype(c), D::axis>{{}, std::move(c)};
  }
}

// Evaluate a heavy node (reduction, scan or matmul) into a buffer; its own inputs are prepared first.
template <class Src, class H>
auto to_leaf(H&& h, Src& src) {
  using D = std::remove_cvref_t<H>;
  auto buffer = src.template take<typename D::value_type, typename D::shape_type>();
  run(buffer, materialize_root(std::forward<H>(h), src));
  return buffer;
}

// A stack of views over a heavy node: buffer the node, then apply the views innermost first.
template <class Src, class N>
auto buffered_view(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::is_view_node_v<D>) return detail::apply_view<typename D::map_type>(buffered_view(std::forward<N>(n).arg, src));
  else return to_leaf(std::forward<N>(n), src);
}

template <class Src, class N>
auto materialize(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::materializes_v<D>) {
    if constexpr (plan::is_view_node_v<D>) return buffered_view(std::forward<N>(n), src);
    else return to_leaf(std::forward<N>(n), src);
  } else if constexpr (plan::row_fused_v<D>) {
    using Rd = typename D::child_type;
    auto c = materialize(std::forward<N>(n).arg.arg, src);
    return detail::view_node<typename D::map_type, detail::reduce_node<typename Rd::op_type, decltype(c), Rd::mask, Rd::keep>>{
        {}, {{}, std::move(c)}};
  } else if constexpr (plan::direct_fused_v<D>) {
    return with_prepared_input(std::forward<N>(n), src);
  } else if constexpr (detail::is_map_node_v<D>) {
    return std::apply(
        [&src](auto&&... c) {
          // Braced initialisation evaluates left to right: buffers are taken in the planned order.
          return detail::map_node<typename D::op_type, decltype(materialize(std::forward<decltype(c)>(c), src))...>{
              {}, {materialize(std::forward<decltype(c)>(c), src)...}};
        },
        std::forward<N>(n).args);
  } else {
    return D(std::forward<N>(n)); // leaves, scalars, generators, and index maps of light nodes
  }
}

// A GEMM epilogue tree: its one matmul stays (operands prepared), the rest is materialised as usual.
template <class Src, class N>
auto materialize_epilogue(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_matmul_node_v<D>) return with_prepared_input(std::forward<N>(n), src);
  else if constexpr (detail::is_map_node_v<D> && plan::epilogue_matmuls<D>() == 1) {
    return std::apply(
        [&src](auto&&... c) {
          return detail::map_node<typename D::op_type, decltype(materialize_epilogue(std::forward<decltype(c)>(c), src))...>{
              {}, {materialize_epilogue(std::forward<decltype(c)>(c), src)...}};
        },
        std::forward<N>(n).args);
  } else return materialize(std::forward<N>(n), src);
}

// The root keeps its own kind (a reduction at the root runs the reduction kernel, a matmul drives its
// epilogue); its inputs are prepared.
template <class Src, class N>
auto materialize_root(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::gemm_root_v<D>) return materialize_epilogue(std::forward<N>(n), src);
  else if constexpr (plan::is_heavy_v<D>) return with_prepared_input(std::forward<N>(n), src);
  else return materialize(std::forward<N>(n), src);
}
} // namespace tenfold::cpu
