#pragma once
// The tuple that holds a node's children, and everything the library walks with it: an aggregate, one
// base per element. std::tuple is correct but dear at compile time: every construction checks its
// constructors' constraints (conjunctions of is_constructible, is_convertible, is_assignable... per
// element), and a model's training step builds thousands of distinct child tuples (measured with
// clang's -ftime-trace on decoder_test: std::tuple and its traits were a sixth of the compile). This
// one has a single unconstrained constructor, so building one instantiates almost nothing; get<I> and
// unpack find an element by deducing its base (no recursion, no traits).
//
//   detail::tuple<A, B> t{a, b};          // each element from its argument, as a function's parameter
//   detail::get<1>(t);                    // B& (const B&, B&& as t is)
//   detail::unpack(f, t);                 // f(a, b), each element as t is (lvalue, const, rvalue)
//   detail::make_tuple(x...), detail::forward_as_tuple(x...)
// Elements may be references (forward_as_tuple). User-facing results (value_and_grad, split) stay
// std::tuple; std::tuple_size and std::tuple_element are specialised, so structured bindings work too.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/core/config.hpp"

namespace tenfold::detail {

template <std::size_t I, class T>
struct tuple_leaf {
  T value;
};

template <class Seq, class... T>
struct tuple_impl;
template <std::size_t... I, class... T>
struct tuple_impl<std::index_sequence<I...>, T...> : tuple_leaf<I, T>... {};

template <class... T>
struct tuple : tuple_impl<std::index_sequence_for<T...>, T...> {
  constexpr tuple() = default;
  // By value, then moved into place: no converting-constructor overloads to constrain (nodes and the
  // values kernels pass around are cheap to move), and {a, b} converts as it would for a function.
  constexpr tuple(T... t)
    requires(sizeof...(T) > 0)
      : tuple_impl<std::index_sequence_for<T...>, T...>{{static_cast<T&&>(t)}...} {}
};

template <class X>
inline constexpr bool is_light_tuple_v = false;
template <class... T>
inline constexpr bool is_light_tuple_v<tuple<T...>> = true;

// Element I: found by deducing the leaf base (I given, T deduced).
template <std::size_t I, class T>
constexpr T& get(tuple_leaf<I, T>& l) noexcept {
  return l.value;
}
template <std::size_t I, class T>
constexpr const T& get(const tuple_leaf<I, T>& l) noexcept {
  return l.value;
}
template <std::size_t I, class T>
constexpr T&& get(tuple_leaf<I, T>&& l) noexcept {
  return static_cast<T&&>(l.value);
}

template <std::size_t I, class T>
std::type_identity<T> leaf_type(const tuple_leaf<I, T>&); // declared only: the type of element I

template <class Tup>
struct tuple_size;
template <class... T>
struct tuple_size<tuple<T...>> : std::integral_constant<std::size_t, sizeof...(T)> {};
template <class Tup>
inline constexpr std::size_t tuple_size_v = tuple_size<std::remove_cvref_t<Tup>>::value;

template <std::size_t I, class Tup>
using tuple_element_t = typename decltype(leaf_type<I>(std::declval<const Tup&>()))::type;

// f(elements...): the elements as the tuple is (lvalue, const lvalue, rvalue). Always inlined, like the
// row loads that go through it: a call here in a SIMD loop costs more than the op it forwards to.
template <class F, std::size_t... I, class... T>
TENFOLD_INLINE constexpr decltype(auto) unpack(F&& f, tuple_impl<std::index_sequence<I...>, T...>& t) {
  return std::forward<F>(f)(static_cast<tuple_leaf<I, T>&>(t).value...);
}
template <class F, std::size_t... I, class... T>
TENFOLD_INLINE constexpr decltype(auto) unpack(F&& f, const tuple_impl<std::index_sequence<I...>, T...>& t) {
  return std::forward<F>(f)(static_cast<const tuple_leaf<I, T>&>(t).value...);
}
template <class F, std::size_t... I, class... T>
TENFOLD_INLINE constexpr decltype(auto) unpack(F&& f, tuple_impl<std::index_sequence<I...>, T...>&& t) {
  return std::forward<F>(f)(static_cast<T&&>(static_cast<tuple_leaf<I, T>&>(t).value)...);
}

template <class... X>
constexpr tuple<std::decay_t<X>...> make_tuple(X&&... x) {
  return tuple<std::decay_t<X>...>(std::forward<X>(x)...);
}
template <class... X>
constexpr tuple<X&&...> forward_as_tuple(X&&... x) noexcept {
  return tuple<X&&...>(std::forward<X>(x)...);
}
} // namespace tenfold::detail

template <class... T>
struct std::tuple_size<tenfold::detail::tuple<T...>> : std::integral_constant<std::size_t, sizeof...(T)> {};
template <std::size_t I, class... T>
struct std::tuple_element<I, tenfold::detail::tuple<T...>> {
  using type = tenfold::detail::tuple_element_t<I, tenfold::detail::tuple<T...>>;
};
