#pragma once
// A step: statements run in order over named values (slots) that the planner places in one arena.
//
// A training step is not one expression. Its forward pass keeps stage outputs that the backward pass
// reads, gradients feed other gradients, and host code runs between them (an allreduce). Written as
//
//   slot<float, shape<64, 128>, struct h_> h;     // a value of the step (the tag names it)
//   auto s = statements(assign(h, relu(matmul(x, w1) + b1)),            // h: an arena place
//                       assign(gw2, ...reads h...),
//                       host([&](auto hm) { comm.allreduce(hm); }, h),   // hm: a TensorMap of h
//                       ...);
//   run_step(s, arena);                          // step_plan<decltype(s)>::bytes, a constexpr
//
// every slot gets an arena place alive from the statement that first writes it to the last that reads
// it, shared over time with the other slots and with every statement's own temporaries: the plan of the
// whole step is one constexpr (plan/step.hpp), and running it allocates nothing. A slot is an ordinary
// leaf (views fold into it, vjp differentiates with respect to it) whose storage the backend supplies
// when the statement runs; outside a step it has none. Tensors and maps (parameters, optimizer moments)
// are read and written by statements as anywhere else.
//
// A kept slot (`slot<float, shape<128, 10>, kept<struct w4_>>`) is a result of the step, a gradient: it
// is not shared over time but laid out at the front of the arena in the order the statements finish the
// kept slots, and read after the step (step_plan<S>::kept(arena, slot)). Cut into buckets, each a
// contiguous run finished at a known statement, run_step hands them to the caller as they complete
// (cpu/step.hpp's on_buckets: an allreduce started while the rest of the backward pass runs).
#include "tenfold/core/expr.hpp"
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/param_holder.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/unpack.hpp"
#include "tenfold/core/view.hpp"

namespace tenfold {
namespace detail {
// The storage of a slot: T and S are the whole slot's (a view of it has its own shape), Tag names it.
// It has no address until a backend running the step gives it one.
template <class T, class S, class Tag>
struct slot_ref {
  TENFOLD_HD T* data() const { return nullptr; }
};
template <class H>
struct slot_ref_of {
  using type = void;
};
template <class T, class S, class Tag>
struct slot_ref_of<slot_ref<T, S, Tag>> {
  using type = slot_ref<T, S, Tag>;
};
template <class T, class Tag, int K, class M>
struct slot_ref_of<autodiff::param_holder<T, Tag, K, M>> : slot_ref_of<M> {};
// The slot a leaf reads (a slot, a view of one, or a parameter of vjp over one), or void.
template <class L>
struct slot_read {
  using type = void;
};
template <class T, class S, auto St, index_t O, class H>
struct slot_read<leaf<T, S, St, O, H>> : slot_ref_of<H> {};
template <class L>
using slot_read_t = typename slot_read<L>::type;

// dst = value, as a statement.
template <class Dst, class E>
struct assign_stmt {
  detail::tuple<Dst, E> args;
  template <class D2, class E2>
  constexpr auto with_children(detail::tuple<D2, E2>&& c) const {
    return assign_stmt<D2, E2>{std::move(c)};
  }
};
// f(TensorMap of each arg...), run on the host between two statements.
template <class F, class... A>
struct host_stmt {
  F f;
  detail::tuple<A...> args;
  template <class... A2>
  constexpr auto with_children(detail::tuple<A2...>&& c) const {
    return host_stmt<F, A2...>{f, std::move(c)};
  }
};
template <class... S>
struct statements_node {
  detail::tuple<S...> args;
  template <class... S2>
  constexpr auto with_children(detail::tuple<S2...>&& c) const {
    return statements_node<S2...>{std::move(c)};
  }
};
// Assignments of one shape run as one pass over their elements (together(...)).
template <class... S>
struct together_node {
  detail::tuple<S...> args;
  template <class... S2>
  constexpr auto with_children(detail::tuple<S2...>&& c) const {
    return together_node<S2...>{std::move(c)};
  }
};
template <class S>
inline constexpr bool is_assign_stmt_v = false;
template <class D, class E>
inline constexpr bool is_assign_stmt_v<assign_stmt<D, E>> = true;
template <class S>
inline constexpr bool is_host_stmt_v = false;
template <class F, class... A>
inline constexpr bool is_host_stmt_v<host_stmt<F, A...>> = true;
template <class S>
inline constexpr bool is_statements_v = false;
template <class... S>
inline constexpr bool is_statements_v<statements_node<S...>> = true;
template <class S>
inline constexpr bool is_together_v = false;
template <class... S>
inline constexpr bool is_together_v<together_node<S...>> = true;
// A reduction of an elementwise tree, under any reshapes: together(...) runs such values block by block.
template <class N>
constexpr bool is_reduction_tree() {
  if constexpr (is_reduce_node_v<N>) return is_elementwise_tree<typename N::child_type>();
  else if constexpr (is_reshape_view_v<N>) return is_reduction_tree<typename N::child_type>();
  else return false;
}
// An elementwise tree over exactly one matmul: together(...) of such values over one product (the same
// operands) runs the product once and stores every value from its blocks (a layer's pre-activation and
// activation, or an activation and its derivative, from one GEMM).
template <class N>
constexpr int matmuls_in_epilogue() { // -1: not an elementwise tree over matmuls
  if constexpr (is_matmul_node_v<N>) return 1;
  else if constexpr (is_leaf_v<N> || is_scalar_node_v<N>) return 0;
  else if constexpr (is_map_node_v<N>)
    return []<class... C>(tuple<C...>*) {
      const int c[] = {matmuls_in_epilogue<C>()...};
      int sum = 0;
      for (int x : c) {
        if (x < 0) return -1;
        sum += x;
      }
      return sum;
    }(static_cast<decltype(N::args)*>(nullptr));
  else return -1;
}
template <class N>
constexpr bool is_product_epilogue() {
  return matmuls_in_epilogue<N>() == 1;
}
template <class S>
inline constexpr bool is_statement_v = is_assign_stmt_v<S> || is_host_stmt_v<S> || is_statements_v<S> || is_together_v<S>;

template <class X>
auto as_target(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<D>) {
    static_assert(!std::is_const_v<typename D::element_type>, "tenfold::assign: the destination is read-only");
    return D(x);
  } else {
    static_assert(is_tensor_v<D> || borrows_elements_v<D>, "tenfold::assign: the destination must be a slot, a Tensor or a TensorMap");
    static_assert(std::is_lvalue_reference_v<X> || borrows_elements_v<D>, "tenfold::assign: the destination must be an lvalue tensor");
    return as_node(x);
  }
}
} // namespace detail

// The tag of a kept slot: a result of the step, placed apart and alive after it.
template <class Tag>
struct kept {};

// A value of a step: T elements of shape S, named by Tag (`struct h_` declares one in place).
template <class T, class S, class Tag>
using slot = detail::leaf<T, S, detail::canon(strides_of<S>), 0, detail::slot_ref<T, S, Tag>>;

// dst = value, as a statement of a step (dst: a slot, a Tensor or a TensorMap; value broadcast to it).
template <class D, expression E>
auto assign(D&& dst, E&& value) {
  auto d = detail::as_target(std::forward<D>(dst));
  auto v = detail::expand_to<typename decltype(d)::shape_type>(detail::as_node(std::forward<E>(value)));
  return detail::assign_stmt<decltype(d), decltype(v)>{{std::move(d), std::move(v)}};
}
// f(m...) on the host, m a TensorMap of each argument (a slot, a Tensor or a TensorMap, contiguous), run
// in its place among the statements. A slot it reads (or writes) lives at least until it runs.
template <class F, class... A>
auto host(F&& f, A&&... a) {
  return detail::host_stmt<std::remove_cvref_t<F>, decltype(detail::as_target(std::forward<A>(a)))...>{
      std::forward<F>(f), {detail::as_target(std::forward<A>(a))...}};
}
// Assignments of one shape as one pass. Elementwise ones (leaves, scalars and elementwise ops: no
// reduction, product or view that moves elements) run over the elements, each element's assignments in
// order: an optimizer's update reads a parameter, its gradient and its moments once and writes the three
// back. Reductions of elementwise values (each under reshapes, if any) run block by block over their
// operands: batch norm's gamma and beta gradients, two column sums of the same [N, H, W, C] values,
// read them from memory once. The result is the assignments' in sequence (where a destination is read
// other than at the element being written, the backend runs them one after another).
template <class D, class E, class... S>
auto together(detail::assign_stmt<D, E> first, S... rest) {
  static_assert((detail::is_assign_stmt_v<S> && ...), "tenfold::together: each statement is an assign(...)");
  static_assert(((std::is_same_v<typename std::remove_cvref_t<decltype(detail::get<0>(rest.args))>::shape_type, typename D::shape_type>) && ...),
                "tenfold::together: every destination must have the same shape");
  static_assert((detail::is_elementwise_tree<E>() && (detail::is_elementwise_tree<std::remove_cvref_t<decltype(detail::get<1>(rest.args))>>() && ...)) ||
                    (detail::is_reduction_tree<E>() && (detail::is_reduction_tree<std::remove_cvref_t<decltype(detail::get<1>(rest.args))>>() && ...)) ||
                    (detail::is_product_epilogue<E>() && (detail::is_product_epilogue<std::remove_cvref_t<decltype(detail::get<1>(rest.args))>>() && ...)),
                "tenfold::together: the values must be all elementwise (leaves, scalars and elementwise ops), all reductions "
                "of elementwise values, or all elementwise over one matmul (the same product's epilogues)");
  return detail::together_node<detail::assign_stmt<D, E>, S...>{{std::move(first), std::move(rest)...}};
}
// Statements, run in order (nested groups run in place).
template <class... S>
auto statements(S&&... s) {
  static_assert((detail::is_statement_v<std::remove_cvref_t<S>> && ...),
                "tenfold::statements: each statement is an assign(...), a host(...), together(...) or statements(...)");
  return detail::statements_node<std::remove_cvref_t<S>...>{{std::forward<S>(s)...}};
}
} // namespace tenfold
