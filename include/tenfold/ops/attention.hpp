#pragma once
// attention(q, k, v [, causal] [, scale]) = softmax(q kᵀ · scale) v, scale defaulting to 1/√D:
// q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] -> [..., Sq, Dv], batch (and head) axes broadcast.
// On the CPU it never materialises the Sq x Sk scores (cpu/attention.hpp); its operands are read from
// memory, so an operand that is not a tensor or a view of one is evaluated into a buffer first.
// `causal` hides key j from query i when j > i + (Sk - Sq) (bottom-right aligned; see
// core/attention_node.hpp); a query that sees no key gives 0. `first_keys(n)` reads only the first n keys
// and values (a KV cache filled up to n; n checked against the keys k holds); `key_lengths(lens)` the
// first lens[b] of batch element b (padded sentences).
#include <cmath>
#include <cstdint>
#include <string>

#include "tenfold/core/attention_node.hpp"
#include "tenfold/core/error.hpp"
#include "tenfold/ops/api.hpp"

namespace tenfold {
namespace detail {
// key_lengths<B> with an output whose first extent is B (and which has a batch axis).
template <index_t B, class Q, class K, class V>
constexpr void check_key_lengths_batch() {
  using SQ = typename node_t<Q>::shape_type;
  using SK = typename node_t<K>::shape_type;
  using SV = typename node_t<V>::shape_type;
  if constexpr (check_attention<SQ, SK, SV>::valid) { // else make_attention's own message
    using S = shape_from<attention_dims<SQ, SK, SV>()>;
    static_assert(S::rank >= 3, "tenfold::attention: key_lengths needs a batch axis (the output's first axis indexes the lengths)");
    static_assert(S::rank < 3 || S::dims[0] == B, "tenfold::attention: key_lengths must have one length per element of the output's first axis");
  }
}
template <bool Causal, class Q, class K, class V>
auto make_attention(Q&& q, K&& k, V&& v, const double* scale, const first_keys_t* keys = nullptr,
                    const std::int32_t* lengths = nullptr, bool lengths_on_device = false) {
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
    N n{{}, {as_node(std::forward<Q>(q)), as_node(std::forward<K>(k)), as_node(std::forward<V>(v))}, s, keys ? keys->n : N::Sk, lengths,
        lengths_on_device};
    if (lengths && !lengths_on_device) check_key_lengths(lengths, N::shape_type::dims[0], N::Sk);
    return n;
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

// Batch element b (the output's first index) over the first lens[b] keys of its k and v only: sentences
// padded to one length, the padding never read. lens [B], B the output's first extent; each length in
// [0, Sk], else a tenfold::error (checked here and again when the expression is evaluated; lengths in
// device memory, cuda::key_lengths, only where it runs: each clamped to [0, Sk]). Not with
// causal: a causal mask over padded rows would want top-left alignment, first_keys' is bottom-right.
template <index_t B>
key_lengths_t<B> key_lengths(const Tensor<std::int32_t, shape<B>>& lens) {
  return {lens.data()};
}
template <index_t B>
key_lengths_t<B> key_lengths(Tensor<std::int32_t, shape<B>>&&) = delete; // the expression would outlive it
template <expression Q, expression K, expression V, index_t B>
auto attention(Q&& q, K&& k, V&& v, key_lengths_t<B> lens) {
  detail::check_key_lengths_batch<B, Q, K, V>();
  return detail::make_attention<false>(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), nullptr, nullptr, lens.lengths,
                                       lens.on_device);
}
} // namespace tenfold
