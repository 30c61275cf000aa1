#pragma once
// Before an assignment runs, every subtree that plan/fusion.hpp marks as materialising is evaluated
// into a buffer of its own and replaced by a leaf that owns it; row-fused reductions stay in place.
// (In a program the buffers come from the arena; a plain `eval` allocates them.)
#include "tenfold/core/tensor.hpp"
#include "tenfold/plan/fusion.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run(const Dst& dst, const N& n);

template <class N>
auto materialize(N&& n);
template <class N>
auto materialize_root(N&& n);

// A matmul operand must be memory the GEMM can pack from: a tensor or a strided view of one.
template <class X>
auto as_operand_leaf(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (detail::is_leaf_v<D>) return D(std::forward<X>(x));
  else {
    Tensor<typename D::value_type, typename D::shape_type> buffer;
    run(detail::as_node(buffer), materialize_root(std::forward<X>(x)));
    return detail::as_node(std::move(buffer));
  }
}

// The same reduction, scan or matmul over prepared inputs (whose types may differ from the original's).
template <class H>
auto with_prepared_input(H&& h) {
  using D = std::remove_cvref_t<H>;
  if constexpr (detail::is_matmul_node_v<D>) {
    auto a = as_operand_leaf(std::get<0>(std::forward<H>(h).args));
    auto b = as_operand_leaf(std::get<1>(std::forward<H>(h).args));
    return detail::matmul_node<decltype(a), decltype(b)>{{}, {std::move(a), std::move(b)}};
  } else {
    using C = decltype(materialize(std::forward<H>(h).arg));
    if constexpr (detail::is_reduce_node_v<D>)
      return detail::reduce_node<typename D::op_type, C, D::mask, D::keep>{{}, materialize(std::forward<H>(h).arg)};
    else return detail::scan_node<typename D::op_type, C, D::axis>{{}, materialize(std::forward<H>(h).arg)};
  }
}

// Evaluate a heavy node (reduction or scan) into an owned tensor; its own input is prepared first.
template <class H>
auto to_owned_leaf(H&& h) {
  using D = std::remove_cvref_t<H>;
  using T = typename D::value_type;
  Tensor<T, typename D::shape_type> buffer;
  auto prepared = with_prepared_input(std::forward<H>(h));
  run(detail::as_node(buffer), prepared);
  return detail::as_node(std::move(buffer));
}

template <class N>
auto materialize(N&& n) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::materializes_v<D>) {
    if constexpr (plan::is_view_node_v<D>) return detail::apply_view<typename D::map_type>(to_owned_leaf(std::forward<N>(n).arg));
    else return to_owned_leaf(std::forward<N>(n));
  } else if constexpr (plan::row_fused_v<D>) {
    using Rd = typename D::child_type;
    using C = decltype(materialize(std::forward<N>(n).arg.arg));
    return detail::view_node<typename D::map_type, detail::reduce_node<typename Rd::op_type, C, Rd::mask, Rd::keep>>{
        {}, {{}, materialize(std::forward<N>(n).arg.arg)}};
  } else if constexpr (plan::direct_fused_v<D>) {
    return with_prepared_input(std::forward<N>(n));
  } else if constexpr (detail::is_map_node_v<D>) {
    return std::apply(
        [](auto&&... c) {
          return detail::map_node<typename D::op_type, decltype(materialize(std::forward<decltype(c)>(c)))...>{
              {}, {materialize(std::forward<decltype(c)>(c))...}};
        },
        std::forward<N>(n).args);
  } else {
    return D(std::forward<N>(n)); // leaves, scalars, generators, and index maps of light nodes
  }
}

// A GEMM epilogue tree: its one matmul stays (operands prepared), the rest is materialised as usual.
template <class N>
auto materialize_epilogue(N&& n) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_matmul_node_v<D>) return with_prepared_input(std::forward<N>(n));
  else if constexpr (detail::is_map_node_v<D> && plan::epilogue_matmuls<D>() == 1) {
    return std::apply(
        [](auto&&... c) {
          return detail::map_node<typename D::op_type, decltype(materialize_epilogue(std::forward<decltype(c)>(c)))...>{
              {}, {materialize_epilogue(std::forward<decltype(c)>(c))...}};
        },
        std::forward<N>(n).args);
  } else return materialize(std::forward<N>(n));
}

// The root keeps its own kind (a reduction at the root runs the reduction kernel, a matmul drives its
// epilogue); its inputs are prepared.
template <class N>
auto materialize_root(N&& n) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::gemm_root_v<D>) return materialize_epilogue(std::forward<N>(n));
  else if constexpr (plan::is_heavy_v<D>) return with_prepared_input(std::forward<N>(n));
  else return materialize(std::forward<N>(n));
}
} // namespace tenfold::cpu
