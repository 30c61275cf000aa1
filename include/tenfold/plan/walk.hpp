#pragma once
// The one walk over an expression before it runs. It decides, from the types alone and in one place,
// which subtrees are evaluated first into buffers of their own (plan/fusion.hpp says which), in what
// order they take their buffers and run, what a let's placeholders read, and what stays fused in its
// consumer's loop nest. It returns the root rebuilt over the prepared inputs, for the backend to run.
//
// A backend says only how to do each step:
//   be.template take<T, S>()     the next planned buffer, as a writable leaf of element T and shape S
//   be.leaf(l)                   a leaf of the expression (a tensor or a view of one), as the nest reads it
//   be.run(dst, node)            one loop nest (kernel) writing `node` into `dst`
//   be.bound(leaf)               what a let's placeholders read when its value is `leaf`: a binding
//   be.template resolve<P>(b)    a leaf of placeholder type P reading binding b
//   be.lets[]                    the bindings of the lets in scope (from walk_state)
// The CPU and CUDA evaluators are this walk over their backend; the arena planner (plan/arena.hpp) is
// this walk, run at compile time, over a backend that counts buffers and records who reads them. So
// the buffers are taken in one order by construction.
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/core/children.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::plan {

inline constexpr int max_let_depth = 64;

// The lets in scope, outermost first, as their tag types (types compare exactly at compile time).
template <class... Tags>
struct let_scope {
  static constexpr int depth = sizeof...(Tags);
  template <class T>
  using push = let_scope<Tags..., T>;
  // The depth of the innermost let with tag T, or -1.
  template <class T>
  static constexpr int find() {
    constexpr bool match[] = {std::is_same_v<T, Tags>..., false};
    for (int i = int(sizeof...(Tags)) - 1; i >= 0; --i)
      if (match[i]) return i;
    return -1;
  }
};

// What a let's placeholders read: a planned buffer (its index, where the backend knows it) or memory.
struct binding {
  int buffer = -1;
  const void* data = nullptr;
};
struct walk_state {
  binding lets[max_let_depth]{};
};

// The hooks of a backend whose leaves and buffers are plain memory (the CPU's and CUDA's): a leaf is
// read as it is, a let binds its value's address, and a placeholder reads that address with its own
// shape and strides through the backend's holder (a host or a device pointer).
template <template <class> class Holder>
struct memory_hooks : walk_state {
  template <class L>
  std::remove_cvref_t<L> leaf(L&& l) const {
    return std::forward<L>(l);
  }
  template <class L>
  binding bound(const L& value) const {
    return {-1, value.data()};
  }
  template <class P>
  auto resolve(binding b) const {
    using T = typename P::element_type;
    return detail::leaf<T, typename P::shape_type, P::strides, P::offset, Holder<T>>{{}, {static_cast<T*>(b.data)}};
  }
};

namespace walk {

template <class Scope, class B, class N>
constexpr auto prepare(N&& n, B& be);
template <class Scope, class B, class N>
constexpr auto prepare_root(N&& n, B& be);

// prepare, as a function of one child.
template <class Scope, class B>
constexpr auto each(B& be) {
  return [&be](auto&& c) { return prepare<Scope>(std::forward<decltype(c)>(c), be); };
}

// f applied to each child of n, left to right (braced initialisation fixes the order, and with it the
// order in which buffers are taken), then n rebuilt over the results.
template <class N, class F>
constexpr auto rebuild(N&& n, F f) {
  auto c = detail::unpack([&](auto&&... c) { return detail::tuple<decltype(f(std::forward<decltype(c)>(c)))...>{f(std::forward<decltype(c)>(c))...}; },
                      detail::children(std::forward<N>(n)));
  return n.with_children(std::move(c)); // reads only n's own data (a scale, a pad value), not its children
}

// n evaluated by a nest of its own into the next buffer; the buffer is taken before n's inputs.
template <class Scope, class B, class N>
constexpr auto into_buffer(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  auto buffer = be.template take<typename D::value_type, typename D::shape_type>();
  be.run(buffer, prepare_root<Scope>(std::forward<N>(n), be));
  return buffer;
}

// How an elementwise tree over matrices reads its leaves: 0 not at all (scalars, broadcasts, reductions
// broadcast back: a norm's mean), 1 down their columns (every leaf read with unit stride along the
// rows: a transposed matrix), 2 otherwise.
template <class N>
constexpr int matrix_reading() {
  if constexpr (detail::is_scalar_node_v<N> || is_reduce_view_v<N>) return 0;
  else if constexpr (detail::is_leaf_v<N>) {
    if constexpr (N::rank != 2) return 2;
    else if constexpr (N::strides[0] == 0 || N::strides[1] == 0) return 0;
    else return N::strides[0] == 1 && N::shape_type::dims[1] > 1 ? 1 : 2;
  } else if constexpr (detail::is_map_node_v<N>)
    return []<class... C>(detail::tuple<C...>*) {
      int r = 0;
      ((r = std::max(r, matrix_reading<C>())), ...);
      return r;
    }(static_cast<decltype(N::args)*>(nullptr));
  else return 2;
}

// A GEMM or attention operand must be memory the kernel reads directly: a tensor or a strided view of one.
// An elementwise matrix that reads its operands transposed (gelu(a)ᵀ, a weight gradient's operand) is
// computed in their layout and read transposed: the kernels take any strides, and the copy then runs
// along rows (the decoder's gelu(a)ᵀ [512, 768]: 260 -> 90 us) instead of in transposing blocks.
template <class Scope, class B, class X>
constexpr auto operand_leaf(X&& x, B& be) {
  using D = std::remove_cvref_t<X>;
  if constexpr (detail::is_leaf_v<D>) return prepare<Scope>(std::forward<X>(x), be);
  else if constexpr (detail::is_map_node_v<D> && matrix_reading<D>() == 1) {
    using T = decltype(detail::permute_map<typename D::shape_type, 1, 0>());
    auto buffer = into_buffer<Scope>(detail::apply_view<T>(std::forward<X>(x)), be);
    return detail::apply_view<decltype(detail::permute_map<typename decltype(buffer)::shape_type, 1, 0>())>(buffer);
  }
  else return into_buffer<Scope>(std::forward<X>(x), be);
}

// A heavy node (reduction, scan, GEMM, attention) over prepared inputs; it runs its own kernel.
template <class Scope, class B, class H>
constexpr auto with_prepared_input(H&& h, B& be) {
  using D = std::remove_cvref_t<H>;
  if constexpr (is_gemm_driven_v<D> || detail::is_leaf_operand_node_v<D>)
    return rebuild(std::forward<H>(h), [&be](auto&& c) { return operand_leaf<Scope>(std::forward<decltype(c)>(c), be); });
  else return rebuild(std::forward<H>(h), each<Scope>(be));
}

// A stack of views over a heavy node: the node into a buffer, the views applied to it (folding into
// its strides), innermost first.
template <class Scope, class B, class N>
constexpr auto buffered_view(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  if constexpr (is_view_node_v<D>) return detail::apply_view<typename D::map_type>(buffered_view<Scope>(std::forward<N>(n).arg, be));
  else return into_buffer<Scope>(std::forward<N>(n), be);
}

// Entering a let (or a chain): its value into the next buffer (or, a tensor already, read in place); the body's
// placeholders then read that binding.
template <class Scope, class B, class L>
constexpr void bind(L&& l, B& be) {
  using D = std::remove_cvref_t<L>;
  static_assert(Scope::depth < max_let_depth, "tenfold: lets nested more than 64 deep");
  if constexpr (D::in_place) be.lets[Scope::depth] = be.bound(prepare<Scope>(std::forward<L>(l).value, be));
  else be.lets[Scope::depth] = be.bound(into_buffer<Scope>(std::forward<L>(l).value, be));
}

template <class N>
struct unknown_to_the_walk {
  static_assert(sizeof(N) == 0, "tenfold: plan/walk.hpp does not know this node kind: say there how it is prepared");
};

template <class Scope, class B, class N>
constexpr auto prepare(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_let_node_v<D>) {
    bind<Scope>(std::forward<N>(n), be);
    return prepare<typename Scope::template push<typename D::tag_type>>(std::forward<N>(n).body, be);
  } else if constexpr (detail::is_leaf_v<D>) {
    if constexpr (std::is_void_v<detail::slot_of_t<D>>) return be.leaf(std::forward<N>(n));
    else {
      constexpr int d = Scope::template find<detail::slot_of_t<D>>();
      static_assert(d >= 0, "tenfold: a let placeholder is read outside the body of its let");
      return be.template resolve<D>(be.lets[d]);
    }
  } else if constexpr (detail::is_scalar_node_v<D> || detail::is_generator_node_v<D>) {
    return D(std::forward<N>(n));
  } else if constexpr (materializes_v<D> || detail::is_chain_node_v<D>) {
    return buffered_view<Scope>(std::forward<N>(n), be);
  } else if constexpr (row_fused_v<D>) { // view(reduce(x)): x prepared, the reduction stays in the row's nest
    return rebuild(std::forward<N>(n), [&be](auto&& r) { return rebuild(std::forward<decltype(r)>(r), each<Scope>(be)); });
  } else if constexpr (direct_fused_v<D>) {
    return with_prepared_input<Scope>(std::forward<N>(n), be);
  } else if constexpr (is_view_node_v<D>) { // a view of a light node (pad, concat): folded again where it can
    return detail::apply_view<typename D::map_type>(prepare<Scope>(std::forward<N>(n).arg, be));
  } else if constexpr (detail::is_map_node_v<D> || detail::is_pad_node_v<D> || detail::is_concat_node_v<D> ||
                       detail::is_take_node_v<D>) {
    return rebuild(std::forward<N>(n), each<Scope>(be));
  } else {
    return unknown_to_the_walk<D>{};
  }
}

// A GEMM's epilogue tree: its one GEMM-driven node keeps its kind (operands prepared), the rest as usual.
template <class Scope, class B, class N>
constexpr auto prepare_epilogue(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  if constexpr (is_gemm_driven_v<D>) return with_prepared_input<Scope>(std::forward<N>(n), be);
  else if constexpr (detail::is_map_node_v<D> && epilogue_matmuls<D>() == 1)
    return rebuild(std::forward<N>(n), [&be](auto&& c) { return prepare_epilogue<Scope>(std::forward<decltype(c)>(c), be); });
  else return prepare<Scope>(std::forward<N>(n), be);
}

// The root keeps its own kind: a reduction at the root runs the reduction kernel, a GEMM drives its
// epilogue; its inputs are prepared.
template <class Scope, class B, class N>
constexpr auto prepare_root(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_let_node_v<D>) {
    bind<Scope>(std::forward<N>(n), be);
    return prepare_root<typename Scope::template push<typename D::tag_type>>(std::forward<N>(n).body, be);
  } else if constexpr (detail::is_chain_node_v<D>) {
    // Layer by layer, a loop (not a recursion): each layer's output into a buffer its successor reads.
    using Inner = typename Scope::template push<typename D::tag_type>;
    bind<Scope>(std::forward<N>(n), be);
    for (index_t i = 0; i + 1 < D::layers; ++i)
      be.lets[Scope::depth] = be.bound(into_buffer<Inner>(std::forward<N>(n).bodies[std::size_t(i)], be));
    return prepare_root<Inner>(std::forward<N>(n).bodies[std::size_t(D::layers - 1)], be);
  } else if constexpr (gemm_root_v<D>) return prepare_epilogue<Scope>(std::forward<N>(n), be);
  else if constexpr (is_heavy_v<D>) return with_prepared_input<Scope>(std::forward<N>(n), be);
  else return prepare<Scope>(std::forward<N>(n), be);
}
} // namespace walk

// An assignment of reshape(e) to a destination laid out row-major is the assignment of e to the same
// memory read in e's shape: e's nest then writes the destination itself, not a buffer that a second nest
// copies into it (a max pool's gradient, computed over the windows and reshaped back to the input's
// shape; a flattening layer's input gradient). Through lets at the root, and a let of a value merely
// reshaped is its value; not for a bare tensor (its reshape is a strided copy already) nor for bounded
// shapes. Every walk of an assignment (the evaluators, the arena and step planners) peels the root the
// same way, so that the buffers they take agree.
template <class Dst, class Root>
struct assignment {
  Dst dst;
  Root root;
};
// A let whose body is its own value reshaped (let(e, reshape(v)): e into a buffer, then its elements
// in order into the destination; a pool's gradient merges its windows so).
template <class D>
constexpr bool reshapes_own_value() {
  using B = typename D::body_node;
  if constexpr (is_view_node_v<B>) {
    if constexpr (detail::is_reshape_map_v<typename B::map_type>) return reshapes_own_value<detail::let_node<typename D::tag_type, typename D::value_node, typename B::child_type>>();
    else return false;
  } else if constexpr (detail::is_leaf_v<B>) {
    return std::is_same_v<detail::slot_of_t<B>, typename D::tag_type> && B::offset == 0 && B::strides == detail::canon(strides_of<typename B::shape_type>);
  } else {
    return false;
  }
}
template <class Dst, class N>
constexpr auto peel_reshape(const Dst& dst, N&& n) {
  using D = std::remove_cvref_t<N>;
  using S = typename Dst::shape_type;
  if constexpr (S::has_bounded || Dst::strides != detail::canon(strides_of<S>)) {
    return assignment<Dst, D>{dst, std::forward<N>(n)};
  } else if constexpr (detail::is_let_node_v<D>) {
    if constexpr (reshapes_own_value<D>()) {
      using VS = typename D::value_node::shape_type;
      using To = detail::leaf<typename Dst::element_type, VS, detail::canon(strides_of<VS>), Dst::offset, typename Dst::holder_type>;
      return peel_reshape(To{{}, dst.holder}, std::forward<N>(n).value);
    } else {
      auto inner = peel_reshape(dst, std::forward<N>(n).body);
      using Body = decltype(inner.root);
      return assignment<decltype(inner.dst), detail::let_node<typename D::tag_type, typename D::value_node, Body>>{
          inner.dst, {{}, std::forward<N>(n).value, std::move(inner.root)}};
    }
  } else if constexpr (is_view_node_v<D>) {
    using C = typename D::child_type;
    using CS = typename C::shape_type;
    if constexpr (detail::is_leaf_v<C> || !detail::is_reshape_map_v<typename D::map_type> || CS::has_bounded)
      return assignment<Dst, D>{dst, std::forward<N>(n)};
    else {
      using To = detail::leaf<typename Dst::element_type, CS, detail::canon(strides_of<CS>), Dst::offset, typename Dst::holder_type>;
      return peel_reshape(To{{}, dst.holder}, std::forward<N>(n).arg);
    }
  } else {
    return assignment<Dst, D>{dst, std::forward<N>(n)};
  }
}

// The root of an assignment, prepared through backend `be`: every buffer it needs is taken and filled
// (be.run for each, inputs first); the result is the tree the root's own nest runs.
template <class B, class N>
constexpr auto prepare_root(N&& n, B& be) {
  return walk::prepare_root<let_scope<>>(std::forward<N>(n), be);
}
} // namespace tenfold::plan
