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
// Not yet: the forward values are recomputed inside each gradient (saving them is the program's plan's
// job), and convolution, pooling, attention, scans, pads, concatenations, slices of a parameter and
// batched matmuls have no adjoint yet: each is a compile error that says so.
#include <tuple>
#include <utility>

#include "tenfold/core/children.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/ops/composites.hpp"
#include "tenfold/ops/linear.hpp"

namespace tenfold::autodiff {

// A parameter's storage, named in the type by the function being differentiated and the position.
template <class T, class Tag, int K>
struct param_holder {
  T* ptr = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
};

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
template <class Tag, int K, class S, class T, class LS, auto St, index_t O>
inline constexpr bool reads_target<param_target<Tag, K, S>, detail::leaf<T, LS, St, O, param_holder<T, Tag, K>>> = true;
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
template <class A, class B>
auto plus(A&& a, B&& b) {
  if constexpr (std::is_same_v<std::remove_cvref_t<A>, zero>) return std::forward<B>(b);
  else if constexpr (std::is_same_v<std::remove_cvref_t<B>, zero>) return std::forward<A>(a);
  else return std::forward<A>(a) + std::forward<B>(b);
}

template <class N>
struct no_adjoint_yet {
  static_assert(sizeof(N) == 0, "tenfold::value_and_grad: this node kind has no derivative yet (see autodiff/backward.hpp "
                                "for what is differentiable)");
};
template <class Op>
struct op_without_derivative {
  static_assert(sizeof(Op) == 0, "tenfold::value_and_grad: the loss depends on the parameter through an op without a "
                                 "derivative (Op in the note: a comparison, a piecewise-constant op, argmax ...)");
};

// ---- gathering a gradient onto the target's axes ----------------------------------------------------
// g has shape G; axis a of g feeds axis to[a] of shape To, or is summed (to[a] < 0). Every axis of To
// longer than 1 is fed by exactly one axis of g of the same extent. Result: shape To.
template <class G, class To, std::array<int, G::rank> Map>
constexpr bool gatherable() {
  std::array<int, To::rank + 1> fed{};
  for (int a = 0; a < G::rank; ++a) {
    if (G::dims[a] == 1 || Map[a] < 0) continue;
    if (Map[a] >= To::rank || To::dims[Map[a]] != G::dims[a]) return false;
    ++fed[Map[a]];
  }
  for (int p = 0; p < To::rank; ++p)
    if (To::dims[p] > 1 && fed[p] != 1) return false;
  return true;
}

template <class To, class X>
auto reshape_to(X&& x) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return reshape<To::dims[I]...>(std::forward<X>(x)); }(
      std::make_index_sequence<To::rank>{});
}

template <class To, auto Map, class X>
auto gather_axes(X&& g) {
  using G = detail::shape_of_t<X>;
  static_assert(gatherable<G, To, Map>(), "tenfold::value_and_grad: this view of a parameter or value (a slice, a flip, "
                                          "a strided or overlapping view) has no adjoint yet");
  // The summed axes (extent > 1, feeding nothing), kept as extent 1.
  static constexpr auto summed = [] {
    std::array<int, G::rank + 1> s{};
    int n = 0;
    for (int a = 0; a < G::rank; ++a)
      if (G::dims[a] > 1 && Map[a] < 0) s[n++] = a;
    s[G::rank] = n;
    return s;
  }();
  auto reduced = [&] {
    if constexpr (summed[G::rank] == 0) return detail::as_node(std::forward<X>(g));
    else
      return [&]<std::size_t... I>(std::index_sequence<I...>) { return tenfold::sum(std::forward<X>(g), axes<summed[I]...>, keepdims); }(
          std::make_index_sequence<std::size_t(summed[G::rank])>{});
  }();
  // The feeding axes in g's order, then permuted into the target's order.
  static constexpr int kept = [] {
    int n = 0;
    for (int a = 0; a < G::rank; ++a) n += G::dims[a] > 1 && Map[a] >= 0;
    return n;
  }();
  static constexpr auto order = [] { // target axis of each kept axis, in g's order
    std::array<int, kept + 1> o{};
    for (int a = 0, n = 0; a < G::rank; ++a)
      if (G::dims[a] > 1 && Map[a] >= 0) o[n++] = Map[a];
    return o;
  }();
  static constexpr auto kept_dims = [] {
    std::array<index_t, kept + 1> d{};
    for (int i = 0; i < kept; ++i) d[i] = To::dims[order[i]];
    return d;
  }();
  static constexpr auto perm = [] { // permute<perm...>: output axis i is kept axis perm[i]
    std::array<int, kept + 1> p{};
    for (int i = 0; i < kept; ++i) {
      int rank = 0;
      for (int j = 0; j < kept; ++j) rank += order[j] < order[i];
      p[rank] = i;
    }
    return p;
  }();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto squeezed = reshape<kept_dims[I]...>(std::move(reduced));
    if constexpr (kept <= 1) return reshape_to<To>(std::move(squeezed));
    else return reshape_to<To>(permute<perm[I]...>(std::move(squeezed)));
  }(std::make_index_sequence<std::size_t(kept)>{});
}

// A leaf reading the target (through views folded into its strides) back onto the target's shape.
template <class To, class L, class X>
auto leaf_adjoint(X&& g) {
  static_assert(L::offset == 0, "tenfold::value_and_grad: a slice of a parameter has no adjoint yet");
  static constexpr auto map = [] {
    constexpr auto cs = strides_of<To>;
    std::array<int, L::rank> m{};
    for (int a = 0; a < L::rank; ++a) {
      m[a] = -1;
      if (L::strides[a] == 0) continue; // broadcast: summed
      for (int p = 0; p < To::rank; ++p)
        if (To::dims[p] > 1 && cs[p] == L::strides[a] && To::dims[p] == L::shape_type::dims[a]) m[a] = p;
      if (m[a] < 0) m[a] = To::rank; // not a target axis: gatherable() reports it
    }
    return m;
  }();
  return gather_axes<To, map>(std::forward<X>(g));
}

// A view of an opaque node (a broadcast reduction): the adjoint of its map.
template <class M, class X>
auto view_adjoint(X&& g) {
  using In = typename M::in_shape;
  if constexpr (detail::is_reshape_map_v<M>) return reshape_to<In>(std::forward<X>(g));
  else if constexpr (requires { M::src; M::scale; M::off; }) {
    static_assert(M::off == std::array<index_t, In::rank>{}, "tenfold::value_and_grad: a slice of a value has no adjoint yet");
    using Out = typename M::out_shape;
    static constexpr auto map = [] {
      std::array<int, Out::rank> m{};
      for (auto& v : m) v = -1;
      for (int j = 0; j < In::rank; ++j)
        if (M::src[j] >= 0 && In::dims[j] > 1) m[M::src[j]] = M::scale[j] == 1 ? j : In::rank;
      return m;
    }();
    return gather_axes<In, map>(std::forward<X>(g));
  } else {
    return no_adjoint_yet<M>{};
  }
}

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
  template <class E>
  static auto sum_back(const E& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::expand_to<In>(detail::as_node(tenfold::sum(e, axes<list[I]...>, keepdims)));
    }(std::make_index_sequence<std::size_t(reduced)>{});
  }
  template <class E>
  static auto max_back(const E& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::expand_to<In>(detail::as_node(tenfold::max(e, axes<list[I]...>, keepdims)));
    }(std::make_index_sequence<std::size_t(reduced)>{});
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

template <class Target, class Op, class... C, class G, std::size_t... K>
auto map_gradient(const detail::map_node<Op, C...>& n, const G& g, std::index_sequence<K...>) {
  const auto& c = n.args;
  const auto one = [&]<std::size_t I>() {
    using Child = std::tuple_element_t<I, std::tuple<C...>>;
    if constexpr (!depends<Target, Child>()) return zero{};
    else {
      auto local = [&] {
        if constexpr (sizeof...(C) == 1) return Op::vjp(std::get<0>(c), n, g);
        else if constexpr (sizeof...(C) == 2) return Op::template vjp<int(I)>(std::get<0>(c), std::get<1>(c), n, g);
        else return Op::template vjp<int(I)>(std::get<0>(c), std::get<1>(c), std::get<2>(c), n, g);
      }();
      if constexpr (std::is_same_v<decltype(local), ops::no_gradient>) return zero{};
      else return gradient<Target>(std::get<I>(c), local);
    }
  };
  if constexpr (!ops::has_vjp<Op>) return op_without_derivative<Op>{};
  else return plus_all(one.template operator()<K>()...);
}

template <class Target, class N, class G>
auto gradient(const N& n, const G& g) {
  using To = typename Target::shape_type;
  if constexpr (!depends<Target, N>()) return zero{};
  else if constexpr (detail::is_leaf_v<N>) return leaf_adjoint<To, N>(g);
  else if constexpr (detail::is_map_node_v<N>)
    return map_gradient<Target>(n, g, std::make_index_sequence<std::tuple_size_v<decltype(N::args)>>{});
  else if constexpr (detail::is_reduce_node_v<N>) {
    using Op = typename N::op_type;
    if constexpr (!ops::has_vjp<Op>) return op_without_derivative<Op>{};
    else {
      const auto yb = unreduce<N>(n);
      const auto gb = unreduce<N>(g);
      return gradient<Target>(n.arg, Op::vjp(n.arg, yb, gb, reduction_context<N>{}));
    }
  } else if constexpr (is_view_v<N>) {
    return gradient<Target>(n.arg, view_adjoint<typename N::map_type>(g));
  } else if constexpr (detail::is_matmul_node_v<N>) {
    const auto& a = std::get<0>(n.args);
    const auto& b = std::get<1>(n.args);
    static_assert(N::rank == 2 && std::remove_cvref_t<decltype(a)>::rank == 2 && std::remove_cvref_t<decltype(b)>::rank == 2,
                  "tenfold::value_and_grad: only a matrix-matrix matmul has a derivative yet");
    return plus(gradient<Target>(a, matmul(g, transpose(b))), gradient<Target>(b, matmul(transpose(a), g)));
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
    else return detail::let_node<typename N::tag_type, typename N::value_node, decltype(detail::as_node(both))>{{}, n.value, detail::as_node(both)};
  } else {
    return no_adjoint_yet<N>{};
  }
}
} // namespace tenfold::autodiff

namespace tenfold {
// value_and_grad(f, p...): f's value at the parameters (a rank-0 expression) and its gradient with respect
// to each parameter (an expression of that parameter's shape), as a tuple of expressions that reference
// the parameters. Assign them to tensors to evaluate them:
//   auto [loss, dw, db] = value_and_grad([&](const auto& w, const auto& b) { return mse_loss(matmul(x, w) + b, y); }, w, b);
//   Tensor<float> l = loss;  Tensor<float, shape<4, 3>> gw = dw;  ...
template <class F, class... P>
auto value_and_grad(F&& f, const P&... params) {
  using Tag = std::remove_cvref_t<F>;
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto loss = detail::as_node(f(detail::leaf<const typename P::value_type, typename P::shape_type,
                                               detail::canon(strides_of<typename P::shape_type>), 0,
                                               autodiff::param_holder<const typename P::value_type, Tag, int(K)>>{
        {}, {params.data()}}...));
    using L = decltype(loss);
    static_assert(L::rank == 0, "tenfold::value_and_grad: the function must return a scalar (a rank-0 expression, e.g. a mean)");
    const detail::scalar_node<typename L::value_type, shape<>> seed{{}, 1};
    const auto grad = [&]<std::size_t I>() {
      using Pi = std::tuple_element_t<I, std::tuple<P...>>;
      using S = typename Pi::shape_type;
      auto g = autodiff::gradient<autodiff::param_target<Tag, int(I), S>>(loss, seed);
      if constexpr (std::is_same_v<decltype(g), autodiff::zero>)
        return detail::expand_to<S>(detail::scalar_node<typename Pi::value_type, shape<>>{{}, 0});
      else return detail::as_node(std::move(g));
    };
    return std::tuple{loss, grad.template operator()<K>()...};
  }(std::index_sequence_for<P...>{});
}
} // namespace tenfold
