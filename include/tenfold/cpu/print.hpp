#pragma once
// Printing any expression: it is evaluated (on the CPU) into a Tensor of its value type and shape, then
// printed as core/print.hpp prints a tensor: `std::cout << softmax(x, axis<1>)`.
#include "tenfold/core/print.hpp"
#include "tenfold/cpu/evaluator.hpp"

namespace tenfold {
template <expression E>
  requires(!detail::is_tensor_v<std::remove_cvref_t<E>>)
std::string to_string(E&& e) {
  using N = detail::node_t<E>;
  const Tensor<typename N::value_type, typename N::shape_type> t = std::forward<E>(e);
  return to_string(t);
}
template <expression E>
  requires(!detail::is_tensor_v<std::remove_cvref_t<E>>)
std::ostream& operator<<(std::ostream& os, E&& e) { return os << to_string(std::forward<E>(e)); }
} // namespace tenfold
