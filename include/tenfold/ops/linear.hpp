#pragma once
// matmul and linear. Operands may be any expression; views (a transpose) are read in place.
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/ops/api.hpp"

namespace tenfold {

namespace detail {
template <class A, class B>
auto matmul_matrices(A&& a, B&& b) {
  return matmul_node<node_t<A>, node_t<B>>{{}, {as_node(std::forward<A>(a)), as_node(std::forward<B>(b))}};
}
} // namespace detail

// matmul(a, b): [..., M, K] x [..., K, N] -> [..., M, N], batch axes broadcast. A vector operand is
// NumPy's: [K] x [..., K, N] -> [..., N] and [..., M, K] x [K] -> [..., M] (the vector as a one-row or
// one-column matrix, that axis dropped from the result), [K] x [K] -> a rank-0 dot product.
template <expression A, expression B>
auto matmul(A&& a, B&& b) {
  using SA = detail::shape_of_t<A>;
  using SB = detail::shape_of_t<B>;
  using Check = detail::check_matmul<SA, SB>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else if constexpr (SA::rank == 1 && SB::rank == 1)
    return squeeze<0, 1>(detail::matmul_matrices(unsqueeze<0>(std::forward<A>(a)), unsqueeze<1>(std::forward<B>(b))));
  else if constexpr (SA::rank == 1)
    return squeeze<-2>(detail::matmul_matrices(unsqueeze<0>(std::forward<A>(a)), std::forward<B>(b)));
  else if constexpr (SB::rank == 1)
    return squeeze<-1>(detail::matmul_matrices(std::forward<A>(a), unsqueeze<1>(std::forward<B>(b))));
  else return detail::matmul_matrices(std::forward<A>(a), std::forward<B>(b));
}

// linear(x, w, b) = x wᵀ + b with w stored [out, in], as in PyTorch. The bias add runs in the GEMM's store.
template <expression X, expression W, class B>
auto linear(X&& x, W&& w, B&& b) {
  return matmul(std::forward<X>(x), transpose(std::forward<W>(w))) + std::forward<B>(b);
}
} // namespace tenfold
