#pragma once
// Reverse mode from the types. value_and_grad(f, params...) calls f with one leaf per parameter, whose
// holder's type names the parameter (f's type and the position K), and builds from the loss expression f
// returns one gradient expression per parameter: the chain rule applied to the tree at compile time, each
// step an expression — the op table's vjp for an elementwise or reduction node, the adjoint of a view, two
// GEMMs for a matmul. The gradients are ordinary expressions, evaluated by the one walk on any backend.
//
// A let (every composite binds a costly operand with one) is differentiated with respect to its
// placeholder first; that gradient is then carried into the bound value, inside the same let, so the
// value is computed once for both.
//
// The adjoints of views are in autodiff/view_adjoint.hpp, those of convolutions in autodiff/conv_adjoint.hpp.
//
// Not yet: the forward values are recomputed inside each gradient (saving them is the program's plan's
// job), and conv_transpose2d's input gradient needs its output padding below the stride (one at or past
// the stride, allowed below a larger dilation, is a compile error that says so). (take's adjoint, a
// scatter-add, runs on the CPU only.)
#include <string>
#include <tuple>
#include <utility>

#include "tenfold/autodiff/conv_adjoint.hpp"
#include "tenfold/autodiff/view_adjoint.hpp"
#include "tenfold/core/attention_grad_node.hpp"
#include "tenfold/core/children.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/core/param_holder.hpp"
#include "tenfold/core/scatter_node.hpp"
#include "tenfold/core/step.hpp"
#include "tenfold/ops/attention.hpp"
#include "tenfold/ops/composites.hpp"
#include "tenfold/ops/linear.hpp"

namespace tenfold::autodiff {

// What a gradient is taken with respect to: parameter K of Tag, or the placeholders of the let with tag
// Tag; S is its shape.
template <class Tag, int K, class S>
struct param_target {
  using shape_type = S;
};
template <class Tag, class S>
struct slot_target {
  using shape_type = S;
};

template <class Target, class N>
inline constexpr bool reads_target = false;
template <class Tag, int K, class S, class T, class LS, auto St, index_t O, class M>
inline constexpr bool reads_target<param_target<Tag, K, S>, detail::leaf<T, LS, St, O, param_holder<T, Tag, K, M>>> = true;
template <class Tag, class S, class T, class LS, auto St, index_t O, class U>
inline constexpr bool reads_target<slot_target<Tag, S>, detail::leaf<T, LS, St, O, detail::slot_holder<U, Tag>>> = true;

template <class Target>
struct reads {
  template <class N>
  struct pred : std::bool_constant<reads_target<Target, N>> {};
};
// Does the value of N depend on the target?
template <class Target, class N>
constexpr bool depends() {
  return detail::any_node<reads<Target>::template pred, N>();
}

template <class N>
inline constexpr bool is_view_v = false;
template <class M, class C>
inline constexpr bool is_view_v<detail::view_node<M, C>> = true;

// The gradient of a subtree that does not depend on the target.
struct zero {};

// Two pads that place their operands side by side along one axis, A's range ending where B's begins (the
// adjoints of neighbouring slices: q, k and v of one packed projection). Their sum is a concat of the
// operands, padded where neither reads: one copy of each part instead of a pass that adds three zero pads
// per element.
template <class A, class B>
struct adjacent_pads {
  // the one axis either pads along (-1: none, or more than one)
  static constexpr int axis = [] {
    if constexpr (!detail::is_pad_node_v<A> || !detail::is_pad_node_v<B>) return -1;
    else if constexpr (!std::is_same_v<typename A::shape_type, typename B::shape_type>) return -1;
    else {
      int found = -1;
      for (int i = 0; i < A::rank; ++i)
        if (A::pads[2 * i] != 0 || A::pads[2 * i + 1] != 0 || B::pads[2 * i] != 0 || B::pads[2 * i + 1] != 0) {
          if (found >= 0) return -1;
          found = i;
        }
      return found;
    }
  }();
  static constexpr bool value = [] {
    if constexpr (axis < 0) return false;
    else return A::pads[2 * axis] + A::input_shape::dims[axis] == B::pads[2 * axis];
  }();
};

// concat<Axis>(x, y), an operand that is itself a concat along Axis spliced in (so that a sum of three
// neighbouring pads is one concat of three parts).
template <int Axis, class X>
auto concat_parts(const X& x) {
  if constexpr (detail::is_concat_node_v<X>) {
    if constexpr (X::axis == Axis) return x.args;
    else return detail::tuple<X>{x};
  } else return detail::tuple<X>{x};
}
template <int Axis, class X, class Y>
auto concat_flat(const X& x, const Y& y) {
  return [&]<class... P, class... Q>(const detail::tuple<P...>& px, const detail::tuple<Q...>& py) {
    return [&]<std::size_t... I, std::size_t... J>(std::index_sequence<I...>, std::index_sequence<J...>) {
      return concat<Axis>(detail::get<I>(px)..., detail::get<J>(py)...);
    }(std::index_sequence_for<P...>{}, std::index_sequence_for<Q...>{});
  }(concat_parts<Axis>(x), concat_parts<Axis>(y));
}

// a + b for pads side by side: a gradient is linear in the loss's gradient, so every pad at the top of
// one is a view's adjoint and pads with zeros (checked).
template <class A, class B>
auto merge_pads(const A& a, const B& b) {
  constexpr int ax = adjacent_pads<A, B>::axis;
  if (a.value != 0 || b.value != 0) throw error("tenfold::value_and_grad: a gradient's pad with a value other than zero (internal)");
  auto parts = concat_flat<ax>(a.arg, b.arg);
  constexpr index_t before = A::pads[2 * ax], after = B::pads[2 * ax + 1];
  if constexpr (before == 0 && after == 0) return parts;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return pad<(I == std::size_t(2 * ax) ? before : I == std::size_t(2 * ax + 1) ? after : 0)...>(std::move(parts), 0);
    }(std::make_index_sequence<std::size_t(2 * A::rank)>{});
}

// The pad at the end of a chain of lets (a gradient taken through a composite that binds its operand
// ends in one), void where there is none; under_lets(x, f): f of that pad, inside the same lets.
template <class X>
struct pad_inside {
  using type = void;
};
template <class C, auto P>
struct pad_inside<detail::pad_node<C, P>> {
  using type = detail::pad_node<C, P>;
};
template <class Tag, class V, class Body>
struct pad_inside<detail::let_node<Tag, V, Body>> : pad_inside<Body> {};
template <class X, class F>
auto under_lets(const X& x, const F& f) {
  if constexpr (detail::is_let_node_v<X>) {
    auto body = detail::as_node(under_lets(x.body, f));
    return detail::let_node<typename X::tag_type, typename X::value_node, decltype(body)>{{}, x.value, std::move(body)};
  } else return f(x);
}
template <class A, class B>
auto merge_pads_under_lets(const A& a, const B& b) {
  return under_lets(a, [&](const auto& pa) { return under_lets(b, [&](const auto& pb) { return merge_pads(pa, pb); }); });
}

template <class A, class B>
auto plus(A&& a, B&& b) {
  using RA = std::remove_cvref_t<A>;
  using RB = std::remove_cvref_t<B>;
  using PA = typename pad_inside<RA>::type;
  using PB = typename pad_inside<RB>::type;
  if constexpr (std::is_same_v<RA, zero>) return std::forward<B>(b);
  else if constexpr (std::is_same_v<RB, zero>) return std::forward<A>(a);
  else if constexpr (adjacent_pads<PA, PB>::value) return merge_pads_under_lets(a, b);
  else if constexpr (adjacent_pads<PB, PA>::value) return merge_pads_under_lets(b, a);
  else return std::forward<A>(a) + std::forward<B>(b);
}

template <class Op>
struct op_without_derivative {
  static_assert(sizeof(Op) == 0, "tenfold::value_and_grad: the loss depends on the parameter through an op without a "
                                 "derivative (Op in the note: a comparison, a piecewise-constant op, argmax ...)");
};

// ---- matmul ----------------------------------------------------------------------------------------
// For C = A B over the last two axes, batched (batch axes broadcast as in NumPy): dA = g Bᵀ and dB = Aᵀ g,
// batched matmuls of the forward's batch shape whose transposes swap the last two axes (views: they fold
// into the strides the GEMM reads). An operand broadcast along batch axes (absent, or of extent 1) was
// read once per position there, so its gradient is summed over them.

// x summed back onto shape S, from which x's shape was broadcast: over x's leading axes, and over those
// where S has extent 1 and x does not.
template <class S, class XS>
constexpr auto unbroadcast_axes() {
  constexpr int lead = XS::rank - S::rank;
  std::array<int, XS::rank + 1> a{};
  int n = 0;
  for (int i = 0; i < XS::rank; ++i)
    if (XS::dims[i] != 1 && (i < lead || S::dims[i - lead] == 1)) a[n++] = i;
  a[XS::rank] = n;
  return a;
}
template <class S, class X, std::size_t... I>
auto sum_onto(X&& x, std::index_sequence<I...>) {
  using XS = detail::shape_of_t<X>;
  return reshape_to<S>(tenfold::sum(std::forward<X>(x), axes<unbroadcast_axes<S, XS>()[I]...>, keepdims));
}
template <class S, class X>
auto unbroadcast(X&& x) {
  using XS = detail::shape_of_t<X>;
  constexpr int summed = unbroadcast_axes<S, XS>()[XS::rank];
  if constexpr (summed == 0) return reshape_to<S>(std::forward<X>(x));
  else return sum_onto<S>(std::forward<X>(x), std::make_index_sequence<std::size_t(summed)>{});
}

template <class X>
auto swap_last(X&& x) {
  return swapaxes<-2, -1>(std::forward<X>(x));
}

// dA = g Bᵀ, onto A's shape SA.
template <class SA, class Bn, class G>
auto matmul_a_adjoint(const Bn& b, const G& g) {
  return unbroadcast<SA>(matmul(g, swap_last(b)));
}
// dB = Aᵀ g, onto B's shape SB. A matrix B shared by every batch element (a linear layer's weights on
// [batch, tokens, features]) takes one GEMM over the batch and rows together, [K, P M] x [P M, N], rather
// than P products summed afterwards.
template <class SB, class An, class G>
auto matmul_b_adjoint(const An& a, const G& g) {
  using SA = typename An::shape_type;
  if constexpr (SB::rank == 2 && SA::rank > 2) {
    constexpr index_t K = SA::dims[SA::rank - 1], N = SB::dims[1], rows = SA::size / (K ? K : 1);
    return matmul(transpose(reshape<rows, K>(a)), reshape<rows, N>(g));
  } else return unbroadcast<SB>(matmul(swap_last(a), g));
}

// A view through a linear map (windows) of a value that is not in memory.
template <class N>
inline constexpr bool windowed_value = false;
template <class M, class C>
inline constexpr bool windowed_value<detail::view_node<M, C>> = requires { M::coef; } && !detail::is_leaf_v<C>;

// ---- the chain rule ------------------------------------------------------------------------------------
// The gradient of the target given g, the gradient of the value of n: an expression of the target's
// shape, or zero.
template <class Target, class N, class G>
auto gradient(const N& n, const G& g);

// The reduced gradient broadcast back over the reduced axes (a reduction without keepdims first gets its
// axes back as extent 1).
template <class R, class G>
auto unreduce(const G& g) {
  using In = typename R::input_shape;
  if constexpr (R::keep) return detail::expand_to<In>(detail::as_node(g));
  else return detail::expand_to<In>(reshape_to<shape_from<detail::reduced_dims<In, R::mask, true>()>>(g));
}
// What a reduction's vjp is told besides x, y and g: the count of reduced elements, and how to sum an
// expression over the same axes and broadcast it back.
template <class R>
struct reduction_context {
  using In = typename R::input_shape;
  static constexpr index_t count = R::count;
  static constexpr int reduced = [] {
    int n = 0;
    for (int i = 0; i < In::rank; ++i) n += R::mask[i];
    return n;
  }();
  static constexpr auto list = [] {
    std::array<int, In::rank + 1> l{};
    for (int i = 0, n = 0; i < In::rank; ++i)
      if (R::mask[i]) l[n++] = i;
    return l;
  }();
  // e reduced by Op over the same axes and broadcast back
  template <class Op, class E>
  static auto reduce_back(const E& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::expand_to<In>(detail::as_node(tenfold::reduce<Op>(e, axes<list[I]...>, keepdims)));
    }(std::make_index_sequence<std::size_t(reduced)>{});
  }
  template <class E>
  static auto sum_back(const E& e) {
    return reduce_back<ops::sum>(e);
  }
  template <class E>
  static auto max_back(const E& e) {
    return reduce_back<ops::max>(e);
  }
};

// What a scan's vjp is told besides x, y and g: scans along the same axis, forwards and backwards.
template <int Axis>
struct scan_context {
  template <class E>
  static auto cumsum(const E& e) {
    return tenfold::cumsum(e, axes<Axis>);
  }
  template <class E>
  static auto cumprod(const E& e) {
    return tenfold::cumprod(e, axes<Axis>);
  }
  template <class E>
  static auto rev_cumsum(const E& e) {
    return flip<Axis>(tenfold::cumsum(flip<Axis>(e), axes<Axis>));
  }
};

template <class... X>
auto plus_all(X&&... x) {
  if constexpr (sizeof...(X) == 0) return zero{};
  else return [](auto&& first, auto&&... rest) {
    if constexpr (sizeof...(rest) == 0) return std::forward<decltype(first)>(first);
    else return plus(std::forward<decltype(first)>(first), plus_all(std::forward<decltype(rest)>(rest)...));
  }(std::forward<X>(x)...);
}

// y: the node's value as the derivative reads it (the node itself, recomputed, or a tensor holding it).
template <class Target, class Op, class... C, class G, std::size_t... K, class Y>
auto map_gradient(const detail::map_node<Op, C...>& n, const G& g, std::index_sequence<K...>, const Y& y) {
  const auto& c = n.args;
  const auto one = [&]<std::size_t I>() {
    using Child = std::tuple_element_t<I, std::tuple<C...>>;
    if constexpr (!depends<Target, Child>()) return zero{};
    else {
      auto local = [&] {
        if constexpr (sizeof...(C) == 1) return Op::vjp(detail::get<0>(c), y, g);
        else if constexpr (sizeof...(C) == 2) return Op::template vjp<int(I)>(detail::get<0>(c), detail::get<1>(c), y, g);
        else return Op::template vjp<int(I)>(detail::get<0>(c), detail::get<1>(c), detail::get<2>(c), y, g);
      }();
      if constexpr (std::is_same_v<decltype(local), ops::no_gradient>) return zero{};
      else return gradient<Target>(detail::get<I>(c), local);
    }
  };
  if constexpr (!ops::has_vjp<Op>) return op_without_derivative<Op>{};
  else return plus_all(one.template operator()<K>()...);
}

// The adjoint of concat (and stack, a concat of unsqueezed operands): each operand gets its slice of g
// along the axis.
template <class N, std::size_t K, int... A, class G>
auto concat_part(const G& g, std::integer_sequence<int, A...>) {
  return slice<std::conditional_t<A == N::axis, range<N::bounds[K], N::bounds[K + 1]>, whole>...>(g);
}
template <class Target, class N, class G, std::size_t... K>
auto concat_gradient(const N& n, const G& g, std::index_sequence<K...>) {
  const auto one = [&]<std::size_t I>() {
    if constexpr (!depends<Target, detail::tuple_element_t<I, decltype(N::args)>>()) return zero{};
    else return gradient<Target>(detail::get<I>(n.args), concat_part<N, I>(g, std::make_integer_sequence<int, N::rank>{}));
  };
  return plus_all(one.template operator()<K>()...);
}

// ---- attention ---------------------------------------------------------------------------------------------
// Attention n's contribution given g, q, k and v read from memory (gb, qb, kb, vb): the stats of the
// backward pass bound once, then the gradient of each operand the target depends on, taken on through
// the operand's own expression. Where v is as wide as q and k and there are batch elements enough to
// share out (a task each), the three come from one node instead, attention_grad_node<all>, bound once
// (each a slice of its rows): it computes the scores once for all three.
template <class N>
inline constexpr bool attention_grad_together =
    N::D == N::Dv && N::D >= 2 && detail::product(N::shape_type::dims, 0, N::rank - 2) >= 16;

// The rows [R0, R1) of x along its second-to-last axis.
template <index_t R0, index_t R1, class X>
auto rows_of(const X& x) {
  using S = typename X::shape_type;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return slice<std::conditional_t<int(I) == S::rank - 2, range<R0, R1>, whole>...>(x);
  }(std::make_index_sequence<std::size_t(S::rank)>{});
}

template <class Target, class N, class GB, class QB, class KB, class VB>
auto attention_gradient_together(const N& n, const GB& gb, const QB& qb, const KB& kb, const VB& vb) {
  using detail::attention_part;
  auto all = detail::attention_grad_node<attention_part::all, N::causal, QB, KB, VB, GB>{{}, {qb, kb, vb, gb}, n.scale};
  return let(std::move(all), [n](const auto& f) {
    constexpr index_t Sq = N::Sq, Sk = N::Sk;
    const auto through = [&]<std::size_t I>(const auto& part) {
      const auto& operand = detail::get<I>(n.args);
      if constexpr (!depends<Target, std::remove_cvref_t<decltype(operand)>>()) return zero{};
      else return gradient<Target>(operand, part);
    };
    return plus_all(through.template operator()<0>(rows_of<0, Sq>(f)), through.template operator()<1>(rows_of<Sq, Sq + Sk>(f)),
                    through.template operator()<2>(rows_of<Sq + Sk, Sq + 2 * Sk>(f)));
  });
}

template <class Target, class N, class GB, class QB, class KB, class VB>
auto attention_gradient(const N& n, const GB& gb, const QB& qb, const KB& kb, const VB& vb) {
  using detail::attention_part;
  using detail::attention_grad_node;
  if constexpr (attention_grad_together<N>) return attention_gradient_together<Target>(n, gb, qb, kb, vb);
  else {
    auto stats = attention_grad_node<attention_part::stats, N::causal, QB, KB, VB, GB>{{}, {qb, kb, vb, gb}, n.scale};
    return let(std::move(stats), [n, gb, qb, kb, vb](const auto& st) {
      using ST = std::remove_cvref_t<decltype(st)>;
      const auto through = [&]<attention_part P, std::size_t I>() {
        const auto& operand = detail::get<I>(n.args);
        if constexpr (!depends<Target, std::remove_cvref_t<decltype(operand)>>()) return zero{};
        else return gradient<Target>(operand, attention_grad_node<P, N::causal, QB, KB, VB, GB, ST>{{}, {qb, kb, vb, gb, st}, n.scale});
      };
      return plus_all(through.template operator()<attention_part::dq, 0>(), through.template operator()<attention_part::dk, 1>(),
                      through.template operator()<attention_part::dv, 2>());
    });
  }
}

template <class Target, class N, class G>
auto gradient(const N& n, const G& g) {
  using To = typename Target::shape_type;
  if constexpr (!depends<Target, N>()) return zero{};
  else if constexpr (detail::is_leaf_v<N>) return leaf_adjoint<To, N>(g);
  else if constexpr (detail::is_map_node_v<N>)
    return map_gradient<Target>(n, g, std::make_index_sequence<detail::tuple_size_v<decltype(N::args)>>{}, n);
  else if constexpr (detail::is_reduce_node_v<N>) {
    using Op = typename N::op_type;
    using A = std::remove_cvref_t<decltype(n.arg)>;
    if constexpr (!ops::has_vjp<Op>) return op_without_derivative<Op>{};
    else if constexpr (windowed_value<A>) {
      // A reduction over the windows of a computed value (a pool of relu(x)): the value is bound into
      // a buffer first, so that the windows, the recomputed result and the scatter back read memory
      // through strides rather than the value's expression through the window map, element by element.
      using M = typename A::map_type;
      const auto gc = let(n.arg.arg, [n, g](const auto& c) {
        auto xw = detail::apply_view<M>(c);
        const auto y = n.with_children(detail::make_tuple(xw));
        return view_adjoint<M>(Op::vjp(xw, unreduce<N>(y), unreduce<N>(g), reduction_context<N>{}));
      });
      return gradient<Target>(n.arg.arg, gc);
    } else {
      const auto yb = unreduce<N>(n);
      const auto gb = unreduce<N>(g);
      auto local = Op::vjp(n.arg, yb, gb, reduction_context<N>{});
      if constexpr (std::is_same_v<decltype(local), ops::no_gradient>) return zero{};
      else return gradient<Target>(n.arg, local);
    }
  } else if constexpr (detail::is_scan_node_v<N>) {
    using Op = typename N::op_type;
    if constexpr (!requires { Op::scan_vjp(n.arg, n, g, scan_context<N::axis>{}); }) return op_without_derivative<Op>{};
    else return gradient<Target>(n.arg, Op::scan_vjp(n.arg, n, g, scan_context<N::axis>{}));
  } else if constexpr (is_view_v<N>) {
    return gradient<Target>(n.arg, view_adjoint<typename N::map_type>(g));
  } else if constexpr (detail::is_matmul_node_v<N>) {
    const auto& a = detail::get<0>(n.args);
    const auto& b = detail::get<1>(n.args);
    using A = std::remove_cvref_t<decltype(a)>;
    using B = std::remove_cvref_t<decltype(b)>;
    auto through_a = [&] {
      if constexpr (!depends<Target, A>()) return zero{};
      else return gradient<Target>(a, matmul_a_adjoint<typename A::shape_type>(b, g));
    }();
    auto through_b = [&] {
      if constexpr (!depends<Target, B>()) return zero{};
      else return gradient<Target>(b, matmul_b_adjoint<typename B::shape_type>(a, g));
    }();
    return plus(std::move(through_a), std::move(through_b));
  } else if constexpr (detail::is_attention_node_v<N>) {
    using CQ = typename N::q_type;
    using CK = typename N::k_type;
    using CV = typename N::v_type;
    using BO = shape_from<detail::batch_dims<typename N::shape_type>()>;
    static_assert(std::is_same_v<shape_from<detail::batch_dims<typename CQ::shape_type>()>, BO> &&
                      std::is_same_v<shape_from<detail::batch_dims<typename CK::shape_type>()>, BO> &&
                      std::is_same_v<shape_from<detail::batch_dims<typename CV::shape_type>()>, BO>,
                  "tenfold::value_and_grad: attention's derivative needs q, k and v with the output's batch axes "
                  "(broadcast_to them first: the view's adjoint then sums the gradient)");
    static_assert(!N::causal || N::Sq <= N::Sk, "tenfold::value_and_grad: causal attention with more queries than keys "
                                                "(rows that see no key) has no derivative");
    if (n.keys != N::Sk)
      throw error("tenfold::value_and_grad: attention over first_keys(" + std::to_string(n.keys) + ") of " + std::to_string(N::Sk) +
                  " keys has no derivative (differentiate attention over all the keys k holds)");
    if (n.lengths)
      throw error("tenfold::value_and_grad: attention with key_lengths has no derivative (differentiate attention over all the keys k holds)");
    // Flash-style (core/attention_grad_node.hpp): per query row the scores' logsumexp and δ = g·O (one
    // forward pass), then dq, dk and dv, each recomputing its blocks of scores; no Sq x Sk matrix. g, q,
    // k and v are read by several of these kernels: each is bound once (a leaf is read in place).
    return read_once(detail::as_node(g), [n](const auto& gb) {
      return read_once(detail::get<0>(n.args), [n, gb](const auto& qb) {
        return read_once(detail::get<1>(n.args), [n, gb, qb](const auto& kb) {
          return read_once(detail::get<2>(n.args), [n, gb, qb, kb](const auto& vb) {
            return attention_gradient<Target>(n, gb, qb, kb, vb);
          });
        });
      });
    });
  } else if constexpr (detail::is_conv_node_v<N>) {
    const auto& x = detail::get<0>(n.args);
    const auto& w = detail::get<1>(n.args);
    auto through_x = [&] {
      if constexpr (!depends<Target, std::remove_cvref_t<decltype(x)>>()) return zero{};
      else return gradient<Target>(x, conv_input_adjoint<N>(w, g));
    }();
    auto through_w = [&] {
      if constexpr (!depends<Target, std::remove_cvref_t<decltype(w)>>()) return zero{};
      else return gradient<Target>(w, conv_weight_adjoint<N>(x, g));
    }();
    return plus(std::move(through_x), std::move(through_w));
  } else if constexpr (detail::is_take_node_v<N>) {
    // The indices are integers: only the source has a gradient, g scattered back onto its rows.
    return gradient<Target>(detail::get<0>(n.args), detail::take_adjoint(n, g));
  } else if constexpr (detail::is_concat_node_v<N>) {
    return concat_gradient<Target>(n, g, std::make_index_sequence<detail::tuple_size_v<decltype(N::args)>>{});
  } else if constexpr (detail::is_pad_node_v<N>) {
    using In = typename N::input_shape;
    return gradient<Target>(n.arg, [&]<std::size_t... I>(std::index_sequence<I...>) {
      return slice<range<N::pads[2 * I], N::pads[2 * I] + In::dims[I]>...>(g);
    }(std::make_index_sequence<std::size_t(In::rank)>{}));
  } else if constexpr (detail::is_let_node_v<N>) {
    using P = slot_target<typename N::tag_type, typename N::value_node::shape_type>;
    auto through_body = gradient<Target>(n.body, g);
    auto through_value = [&] {
      if constexpr (!depends<Target, typename N::value_node>()) return zero{};
      else {
        auto gp = gradient<P>(n.body, g);
        if constexpr (std::is_same_v<decltype(gp), zero>) return zero{};
        else return gradient<Target>(n.value, gp);
      }
    }();
    auto both = plus(std::move(through_body), std::move(through_value));
    if constexpr (std::is_same_v<decltype(both), zero>) return zero{};
    // a gradient that does not read the value (the body is linear in it: a rotation, a slice) needs no let
    else if constexpr (!depends<P, std::remove_cvref_t<decltype(detail::as_node(both))>>()) return both;
    else return detail::let_node<typename N::tag_type, typename N::value_node, decltype(detail::as_node(both))>{{}, n.value, detail::as_node(both)};
  } else {
    return no_adjoint_yet<N>{};
  }
}
} // namespace tenfold::autodiff

namespace tenfold {
namespace autodiff {
// The memory a parameter lies in: the holder of its own leaf where it has one (a device tensor's expr()
// marks device memory), void for host memory.
template <class L>
struct holder_of {
  using type = void;
};
template <class T, class S, auto St, index_t O, class H>
struct holder_of<detail::leaf<T, S, St, O, H>> {
  using type = H;
};
template <class P>
struct memory_of {
  using type = void;
};
template <class P>
  requires requires(const P& p) { p.expr(); }
struct memory_of<P> {
  using type = typename holder_of<decltype(std::declval<const P&>().expr())>::type;
};
// A slot of a step (core/step.hpp) has its memory given when the step runs: the parameter keeps the slot.
template <class T, class S, auto St, index_t O, class U, class SS, class SlotTag>
struct memory_of<detail::leaf<T, S, St, O, detail::slot_ref<U, SS, SlotTag>>> {
  static_assert(detail::leaf<T, S, St, O, detail::slot_ref<U, SS, SlotTag>>::contiguous,
                "tenfold::vjp: differentiate with respect to a whole slot, not a view of one");
  using type = detail::slot_ref<U, SS, SlotTag>;
};
// Parameter K of the function tagged Tag: a leaf on p's storage whose holder names it.
template <class Tag, int K, class P>
auto param_leaf(const P& p) {
  using T = const typename P::value_type;
  using H = param_holder<T, Tag, K, typename memory_of<P>::type>;
  return detail::leaf<T, typename P::shape_type, detail::canon(strides_of<typename P::shape_type>), 0, H>{{}, {p.data()}};
}
// The root's gradient where its value is known (y: a tensor or slot holding it): the root's derivative
// reads y where it would recompute the root (a max pool's backward: each window's maximum). Other nodes,
// and a reduction over a computed value's windows (which binds that value first), as gradient().
template <class Target, class N, class G, class Y>
auto root_gradient(const N& n, const G& g, const Y& y) {
  if constexpr (!depends<Target, N>()) {
    return zero{};
  } else if constexpr (detail::is_map_node_v<N>) {
    if constexpr (!ops::has_vjp<typename N::op_type>) return gradient<Target>(n, g);
    else return map_gradient<Target>(n, g, std::make_index_sequence<detail::tuple_size_v<decltype(N::args)>>{}, y);
  } else if constexpr (detail::is_reduce_node_v<N>) {
    using Op = typename N::op_type;
    if constexpr (!ops::has_vjp<Op> || windowed_value<std::remove_cvref_t<decltype(n.arg)>>) return gradient<Target>(n, g);
    else return gradient<Target>(n.arg, Op::vjp(n.arg, unreduce<N>(y), unreduce<N>(g), reduction_context<N>{}));
  } else {
    return gradient<Target>(n, g);
  }
}
struct no_value {}; // gradients(): the root's value is not known, the root is recomputed where read

// The gradient of <seed, out> with respect to each parameter, one expression of its shape each (zeros
// where out does not depend on it).
template <class Tag, class... P, class Out, class Seed, std::size_t... K, class Y = no_value>
auto gradients(const Out& out, const Seed& seed, std::index_sequence<K...>, const Y& value = {}) {
  const auto one = [&]<std::size_t I>() {
    using Pi = std::tuple_element_t<I, std::tuple<P...>>;
    using S = typename Pi::shape_type;
    auto d = [&] {
      if constexpr (std::is_same_v<Y, no_value>) return gradient<param_target<Tag, int(I), S>>(out, seed);
      else return root_gradient<param_target<Tag, int(I), S>>(out, seed, value);
    }();
    if constexpr (std::is_same_v<decltype(d), zero>) return detail::expand_to<S>(detail::scalar_node<typename Pi::value_type, shape<>>{{}, 0});
    else return detail::as_node(std::move(d));
  };
  return std::tuple{one.template operator()<K>()...};
}
} // namespace autodiff

// value_and_grad(f, p...): f's value at the parameters (a rank-0 expression) and its gradient with respect
// to each parameter (an expression of that parameter's shape), as a tuple of expressions that reference
// the parameters. Assign them to tensors to evaluate them:
//   auto [loss, dw, db] = value_and_grad([&](const auto& w, const auto& b) { return mse_loss(matmul(x, w) + b, y); }, w, b);
//   Tensor<float> l = loss;  Tensor<float, shape<4, 3>> gw = dw;  ...
template <class F, class... P>
auto value_and_grad(F&& f, const P&... params) {
  using Tag = std::remove_cvref_t<F>;
  return [&]<std::size_t... K>(std::index_sequence<K...> ks) {
    auto loss = detail::as_node(f(autodiff::param_leaf<Tag, int(K)>(params)...));
    using L = decltype(loss);
    static_assert(L::rank == 0, "tenfold::value_and_grad: the function must return a scalar (a rank-0 expression, e.g. a mean)");
    const detail::scalar_node<typename L::value_type, shape<>> seed{{}, 1};
    return std::tuple_cat(std::tuple{loss}, autodiff::gradients<Tag, P...>(loss, seed, ks));
  }(std::index_sequence_for<P...>{});
}

// vjp(f, g, x...): the gradients with respect to each x of <g, f(x...)> — the vector-Jacobian product of f
// at x... with g (an expression of f's shape): one expression per x, of x's shape. This is how a model is
// differentiated a stage at a time: the forward pass keeps each stage's output in a tensor, and the
// backward pass hands each stage the gradient of its output,
//   auto [gx, gw] = vjp([](const auto& x, const auto& w) { return relu(conv2d(x, w)); }, g_y, x, w);
template <class F, class G, class... P>
auto vjp(F&& f, const G& g, const P&... inputs) {
  using Tag = std::remove_cvref_t<F>;
  return [&]<std::size_t... K>(std::index_sequence<K...> ks) {
    auto out = detail::as_node(f(autodiff::param_leaf<Tag, int(K)>(inputs)...));
    static_assert(std::is_same_v<typename decltype(out)::shape_type, detail::shape_of_t<G>>,
                  "tenfold::vjp: g must have the shape of f's value");
    return autodiff::gradients<Tag, P...>(out, detail::as_node(g), ks);
  }(std::index_sequence_for<P...>{});
}

// vjp_with_value(f, y, g, x...): vjp(f, g, x...) told f's value y at x... (a tensor or slot the forward
// pass filled with f(x...)), which the derivative of f's outermost operation reads instead of computing
// it again: max_pool2d's backward compares each input with its window's maximum, read from y. y must
// hold f(x...): the gradients are those of whatever it holds.
//   assign(p, pool(r)), ..., assign(gr, std::get<0>(vjp_with_value(pool, p, gp, r)))
template <class F, class Y, class G, class... P>
auto vjp_with_value(F&& f, const Y& y, const G& g, const P&... inputs) {
  using Tag = std::remove_cvref_t<F>;
  return [&]<std::size_t... K>(std::index_sequence<K...> ks) {
    auto out = detail::as_node(f(autodiff::param_leaf<Tag, int(K)>(inputs)...));
    static_assert(std::is_same_v<typename decltype(out)::shape_type, detail::shape_of_t<G>>,
                  "tenfold::vjp_with_value: g must have the shape of f's value");
    static_assert(std::is_same_v<typename decltype(out)::shape_type, detail::shape_of_t<Y>>,
                  "tenfold::vjp_with_value: y must have the shape of f's value");
    return autodiff::gradients<Tag, P...>(out, detail::as_node(g), ks, detail::as_node(y));
  }(std::index_sequence_for<P...>{});
}
} // namespace tenfold
