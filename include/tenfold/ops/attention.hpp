#pragma once
// attention(q, k, v [, causal] [, scale]) = softmax(q kᵀ · scale) v, scale defaulting to 1/√D:
// q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] -> [..., Sq, Dv], batch (and head) axes broadcast.
// On the CPU it never materialises the Sq x Sk scores (cpu/attention.hpp); its operands are read from
// memory, so an operand that is not a tensor or a view of one is evaluated into a buffer first.
// `causal` hides key j from query i when j > i + (Sk - Sq) (bottom-right aligned; see
// core/attention_node.hpp); a query that sees no key gives 0. `first_keys(n)` reads only the first n keys
// and values (a KV cache filled up to n; n checked against the keys k holds).
#include <cmath>
#include <string>

#include "tenfold/core/attention_node.hpp"
#include "tenfold/core/error.hpp"
#include "tenfold/ops/api.hpp"

namespace tenfold {
namespace detail {
template <bool Causal, class Q, class K, class V>
auto make_attention(Q&& q, K&& k, V&& v, const double* scale, const first_keys_t* keys = nullptr) {
  using NQ = node_t<Q>;
  using NK = node_t<K>;
  using NV = node_t<V>;
  using Check = check_attention<typename NQ::shape_type, typename NK::shape_type, typename NV::shape_type>;
  if constexpr (!Check::valid) return invalid_view{};
  else {
    const double s = scale ? *scale : 1.0 / std::sqrt(double(NQ::shape_type::dims[NQ::rank - 1]));
    using N = attention_node<NQ, NK, NV, Causal>;
    if (keys && (keys->n < 0 || keys->n > N::Sk))
      throw error("tenfold::attention: first_keys(" + std::to_string(keys->n) + "), but k and v hold " + std::to_string(N::Sk) + " keys");
    return N{{}, {as_node(std::forward<Q>(q)), as_node(std::forward<K>(k)), as_node(std::forward<V>(v))}, s, keys ? keys->n : N::Sk};
  }
}
} // namespace detail

template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v) {
  return detail::make_attention<false>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), nullptr);
}
template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v, double scale) {
  return detail::make_attention<false>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), &scale);
}
template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v, causal_t) {
  return detail::make_attention<true>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), nullptr);
}
template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v, causal_t, double scale) {
  return detail::make_attention<true>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), &scale);
}
// Over the first n keys of k and v only (n <= their keys, else a tenfold::error).
template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v, first_keys_t n) {
  return detail::make_attention<false>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), nullptr, &n);
}
template <expression Q, expression K, expression V>
auto attention(Q&& q, K&& k, V&& v, causal_t, first_keys_t n) {
  return detail::make_attention<true>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), nullptr, &n);
}
} // namespace tenfold
