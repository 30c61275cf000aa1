#pragma once
// matmul and linear. Operands may be any expression; views (a transpose) are read in place.
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/ops/api.hpp"

namespace tenfold {

// matmul(a, b): [..., M, K] x [..., K, N] -> [..., M, N], batch axes broadcast.
template <expression A, expression B>
auto matmul(A&& a, B&& b) {
  using NA = detail::node_t<A>;
  using NB = detail::node_t<B>;
  using Check = detail::check_matmul<typename NA::shape_type, typename NB::shape_type>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else return detail::matmul_node<NA, NB>{{}, {detail::as_node(std::forward<A>(a)), detail::as_node(std::forward<B>(b))}};
}

// linear(x, w, b) = x wᵀ + b with w stored [out, in], as in PyTorch. The bias add runs in the GEMM's store.
template <expression X, expression W, class B>
auto linear(X&& x, W&& w, B&& b) {
  return matmul(std::forward<X>(x), transpose(std::forward<W>(w))) + std::forward<B>(b);
}
} // namespace tenfold
