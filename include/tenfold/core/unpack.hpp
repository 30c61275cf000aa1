#pragma once
// f(get<0>(t), get<1>(t), ...): std::apply without its noexcept specification. std::apply computes
// is_nothrow_invocable for every call, which instantiates a layer of type traits per node of every
// expression walked (measured with clang's -ftime-trace: std::apply and its traits were on the path
// of most instantiations of a training step); the library never needs to know whether f throws.
// A plain function template (no lambda), so CUDA device code calls it as it calls std::get.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tenfold::detail {

template <class F, class Tup, std::size_t... I>
constexpr decltype(auto) unpack_indexed(F&& f, Tup&& t, std::index_sequence<I...>) {
  return std::forward<F>(f)(std::get<I>(std::forward<Tup>(t))...);
}

template <class F, class Tup>
constexpr decltype(auto) unpack(F&& f, Tup&& t) {
  return unpack_indexed(std::forward<F>(f), std::forward<Tup>(t),
                        std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tup>>>{});
}
} // namespace tenfold::detail
