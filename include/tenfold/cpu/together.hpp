#pragma once
// together(assign(d1, e1), assign(d2, e2), ...) on the CPU.
// Elementwise assignments of one shape run as one pass over their elements, chunk by chunk, each
// assignment in order within a chunk. The result is the statements' in sequence wherever every
// destination is read only at the element being written (plan/aliasing.hpp) and two destinations are
// the same tensor or apart: checked at run time, and otherwise (or where a tree does not read as one
// flat run) the assignments run one after another. An optimizer's update (autodiff/optim.hpp) reads a
// parameter, its gradient and its moments once and writes the three back in the same pass.
// Reductions to one row of outputs over operands of one shape (batch norm's gamma and beta gradients,
// two column sums over the same [N, H, W, C] values) run block by block: each 1024-row block is walked
// once for all of them where their operands read as flat runs (what their trees share computed once
// per element), else reduced by each in turn, the later ones reading it from cache rather than memory.
// Each reduction's partials and their merge are its own kernel's, so the same bits; where a value
// reads a destination, the reductions run one after another.
#include <string>

#include "tenfold/core/step.hpp"
#include "tenfold/cpu/evaluator.hpp"
#include "tenfold/plan/aliasing.hpp"

namespace tenfold::cpu {
// Elements per chunk: every operand's and destination's chunk stays in L1 between the assignments.
inline constexpr index_t together_chunk = 1024;

// An assignment whose destination and value read as one flat run (contiguous, periodic or broadcast
// leaves under elementwise ops), vectorised.
template <class Dst, class N>
constexpr bool together_flat() {
  using L = typename lane_of<N>::type;
  if constexpr (!(lane_type_v<L> && simd_ok<N, L>::value) || N::shape_type::has_bounded || N::rank == 0) return false;
  else return Dst::contiguous && coalesce_start<N, Dst>() == 0;
}

template <class Dst, class N>
struct prepared_assign {
  Dst dst;
  N value;
};

// Every destination read only at its own element by every value, and two destinations the same or apart.
template <class... A>
bool together_pointwise(const A&... a) {
  bool ok = true;
  auto against = [&](const auto& x) {
    ((ok = ok && !plan::aliases(x.dst, a.value)), ...);
    auto apart = [&](const auto& y) {
      if (static_cast<const void*>(x.dst.data()) == static_cast<const void*>(y.dst.data())) return true;
      const auto p = plan::reach(x.dst), q = plan::reach(y.dst);
      return p.second <= q.first || q.second <= p.first;
    };
    ((ok = ok && apart(a)), ...);
  };
  (against(a), ...);
  return ok;
}

template <class A>
TENFOLD_INLINE void together_run(const A& a, index_t j, index_t stop) {
  using Dst = decltype(a.dst);
  using N = decltype(a.value);
  using L = typename lane_of<N>::type;
  std::array<index_t, N::rank + 1> zero{};
  const auto d = make_row<0, L>(a.dst, zero.data());
  const auto r = make_row<0, L>(a.value, zero.data());
  store_run<typename Dst::element_type, L, run_stride<Dst, 0>(), typename N::value_type, decltype(r), false>(d, r, j, stop);
}

template <class A0, class... A>
void run_elementwise_together(const A0& a0, const A&... a);

// A reduction assignment (its root reshape peeled already: cpu/step.hpp) with keepdims dropped, as
// run_root drops it: the destination and the reduce node its kernel sees.
template <class A>
auto as_reduction(const A& a) {
  using N = decltype(a.value);
  if constexpr (keeps_dims<N>()) {
    auto d = without_keepdims<N>(a.dst);
    detail::reduce_node<typename N::op_type, typename N::child_type, N::mask, false> r{{}, a.value.arg};
    return prepared_assign<decltype(d), decltype(r)>{d, r};
  } else {
    return a;
  }
}

template <class N>
constexpr bool row_blocks_reduction() {
  if constexpr (!detail::is_reduce_node_v<N>) return false;
  else if constexpr (N::child_type::rank == 0 || N::mask[N::child_type::rank - 1]) return false;
  else return kept_reduction<N>::row_blocks;
}

// One reduction of a group: its blocks' partials, then its row of outputs.
template <class X>
struct row_block_work {
  using N = decltype(X::value);
  using K_ = kept_reduction<N>;
  const X& x;
  std::array<typename K_::A, K_::static_blocks * K_::width> part{};
  void block(index_t b) { reduce_kept_block(x.value, 0, 0, K_::width, b, part.data() + b * K_::width, K_::count, -1); }
  void finish() const { finish_row_blocks<decltype(X::dst), N>(x.dst, part.data()); }
};

// Block b of reductions whose operands all read as flat runs from axis K on (kept_reduction's
// flat_block): their rows walked once, every reduction's values of a row computed in the same loop
// body (what their trees share, the compiler computes once: batch norm's relu mask and x-hat), the
// partials in registers. Each reduction combines its rows in row order, as its own kernel does: the
// same bits.
template <class X>
struct flat_block_acc {
  using N = decltype(X::value);
  using K_ = kept_reduction<N>;
  using I = typename K_::I;
  static constexpr index_t w = lanes<I>, V = K_::width / w;
  batch<I> acc[V];
  flat_block_acc() {
    for (index_t v = 0; v < V; ++v) acc[v] = batch<I>(K_::Op::template identity<typename K_::A>());
  }
  template <class Row>
  TENFOLD_INLINE void add(const Row& row, index_t i) {
    for (index_t v = 0; v < V; ++v) acc[v] = K_::Op::simd_combine(acc[v], row.load(i * K_::width + v * w));
  }
  void store(typename K_::A* blk) const {
    for (index_t v = 0; v < V; ++v) acc[v].store_unaligned(blk + v * w);
  }
};
template <class... W>
struct flat_blocks_together {
  using IS = typename std::tuple_element_t<0, std::tuple<W...>>::N::child_type::shape_type;
  static constexpr int K = std::max({W::K_::K...}); // flat from the latest axis any of them needs
  template <std::size_t... J>
  static void block(index_t b, std::index_sequence<J...>, W&... w) {
    constexpr index_t count = std::tuple_element_t<0, std::tuple<W...>>::K_::count;
    std::tuple<flat_block_acc<std::remove_cvref_t<decltype(w.x)>>...> acc;
    for_flat_runs<IS, K>(b, count, [&](const index_t* at, index_t i0, index_t i1) {
      const auto rows = std::make_tuple(make_row<K, typename W::K_::L>(w.x.value.arg, at)...);
      for (index_t i = i0; i < i1; ++i) (std::get<J>(acc).add(std::get<J>(rows), i), ...);
    });
    (std::get<J>(acc).store(w.part.data() + b * W::K_::width), ...);
  }
};

template <class A0, class... A>
void run_reductions_together(const A0& a0, const A&... a) {
  using N0 = decltype(a0.value);
  using IS = typename N0::child_type::shape_type;
  if constexpr (row_blocks_reduction<N0>() && ((row_blocks_reduction<decltype(a.value)>() &&
                                                 std::is_same_v<typename decltype(a.value)::child_type::shape_type, IS> &&
                                                 decltype(a.value)::mask == N0::mask) && ...)) {
    if (together_pointwise(a0, a...)) {
#if defined(TENFOLD_TRACE)
      const trace::scope traced("together(" + ((N0::str() + ... + ("; " + decltype(a.value)::str()))) + ")", [] {
        std::string s = "[";
        for (int i = 0; i < IS::rank; ++i) s += (i ? "," : "") + std::to_string(IS::dims[i]);
        return s + "]";
      }());
#endif
      auto work = std::make_tuple(row_block_work<A0>{a0}, row_block_work<A>{a}...);
      constexpr index_t grain = std::max<index_t>(1, parallel_reduce_grain / (reduce_block * kept_reduction<N0>::width));
      parallel_for(kept_reduction<N0>::static_blocks, grain, 1, [&](index_t b0, index_t b1) {
        for (index_t b = b0; b < b1; ++b)
          std::apply([b](auto&... w) {
            if constexpr ((std::remove_cvref_t<decltype(w)>::K_::flat_block && ...))
              flat_blocks_together<std::remove_cvref_t<decltype(w)>...>::block(b, std::index_sequence_for<decltype(w)...>{}, w...);
            else (w.block(b), ...);
          }, work);
      });
      std::apply([](auto&... w) { (w.finish(), ...); }, work);
      return;
    }
  }
  run(a0.dst, a0.value), (run(a.dst, a.value), ...);
}

// Epilogues of one product (each value elementwise over one matmul of the same operands, each operand a
// strided leaf): the GEMM runs once and its store writes every value from each finished block
// (gemm_eval.hpp's run_gemm with more outputs). Where the operands differ, or a destination is read by
// a value other than at its element, the assignments run one after another.
template <class A0, class... A>
void run_products_together(const A0& a0, const A&... a) {
  using N0 = decltype(a0.value);
  using Mm = std::remove_cvref_t<decltype(find_matmul(a0.value))>;
  constexpr bool same_kind = plan::gemm_root_v<N0> && detail::is_matmul_node_v<Mm> &&
                             ((plan::gemm_root_v<decltype(a.value)> && std::is_same_v<std::remove_cvref_t<decltype(find_matmul(a.value))>, Mm> &&
                               std::is_same_v<typename decltype(a.value)::shape_type, typename N0::shape_type>) && ...);
  if constexpr (same_kind && detail::is_leaf_v<typename Mm::a_type> && detail::is_leaf_v<typename Mm::b_type>) {
    const Mm& m0 = find_matmul(a0.value);
    auto same = [&](const auto& v) {
      const Mm& m = find_matmul(v);
      return detail::get<0>(m.args).data() == detail::get<0>(m0.args).data() && detail::get<1>(m.args).data() == detail::get<1>(m0.args).data();
    };
    // (no value reads a destination at all: the store computes every value of a vector before it writes any)
    bool apart = together_pointwise(a0, a...);
    auto unread = [&](const auto& x) { apart = apart && !plan::aliases(x.dst, a0.value, true) && (!plan::aliases(x.dst, a.value, true) && ...); };
    unread(a0), (unread(a), ...);
    if ((same(a.value) && ...) && apart) {
#if defined(TENFOLD_TRACE)
      using S = typename N0::shape_type;
      const trace::scope traced("together(" + ((N0::str() + ... + ("; " + decltype(a.value)::str()))) + ")", [] {
        std::string s = "[";
        for (int i = 0; i < S::rank; ++i) s += (i ? "," : "") + std::to_string(S::dims[i]);
        return s + "]";
      }());
#endif
      run_gemm(a0.dst, a0.value, gemm_output<std::remove_cvref_t<decltype(a.dst)>, std::remove_cvref_t<decltype(a.value)>>{a.dst, a.value}...);
      return;
    }
  }
  run(a0.dst, a0.value), (run(a.dst, a.value), ...);
}

template <class A0, class... A>
void run_together(const A0& a0, const A&... a) {
  if constexpr (detail::is_reduction_tree<decltype(a0.value)>()) {
    run_reductions_together(as_reduction(a0), as_reduction(a)...);
  } else if constexpr (detail::is_product_epilogue<decltype(a0.value)>()) {
    run_products_together(a0, a...);
  } else {
    run_elementwise_together(a0, a...);
  }
}

template <class A0, class... A>
void run_elementwise_together(const A0& a0, const A&... a) {
  using S = typename decltype(a0.dst)::shape_type;
  static_assert(((std::is_same_v<typename decltype(a.dst)::shape_type, S>) && ...),
                "tenfold::together: every destination must have the same shape");
  if constexpr (together_flat<decltype(a0.dst), decltype(a0.value)>() && (together_flat<decltype(a.dst), decltype(a.value)>() && ...)) {
    if (together_pointwise(a0, a...)) {
#if defined(TENFOLD_TRACE)
      const trace::scope traced("together(" + ((decltype(a0.value)::str() + ... + ("; " + decltype(a.value)::str()))) + ")", [] {
        std::string s = "[";
        for (int i = 0; i < S::rank; ++i) s += (i ? "," : "") + std::to_string(S::dims[i]);
        return s + "]";
      }());
#endif
      parallel_for(S::size, parallel_grain, together_chunk, [&](index_t b, index_t e) {
        for (index_t j = b; j < e; j += together_chunk) {
          const index_t stop = std::min(e, j + together_chunk);
          together_run(a0, j, stop), (together_run(a, j, stop), ...);
        }
      });
      return;
    }
  }
  run(a0.dst, a0.value), (run(a.dst, a.value), ...);
}
} // namespace tenfold::cpu
