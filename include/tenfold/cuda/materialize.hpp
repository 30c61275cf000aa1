#pragma once
// Before an assignment runs, every subtree that plan/fusion.hpp marks as materialising is evaluated
// into a slot of the program's device arena (its own kernel) and replaced by a device leaf reading it.
// The walk follows cpu/materialize.hpp step for step, because plan/arena.hpp numbers the buffers in
// that walk's order; the two must stay in step. (Both are backend-neutral in what they decide; once
// plan/ offers the walk itself, with a callback per buffer, this file shrinks to the callback.)
#include "tenfold/cuda/tensor.hpp"
#include "tenfold/plan/arena.hpp"

namespace tenfold::cuda {

// The slots of one arena allocation, handed out in the planner's order, and the lets in scope (each
// let's tag with the device buffer its placeholders read). Host-side only: computes device addresses,
// never touches them.
struct arena_slots {
  std::byte* base;
  const index_t* offsets;
  int count;
  int next = 0;
  struct binding {
    const void* tag;
    const void* data;
  };
  binding scope[plan::max_let_depth] = {};
  int depth = 0;

  template <class T, class S>
  device_leaf<T, S> take() {
    if (next >= count) throw error("tenfold::cuda: more buffers taken than the arena plan holds (planner and walk out of step)");
    return leaf_at<T, S>(reinterpret_cast<T*>(base + offsets[next++]));
  }
  void push(const void* tag, const void* data) { scope[depth++] = {tag, data}; }
  void pop() { --depth; }
  const void* find(const void* tag) const {
    for (int i = depth - 1; i >= 0; --i)
      if (scope[i].tag == tag) return scope[i].data;
    return nullptr; // unreachable: the planner rejects a placeholder outside its let at compile time
  }
};

namespace detail {

template <class Dst, class N>
void run(const Dst& dst, const N& n, stream_ref s);

template <class Src, class N>
auto materialize(N&& n, Src& src, stream_ref s);
template <class Src, class N>
auto materialize_root(N&& n, Src& src, stream_ref s);

template <class Src, class X>
auto as_operand_leaf(X&& x, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<X>;
  if constexpr (tenfold::detail::is_leaf_v<D>) return materialize(std::forward<X>(x), src, s);
  else {
    auto buffer = src.template take<typename D::value_type, typename D::shape_type>();
    run(buffer, materialize_root(std::forward<X>(x), src, s), s);
    return buffer;
  }
}

template <class Src, class H>
auto with_prepared_input(H&& h, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<H>;
  if constexpr (tenfold::detail::is_matmul_node_v<D>) {
    auto a = as_operand_leaf(std::get<0>(std::forward<H>(h).args), src, s);
    auto b = as_operand_leaf(std::get<1>(std::forward<H>(h).args), src, s);
    return tenfold::detail::matmul_node<decltype(a), decltype(b)>{{}, {std::move(a), std::move(b)}};
  } else {
    auto c = materialize(std::forward<H>(h).arg, src, s);
    if constexpr (tenfold::detail::is_reduce_node_v<D>)
      return tenfold::detail::reduce_node<typename D::op_type, decltype(c), D::mask, D::keep>{{}, std::move(c)};
    else return tenfold::detail::scan_node<typename D::op_type, decltype(c), D::axis>{{}, std::move(c)};
  }
}

template <class Src, class H>
auto to_leaf(H&& h, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<H>;
  auto buffer = src.template take<typename D::value_type, typename D::shape_type>();
  run(buffer, materialize_root(std::forward<H>(h), src, s), s);
  return buffer;
}

template <class Src, class N>
auto buffered_view(N&& n, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<N>;
  if constexpr (plan::is_view_node_v<D>)
    return tenfold::detail::apply_view<typename D::map_type>(buffered_view(std::forward<N>(n).arg, src, s));
  else return to_leaf(std::forward<N>(n), src, s);
}

// Entering a let: its value is evaluated into the next buffer (or, already a device tensor, read in
// place), and its placeholders read that storage while the body is prepared.
template <class Src, class L>
void bind(L&& l, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<L>;
  using V = typename D::value_node;
  const void* data;
  if constexpr (D::in_place) {
    data = materialize(std::forward<L>(l).value, src, s).data();
  } else {
    auto buffer = src.template take<typename V::value_type, typename V::shape_type>();
    run(buffer, materialize_root(std::forward<L>(l).value, src, s), s);
    data = buffer.data();
  }
  src.push(&plan::tag_id<typename D::tag_type>, data);
}

template <class Src, class N>
auto materialize(N&& n, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<N>;
  if constexpr (tenfold::detail::is_let_node_v<D>) {
    bind(std::forward<N>(n), src, s);
    auto body = materialize(std::forward<N>(n).body, src, s);
    src.pop();
    return body;
  } else if constexpr (tenfold::detail::is_leaf_v<D>) {
    if constexpr (std::is_void_v<tenfold::detail::slot_of_t<D>>) return D(std::forward<N>(n));
    else { // a placeholder: now a device leaf over its let's buffer
      using T = typename D::element_type;
      const void* data = src.find(&plan::tag_id<tenfold::detail::slot_of_t<D>>);
      return tenfold::detail::leaf<T, typename D::shape_type, D::strides, D::offset, device_holder<T>>{{}, {static_cast<T*>(data)}};
    }
  } else if constexpr (plan::materializes_v<D>) {
    if constexpr (plan::is_view_node_v<D>) return buffered_view(std::forward<N>(n), src, s);
    else return to_leaf(std::forward<N>(n), src, s);
  } else if constexpr (plan::row_fused_v<D>) {
    using Rd = typename D::child_type;
    auto c = materialize(std::forward<N>(n).arg.arg, src, s);
    return tenfold::detail::view_node<typename D::map_type, tenfold::detail::reduce_node<typename Rd::op_type, decltype(c), Rd::mask, Rd::keep>>{
        {}, {{}, std::move(c)}};
  } else if constexpr (plan::direct_fused_v<D>) {
    return with_prepared_input(std::forward<N>(n), src, s);
  } else if constexpr (tenfold::detail::is_map_node_v<D>) {
    return std::apply(
        [&src, s](auto&&... c) {
          // Braced initialisation evaluates left to right: buffers are taken in the planned order.
          return tenfold::detail::map_node<typename D::op_type, decltype(materialize(std::forward<decltype(c)>(c), src, s))...>{
              {}, {materialize(std::forward<decltype(c)>(c), src, s)...}};
        },
        std::forward<N>(n).args);
  } else if constexpr (plan::is_view_node_v<D> && tenfold::detail::contains_let<D>()) {
    return tenfold::detail::apply_view<typename D::map_type>(materialize(std::forward<N>(n).arg, src, s));
  } else {
    return D(std::forward<N>(n)); // scalars, generators, and index maps of light nodes
  }
}

template <class Src, class N>
auto materialize_epilogue(N&& n, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<N>;
  if constexpr (tenfold::detail::is_matmul_node_v<D>) return with_prepared_input(std::forward<N>(n), src, s);
  else if constexpr (tenfold::detail::is_map_node_v<D> && plan::epilogue_matmuls<D>() == 1) {
    return std::apply(
        [&src, s](auto&&... c) {
          return tenfold::detail::map_node<typename D::op_type, decltype(materialize_epilogue(std::forward<decltype(c)>(c), src, s))...>{
              {}, {materialize_epilogue(std::forward<decltype(c)>(c), src, s)...}};
        },
        std::forward<N>(n).args);
  } else return materialize(std::forward<N>(n), src, s);
}

template <class Src, class N>
auto materialize_root(N&& n, Src& src, stream_ref s) {
  using D = std::remove_cvref_t<N>;
  if constexpr (tenfold::detail::is_let_node_v<D>) {
    bind(std::forward<N>(n), src, s);
    auto body = materialize_root(std::forward<N>(n).body, src, s);
    src.pop();
    return body;
  } else if constexpr (plan::gemm_root_v<D>) return materialize_epilogue(std::forward<N>(n), src, s);
  else if constexpr (plan::is_heavy_v<D>) return with_prepared_input(std::forward<N>(n), src, s);
  else return materialize(std::forward<N>(n), src, s);
}
} // namespace detail
} // namespace tenfold::cuda
