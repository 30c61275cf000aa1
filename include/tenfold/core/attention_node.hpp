#pragma once
// attention(q, k, v) = softmax(q kᵀ · scale) v over the last two axes: q [..., Sq, D], k [..., Sk, D],
// v [..., Sk, Dv] -> [..., Sq, Dv], batch axes broadcast as in NumPy (as matmul's). A node like the
// others: it holds its operands, and `at` computes one element directly (the device and fallback path,
// one online-softmax pass over the keys); the CPU evaluator (cpu/attention.hpp) runs a tiled kernel that
// never holds more than a block of scores.
//
// Causal masking is bottom-right aligned (FlashAttention >= 2.1, PyTorch's `causal_lower_right`): query i
// sees keys j <= i + (Sk - Sq), so with Sq == Sk it is the usual lower triangle, and the last query
// always sees every key (the KV-cache case, Sq < Sk). With Sq > Sk the first Sq - Sk queries see no key:
// their output is defined as 0 (no NaN), as in FlashAttention.
//
// first_keys(n) reads only the first n keys of k and v, n known at run time (0 <= n <= Sk): the KV-cache
// case, where k and v are the cache (its capacity static) and n the positions filled so far. Everything
// then behaves as if Sk were n, the causal alignment included (query i sees keys j <= i + (n - Sq)).
// key_lengths(lens) does the same per element of the output's first axis: element b reads its first
// lens[b] keys (sentences of different lengths padded to one static length: the padding is never read).
// The lengths are read when the expression runs, from host memory (a Tensor: the CPU evaluator) or from
// device memory (a cuda::Tensor, cuda::key_lengths: the CUDA evaluator; a decode step captured once in
// a CUDA graph reads its growing length there). Each evaluator refuses the other's.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "tenfold/core/error.hpp"
#include "tenfold/core/expr.hpp"
#include "tenfold/core/leaf_operand_node.hpp"
#include "tenfold/core/matmul_node.hpp"

namespace tenfold {
// The compile-time flag of attention(q, k, v, causal).
struct causal_t {};
inline constexpr causal_t causal{};
// attention(q, k, v, [causal,] first_keys(n)): only the first n keys (and values) are read.
struct first_keys_t {
  index_t n;
};
constexpr first_keys_t first_keys(index_t n) { return {n}; }
// attention(q, k, v, key_lengths(lens)): lens [B], B the output's first extent; batch element b
// reads only its first lens[b] keys. The lengths are read when the expression is evaluated (the tensor
// must live until then, as an operand must).
template <index_t B>
struct key_lengths_t {
  const std::int32_t* lengths;
  bool on_device = false; // device memory (cuda::key_lengths): never read on the host
};
} // namespace tenfold

namespace tenfold::detail {
// Each of key_lengths' values in [0, Sk]: a tenfold::error naming the first that is not.
inline void check_key_lengths(const std::int32_t* lengths, index_t batch, index_t keys) {
  for (index_t b = 0; b < batch; ++b)
    if (lengths[b] < 0 || lengths[b] > keys)
      throw error("tenfold::attention: key_lengths[" + std::to_string(b) + "] is " + std::to_string(lengths[b]) + ", but k and v hold " +
                  std::to_string(keys) + " keys");
}


// The shapes appear in the compiler's note as this template's arguments.
template <class Q, class K, class V>
struct check_attention {
  static constexpr bool ranks_ok = Q::rank >= 2 && K::rank >= 2 && V::rank >= 2;
  static_assert(ranks_ok, "tenfold::attention: q, k and v need rank >= 2 ([..., tokens, features])");
  static constexpr bool head_ok = !ranks_ok || Q::dims[Q::rank - 1] == K::dims[ranks_ok ? K::rank - 1 : 0];
  static_assert(head_ok, "tenfold::attention: q and k must have the same last extent (the head dimension D)");
  static constexpr bool keys_ok = !ranks_ok || K::dims[ranks_ok ? K::rank - 2 : 0] == V::dims[ranks_ok ? V::rank - 2 : 0];
  static_assert(keys_ok, "tenfold::attention: k and v must have the same number of keys (second-to-last extent)");
  static constexpr bool valid = ranks_ok && head_ok && keys_ok;
};

template <class Q, class K, class V>
constexpr auto attention_dims() {
  using BS = broadcast_shape_t<shape_from<batch_dims<Q>()>, shape_from<batch_dims<K>()>, shape_from<batch_dims<V>()>>;
  dims_t<BS::rank + 2> d{};
  for (int i = 0; i < BS::rank; ++i) d[i] = BS::dims[i];
  d[BS::rank] = Q::extents[Q::rank - 2]; // (queries of a bounded length stay bounded)
  d[BS::rank + 1] = V::dims[V::rank - 1];
  return d;
}

template <class CQ, class CK, class CV, bool Causal>
struct attention_node : node_tag {
  using q_type = CQ;
  using k_type = CK;
  using v_type = CV;
  using value_type = promote_t<promote_t<typename CQ::value_type, typename CK::value_type>, typename CV::value_type>;
  using shape_type = shape_from<attention_dims<typename CQ::shape_type, typename CK::shape_type, typename CV::shape_type>()>;
  static constexpr int rank = shape_type::rank;
  static constexpr bool causal = Causal;
  static constexpr bool leaf_operands = true; // core/leaf_operand_node.hpp
  static constexpr index_t Sq = CQ::shape_type::dims[CQ::rank - 2], D = CQ::shape_type::dims[CQ::rank - 1],
                           Sk = CK::shape_type::dims[CK::rank - 2], Dv = CV::shape_type::dims[CV::rank - 1];
  detail::tuple<CQ, CK, CV> args;
  double scale = 0;
  index_t keys = Sk;                     // the keys read: the first `keys` of k and v (first_keys)
  const std::int32_t* lengths = nullptr; // or per element b of the output's first axis (key_lengths)
  bool lengths_on_device = false;        // those lengths in device memory (cuda::key_lengths)

  // The keys batch element b reads (b: the output's first index). Clamped to [0, keys], so a length
  // changed after it was checked can never read past k and v (the CPU evaluator checks it again).
  TENFOLD_HD constexpr index_t keys_of(index_t b) const {
    if (!lengths) return keys;
    const index_t n = lengths[b];
    return n < 0 ? 0 : n > keys ? keys : n;
  }
  // Keys query i sees, of the nk its batch element reads: j < visible(i, nk). 0 for the rows a causal
  // mask hides entirely. (sq: the queries, when their number is a bounded length.)
  TENFOLD_HD static constexpr index_t visible(index_t i, index_t nk, index_t sq = Sq) {
    if constexpr (!Causal) return nk;
    else {
      const index_t n = i + 1 + (nk - sq);
      return n < 0 ? 0 : n > nk ? nk : n;
    }
  }

  // Operand multi-index for output index `out` (batch axes broadcast from the right).
  template <class S>
  TENFOLD_HD static void operand_index(const index_t* out, index_t row, index_t col, index_t* in) {
    for (int i = 0; i + 2 < S::rank; ++i) in[i] = extent<S>(i) == 1 ? 0 : out[rank - S::rank + i];
    in[S::rank - 2] = row;
    in[S::rank - 1] = col;
  }

  template <class... C>
  constexpr auto with_children(detail::tuple<C...>&& ops) const {
    return attention_node<C..., Causal>{{}, std::move(ops), scale, keys, lengths, lengths_on_device};
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* out) const {
    using A = compute_t<value_type>;
    index_t iq[CQ::rank], ik[CK::rank], iv[CV::rank];
    const index_t i = out[rank - 2], e = out[rank - 1], n = visible(i, keys_of(out[0]));
    // One pass with a running maximum m, normaliser l and weighted sum o (online softmax). A key
    // scored -inf has weight 0; a query with no key of finite score gives 0, as a fully masked one.
    A m = A(0), l = A(0), o = A(0);
    for (index_t j = 0; j < n; ++j) {
      A s = A(0);
      for (index_t d = 0; d < D; ++d) {
        operand_index<typename CQ::shape_type>(out, i, d, iq);
        operand_index<typename CK::shape_type>(out, j, d, ik);
        s += static_cast<A>(detail::get<0>(args).at(iq)) * static_cast<A>(detail::get<1>(args).at(ik));
      }
      s *= static_cast<A>(scale);
      if (s == -std::numeric_limits<A>::infinity()) continue;
      operand_index<typename CV::shape_type>(out, j, e, iv);
      const A x = static_cast<A>(detail::get<2>(args).at(iv));
      if (l == A(0) || s > m) {
        const A r = l == A(0) ? A(0) : A(std::exp(m - s));
        l = l * r + A(1), o = o * r + x, m = s;
      } else {
        const A p = A(std::exp(s - m));
        l += p, o += p * x;
      }
    }
    return l == A(0) ? A(0) : o / l;
  }
  static std::string str() {
    return std::string(Causal ? "attention_causal(" : "attention(") + CQ::str() + ", " + CK::str() + ", " + CV::str() + ")";
  }
};

template <class E>
inline constexpr bool is_attention_node_v = false;
template <class Q, class K, class V, bool C>
inline constexpr bool is_attention_node_v<attention_node<Q, K, V, C>> = true;
} // namespace tenfold::detail
