#pragma once
// The nodes of attention's backward pass, flash-style (FlashAttention-2's backward: Dao, 2023): the
// scores are recomputed block by block from q and k, and no Sq x Sk matrix is ever held. With
// P = softmax(s q kᵀ) (masked as the forward), O = P v and g = dL/dO:
//   stats  [..., Sq, 2]  per query row i: lse_i = log Σ_j exp(s q_i·k_j), the scaled scores' logsumexp,
//                        and δ_i = Σ_e g_ie O_ie (= Σ_j P_ij dP_ij)
//   dq     [..., Sq, D]  s Σ_j dS_ij k_j
//   dk     [..., Sk, D]  s Σ_i dS_ij q_i
//   dv     [..., Sk, Dv] Σ_i P_ij g_i
// where P_ij = exp(s q_i·k_j - lse_i), dP_ij = g_i·v_j and dS_ij = P_ij (dP_ij - δ_i). The stats node
// reads q, k, v and g (its kernel is the forward's, with another epilogue); the three gradient nodes read
// q, k, v, g and the stats. Or, where D = Dv, one node for all three:
//   all    [..., Sq + 2 Sk, D]  dq in rows [0, Sq), dk in [Sq, Sq + Sk), dv in [Sq + Sk, Sq + 2 Sk)
// from q, k, v and g alone: per block of queries the scores and dP once, the stats from them, and the
// five products (FlashAttention-2's count) instead of the three nodes' eight and the stats' two.
// All have the output's batch axes on every operand (autodiff/backward.hpp asks for that) and read all
// Sk keys. Like attention_node they hold their operands (`leaf_operands`:
// the planner hands them memory) and compute one element with `at` (the reference and fallback path).
#include <cmath>
#include <limits>
#include <string>

#include "tenfold/core/attention_node.hpp"

namespace tenfold::detail {

enum class attention_part { stats, dq, dk, dv, all };

// C: q, k, v, g, then (not for stats and all) the stats.
template <attention_part Part, bool Causal, class... C>
struct attention_grad_node : node_tag {
  using q_type = std::tuple_element_t<0, std::tuple<C...>>;
  using k_type = std::tuple_element_t<1, std::tuple<C...>>;
  using v_type = std::tuple_element_t<2, std::tuple<C...>>;
  using g_type = std::tuple_element_t<3, std::tuple<C...>>;
  static_assert(sizeof...(C) == (Part == attention_part::stats || Part == attention_part::all ? 4 : 5),
                "tenfold: attention_grad_node's operands");
  static constexpr attention_part part = Part;
  static constexpr bool causal = Causal;
  static constexpr bool leaf_operands = true; // core/leaf_operand_node.hpp
  using forward = attention_node<q_type, k_type, v_type, Causal>;
  using value_type = promote_t<typename forward::value_type, typename g_type::value_type>;
  static constexpr index_t Sq = forward::Sq, D = forward::D, Sk = forward::Sk, Dv = forward::Dv;
  static_assert(Part != attention_part::all || D == Dv, "tenfold: attention_grad_node<all> needs v as wide as q and k");
  static constexpr int rank = forward::rank;
  static constexpr auto dims = [] {
    auto d = forward::shape_type::dims;
    d[rank - 2] = Part == attention_part::all ? Sq + 2 * Sk : Part == attention_part::stats || Part == attention_part::dq ? Sq : Sk;
    d[rank - 1] = Part == attention_part::stats ? 2 : Part == attention_part::dv ? Dv : D;
    return d;
  }();
  using shape_type = shape_from<dims>;
  detail::tuple<C...> args;
  double scale = 0;

  // The keys query i sees (all Sk read: the derivative is not taken over first_keys or key_lengths).
  TENFOLD_HD static constexpr index_t visible(index_t i, index_t = Sk, index_t = Sq) { return forward::visible(i, Sk); }
  TENFOLD_HD constexpr index_t keys_of(index_t) const { return Sk; }
  static constexpr const std::int32_t* lengths = nullptr;
  static constexpr bool lengths_on_device = false;
  static constexpr index_t keys = Sk;

  template <class... X>
  constexpr auto with_children(detail::tuple<X...>&& ops) const {
    return attention_grad_node<Part, Causal, X...>{{}, std::move(ops), scale};
  }

  // ---- one element (the reference path) ----
  using A = compute_t<value_type>;
  template <int K, class S>
  TENFOLD_HD A read(const index_t* out, index_t row, index_t col) const {
    index_t in[S::rank];
    forward::template operand_index<S>(out, row, col, in);
    return static_cast<A>(detail::get<K>(args).at(in));
  }
  TENFOLD_HD A score(const index_t* out, index_t i, index_t j) const { // s q_i·k_j
    A s = A(0);
    for (index_t d = 0; d < D; ++d)
      s += read<0, typename q_type::shape_type>(out, i, d) * read<1, typename k_type::shape_type>(out, j, d);
    return s * static_cast<A>(scale);
  }
  TENFOLD_HD A g_dot_v(const index_t* out, index_t i, index_t j) const { // dP_ij = g_i·v_j
    A s = A(0);
    for (index_t e = 0; e < Dv; ++e)
      s += read<3, typename g_type::shape_type>(out, i, e) * read<2, typename v_type::shape_type>(out, j, e);
    return s;
  }
  TENFOLD_HD A lse(const index_t* out, index_t i) const {
    const index_t n = visible(i);
    A m = -std::numeric_limits<A>::infinity(), l = A(0);
    for (index_t j = 0; j < n; ++j) m = score(out, i, j) > m ? score(out, i, j) : m;
    for (index_t j = 0; j < n; ++j) l += A(std::exp(score(out, i, j) - m));
    return m + A(std::log(l));
  }
  // P_ij and dS_ij from the stats at row i
  TENFOLD_HD A prob(const index_t* out, index_t i, index_t j) const {
    return j < visible(i) ? A(std::exp(score(out, i, j) - stat(out, i, 0))) : A(0);
  }
  TENFOLD_HD A stat(const index_t* out, index_t i, index_t which) const {
    if constexpr (Part == attention_part::all) return which == 0 ? lse(out, i) : delta(out, i, lse(out, i));
    else return read<4, typename std::tuple_element_t<4, std::tuple<C..., void>>::shape_type>(out, i, which);
  }
  TENFOLD_HD A delta(const index_t* out, index_t i, A m) const { // Σ_j P_ij dP_ij
    A d = A(0);
    for (index_t j = 0; j < visible(i); ++j) d += A(std::exp(score(out, i, j) - m)) * g_dot_v(out, i, j);
    return d;
  }
  TENFOLD_HD A dscore(const index_t* out, index_t i, index_t j) const {
    return prob(out, i, j) * (g_dot_v(out, i, j) - stat(out, i, 1));
  }

  TENFOLD_HD A at(const index_t* out) const {
    const index_t r = out[rank - 2], c = out[rank - 1];
    if constexpr (Part == attention_part::stats) {
      const A m = lse(out, r);
      return c == 0 ? m : delta(out, r, m);
    } else if constexpr (Part == attention_part::all) {
      return r < Sq ? grad_q(out, r, c) : r < Sq + Sk ? grad_kv<true>(out, r - Sq, c) : grad_kv<false>(out, r - Sq - Sk, c);
    } else if constexpr (Part == attention_part::dq) return grad_q(out, r, c);
    else return grad_kv<Part == attention_part::dk>(out, r, c);
  }
  TENFOLD_HD A grad_q(const index_t* out, index_t r, index_t c) const {
    A s = A(0);
    for (index_t j = 0; j < visible(r); ++j) s += dscore(out, r, j) * read<1, typename k_type::shape_type>(out, j, c);
    return s * static_cast<A>(scale);
  }
  template <bool K>
  TENFOLD_HD A grad_kv(const index_t* out, index_t r, index_t c) const {
    A s = A(0);
    for (index_t i = 0; i < Sq; ++i) {
      if constexpr (K) s += dscore(out, i, r) * read<0, typename q_type::shape_type>(out, i, c);
      else s += prob(out, i, r) * read<3, typename g_type::shape_type>(out, i, c);
    }
    return K ? s * static_cast<A>(scale) : s;
  }
  static std::string str() {
    constexpr const char* names[] = {"attention_stats", "attention_dq", "attention_dk", "attention_dv", "attention_grad"};
    std::string s = std::string(names[int(Part)]) + (Causal ? "_causal(" : "(");
    ((s += C::str() + ", "), ...);
    s.resize(s.size() - 2);
    return s + ")";
  }
};

template <class E>
inline constexpr bool is_attention_grad_node_v = false;
template <attention_part P, bool Causal, class... C>
inline constexpr bool is_attention_grad_node_v<attention_grad_node<P, Causal, C...>> = true;
} // namespace tenfold::detail
