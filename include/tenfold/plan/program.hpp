#pragma once
// A model as a C++ type, and what it needs, known at compile time.
//
// A model holds its parameters as Tensor members and writes its forward pass with expressions:
//
//   struct mlp {
//     Tensor<float, shape<512, 784>> w1; ...
//     auto parameters() const { return std::tie(w1, b1, ...); }   // optional: the weights
//     auto state() { return std::tie(h); }                         // optional: persistent, mutable
//     auto forward(const Tensor<float, shape<64, 784>>& x) { return ...; }
//   };
//
// forward returns an expression, or `sequence(update(state_tensor, expr)..., result)`: statements run
// in order, each update writing a state tensor (an RNN's hidden state, a running statistic), the last
// giving the result. Three kinds of memory stay apart: weights (persistent, read-only, the model's
// own), state (persistent, mutable, the model's own) and activations (transient: every value that
// materialises, in one arena whose offsets are planned here, shared over time).
#include "tenfold/core/let.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/plan/step.hpp"

namespace tenfold {

namespace detail {
// A statement that writes a state tensor. Its value is evaluated into an activation buffer first
// (it may read the state it replaces, even through a matmul), then copied into the state.
template <class Dst, class E>
struct update_t {
  using value_node = E;
  Dst dst; // a writable leaf
  E value;
};
template <class... S>
struct sequence_t {
  using tuple_type = std::tuple<S...>;
  detail::tuple<S...> statements;
};
template <class E>
inline constexpr bool is_sequence_v = false;
template <class... S>
inline constexpr bool is_sequence_v<sequence_t<S...>> = true;
template <class E>
inline constexpr bool is_update_v = false;
template <class D, class E>
inline constexpr bool is_update_v<update_t<D, E>> = true;
} // namespace detail

// state = value, as a statement of a forward pass (the value is evaluated aside, then copied).
template <class T, class S, expression E>
auto update(Tensor<T, S>& state, E&& value) {
  auto v = detail::expand_to<S>(detail::as_node(std::forward<E>(value)));
  return detail::update_t<decltype(detail::as_node(state)), decltype(v)>{detail::as_node(state), std::move(v)};
}

namespace detail {
template <class S>
auto as_statement(S&& s) {
  if constexpr (is_update_v<std::remove_cvref_t<S>>) return std::remove_cvref_t<S>(std::forward<S>(s));
  else return as_node(std::forward<S>(s));
}
template <class S>
using statement_t = decltype(as_statement(std::declval<S>()));
} // namespace detail

// Statements of a forward pass, run in order: updates, then the result (the last one).
template <class... S>
auto sequence(S&&... statements) {
  static_assert(sizeof...(S) >= 1, "tenfold::sequence: needs at least the result");
  using Last = std::remove_cvref_t<std::tuple_element_t<sizeof...(S) - 1, std::tuple<S...>>>;
  static_assert(expression<Last>, "tenfold::sequence: the last statement is the result, an expression");
  return detail::sequence_t<detail::statement_t<S>...>{{detail::as_statement(std::forward<S>(statements))...}};
}

namespace detail {
// A forward pass as a step (core/step.hpp): each update's value into a slot of its own, then copied
// into its state (so that it may read the state it replaces, even through a matmul); the result into
// `out`. The plan of a program is the plan of this step.
template <int K>
struct update_value; // the tag of the slot of a sequence's K-th statement
template <int K, class S>
auto statement_of(S&& s, auto& out) {
  using D = std::remove_cvref_t<S>;
  if constexpr (is_update_v<D>) {
    using V = typename D::value_node;
    slot<typename V::value_type, typename V::shape_type, update_value<K>> value;
    return statements(assign(value, std::forward<S>(s).value), assign(std::forward<S>(s).dst, value));
  } else {
    return statements(assign(out, std::forward<S>(s)));
  }
}
template <class Out, class F>
auto forward_statements(Out& out, F&& f) {
  if constexpr (is_sequence_v<std::remove_cvref_t<F>>) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return statements(statement_of<int(K)>(detail::get<K>(std::forward<F>(f).statements), out)...);
    }(std::make_index_sequence<std::tuple_size_v<typename std::remove_cvref_t<F>::tuple_type>>{});
  } else {
    return statements(assign(out, std::forward<F>(f)));
  }
}

template <class Tuple>
constexpr index_t tensor_bytes() {
  return []<class... X>(std::tuple<X...>*) {
    return (index_t(0) + ... + (std::remove_cvref_t<X>::size() * index_t(sizeof(typename std::remove_cvref_t<X>::value_type))));
  }(static_cast<Tuple*>(nullptr));
}
template <class M>
constexpr index_t parameter_bytes() {
  if constexpr (requires(const M& m) { m.parameters(); }) return tensor_bytes<decltype(std::declval<const M&>().parameters())>();
  else return 0;
}
template <class M>
constexpr index_t state_bytes() {
  if constexpr (requires(M& m) { m.state(); }) return tensor_bytes<decltype(std::declval<M&>().state())>();
  else return 0;
}
template <class F>
struct result_of_forward {
  using type = node_t<F>;
};
template <class... S>
struct result_of_forward<sequence_t<S...>> {
  using type = std::tuple_element_t<sizeof...(S) - 1, std::tuple<S...>>;
};
} // namespace detail

// Everything about Model's forward pass on inputs of the given Tensor types that is known before it runs.
template <class Model, class... Inputs>
struct program_plan {
  using forward_type = decltype(std::declval<Model&>().forward(std::declval<const Inputs&>()...));
  using result_node = typename detail::result_of_forward<forward_type>::type;
  using output_type = Tensor<typename result_node::value_type, typename result_node::shape_type>;
  using step = decltype(detail::forward_statements(std::declval<output_type&>(), std::declval<forward_type>()));
  using arena = step_plan<step>;

  static constexpr index_t arena_bytes = arena::bytes;             // activations: one block, planned
  static constexpr index_t lower_bound = arena::lower_bound;       // no plan can use less
  static constexpr index_t activation_total = arena::total;        // every buffer apart, for comparison
  static constexpr int buffers = arena::temporaries + arena::slots;
  static constexpr index_t weight_bytes = detail::parameter_bytes<Model>(); // persistent, read-only
  static constexpr index_t state_bytes = detail::state_bytes<Model>();      // persistent, mutable
};
} // namespace tenfold
