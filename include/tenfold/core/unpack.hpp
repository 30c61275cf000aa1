#pragma once
// f(get<0>(t), get<1>(t), ...) for the library's tuples (core/tuple.hpp: detail::unpack there, which
// deduces the indices from the tuple's bases) and, here, for any other tuple-like type (std::tuple,
// std::pair, std::array). Not std::apply: its noexcept specification computes is_nothrow_invocable for
// every call, a layer of traits per node of every expression walked (clang's -ftime-trace showed it on
// the path of most instantiations of a training step); the library never needs to know whether f throws.
// Plain function templates (no lambda), so CUDA device code calls them as it calls std::get.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/core/tuple.hpp"

namespace tenfold::detail {

template <class F, class Tup, std::size_t... I>
constexpr decltype(auto) unpack_indexed(F&& f, Tup&& t, std::index_sequence<I...>) {
  using std::get;
  return std::forward<F>(f)(get<I>(std::forward<Tup>(t))...);
}

template <class F, class Tup>
  requires(!is_light_tuple_v<std::remove_cvref_t<Tup>>)
constexpr decltype(auto) unpack(F&& f, Tup&& t) {
  return unpack_indexed(std::forward<F>(f), std::forward<Tup>(t),
                        std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tup>>>{});
}
} // namespace tenfold::detail
