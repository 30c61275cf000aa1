#pragma once
// Before an assignment runs, every subtree that plan/fusion.hpp marks as materialising is evaluated
// into a buffer of its own and replaced by a leaf reading it; row-fused reductions stay in place; a
// let's value is evaluated once and its placeholders are pointed at it. Buffers are slots of an arena
// laid out at compile time by plan/arena.hpp. The order in which buffers are taken here is the order
// plan/arena.hpp numbers them in: keep the two in step.
#include <cstddef>

#include "tenfold/core/tensor.hpp"
#include "tenfold/plan/arena.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run(const Dst& dst, const N& n);

// The lets in scope while a tree is prepared: each tag with the buffer its placeholders read.
struct let_scope {
  struct entry {
    const void* tag;
    const void* data;
  };
  entry scope[plan::max_let_depth];
  int depth = 0;
  void push(const void* tag, const void* data) { scope[depth++] = {tag, data}; }
  void pop() { --depth; }
  const void* find(const void* tag) const {
    for (int i = depth - 1; i >= 0; --i)
      if (scope[i].tag == tag) return scope[i].data;
    return nullptr; // unreachable: the planner rejects a placeholder outside its let at compile time
  }
};

// Each buffer is the next slot of a planned arena (laid out by plan/arena.hpp).
struct arena_buffers : let_scope {
  std::byte* base;
  const index_t* offsets;
  int next = 0;
  arena_buffers(std::byte* b, const index_t* o) : base(b), offsets(o) {}
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

// A matmul or conv operand must be memory the GEMM can pack from: a tensor or a strided view of one.
template <class Src, class X>
auto as_operand_leaf(X&& x, Src& src) {
  using D = std::remove_cvref_t<X>;
  if constexpr (detail::is_leaf_v<D>) return materialize(std::forward<X>(x), src);
  else {
    auto buffer = src.template take<typename D::value_type, typename D::shape_type>();
    run(buffer, materialize_root(std::forward<X>(x), src));
    return buffer;
  }
}

// The same reduction, scan, matmul or conv over prepared inputs (whose types may differ from the original's).
template <class Src, class H>
auto with_prepared_input(H&& h, Src& src) {
  using D = std::remove_cvref_t<H>;
  if constexpr (plan::is_gemm_driven_v<D>) {
    // Braced initialisation evaluates left to right: operand buffers are taken in the planned order.
    return std::apply(
        [&src](auto&&... c) {
          return typename D::template with_operands<decltype(as_operand_leaf(std::forward<decltype(c)>(c), src))...>{
              {}, {as_operand_leaf(std::forward<decltype(c)>(c), src)...}};
        },
        std::forward<H>(h).args);
  } else if constexpr (detail::is_leaf_operand_node_v<D>) {
    return std::apply(
        [&](auto&&... c) {
          // Braced initialisation evaluates left to right: buffers are taken in the planned order.
          return h.with_operands(std::tuple<decltype(as_operand_leaf(std::forward<decltype(c)>(c), src))...>{
              as_operand_leaf(std::forward<decltype(c)>(c), src)...});
        },
        std::forward<H>(h).args);
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

// Entering a let: its value is evaluated into the next buffer (or, already a tensor, read in place),
// and its placeholders read that storage until the body is prepared.
template <class Src, class L>
void bind(L&& l, Src& src) {
  using D = std::remove_cvref_t<L>;
  using V = typename D::value_node;
  const void* data;
  if constexpr (D::in_place) {
    data = materialize(std::forward<L>(l).value, src).data();
  } else {
    auto buffer = src.template take<typename V::value_type, typename V::shape_type>();
    run(buffer, materialize_root(std::forward<L>(l).value, src));
    data = buffer.data();
  }
  src.push(&plan::tag_id<typename D::tag_type>, data);
}

template <class Src, class N>
auto materialize(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_let_node_v<D>) {
    bind(std::forward<N>(n), src);
    auto body = materialize(std::forward<N>(n).body, src);
    src.pop();
    return body;
  } else if constexpr (detail::is_leaf_v<D>) {
    if constexpr (std::is_void_v<detail::slot_of_t<D>>) return D(std::forward<N>(n));
    else {
      using T = typename D::element_type;
      const void* data = src.find(&plan::tag_id<detail::slot_of_t<D>>);
      return detail::leaf<T, typename D::shape_type, D::strides, D::offset, detail::ref_holder<T>>{{}, {static_cast<T*>(data)}};
    }
  } else if constexpr (plan::materializes_v<D>) {
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
  } else if constexpr (plan::is_view_node_v<D> && detail::contains_let<D>()) {
    return detail::apply_view<typename D::map_type>(materialize(std::forward<N>(n).arg, src));
  } else {
    return D(std::forward<N>(n)); // scalars, generators, and index maps of light nodes
  }
}

// A GEMM epilogue tree: its one matmul (or conv) stays (operands prepared), the rest is materialised as usual.
template <class Src, class N>
auto materialize_epilogue(N&& n, Src& src) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::is_gemm_driven_v<D>) return with_prepared_input(std::forward<N>(n), src);
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
  if constexpr (detail::is_let_node_v<D>) {
    bind(std::forward<N>(n), src);
    auto body = materialize_root(std::forward<N>(n).body, src);
    src.pop();
    return body;
  } else if constexpr (plan::gemm_root_v<D>) return materialize_epilogue(std::forward<N>(n), src);
  else if constexpr (plan::is_heavy_v<D>) return with_prepared_input(std::forward<N>(n), src);
  else return materialize(std::forward<N>(n), src);
}
} // namespace tenfold::cpu
