#pragma once
// together(assign(d1, e1), assign(d2, e2), ...) on the CPU: elementwise assignments of one shape run as
// one pass over their elements, chunk by chunk, each assignment in order within a chunk. The result is
// the statements' in sequence wherever every destination is read only at the element being written
// (plan/aliasing.hpp) and two destinations are the same tensor or apart: checked at run time, and
// otherwise (or where a tree does not read as one flat run) the assignments run one after another.
// An optimizer's update (autodiff/optim.hpp) reads a parameter, its gradient and its moments once and
// writes the three back in the same pass.
#include <string>

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
void run_together(const A0& a0, const A&... a) {
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
