#pragma once
// A row whose tail reads the very values its row-fused reduction reduces — softmax's E * (1 / sum(E)),
// with E = exp(x - max(x)) — computes E once per element instead of twice: while the reduction walks E,
// each value is also written to the destination row, and the tail then reads E back from there while
// the row is still in L1/L2. Recognised from the types alone: op(E, f(broadcast(reduce(E) over the last
// axis))) with f the identity or one unary op, E not a plain tensor. Values are bitwise those of the
// two-pass evaluation (same E, same reduction order, same tail).
#include "tenfold/cpu/reduce.hpp"

namespace tenfold::cpu {

// Reads a row and keeps what it read in `out`. A reduction reads each position exactly once.
template <class Row, class T>
struct tee_row {
  Row src;
  T* out;
  TENFOLD_INLINE auto scalar(index_t j) const {
    const auto v = src.scalar(j);
    out[j] = static_cast<T>(v);
    return v;
  }
  TENFOLD_INLINE auto load(index_t j) const {
    const auto b = src.load(j);
    b.store_unaligned(out + j);
    return b;
  }
};

// The reduction view inside the tail's second operand: V itself, or the operand of one unary op on it.
template <class C>
struct tee_view {
  using type = C;
};
template <class U, class V>
struct tee_view<detail::map_node<U, V>> {
  using type = V;
};

template <class N, class Dst, int K, class L>
constexpr bool tee_fusable() {
  if constexpr (!detail::is_map_node_v<N>) return false;
  else if constexpr (std::tuple_size_v<decltype(N::args)> != 2) return false;
  else {
    using E = std::tuple_element_t<0, decltype(N::args)>;
    using V = typename tee_view<std::tuple_element_t<1, decltype(N::args)>>::type;
    if constexpr (!plan::is_view_node_v<V> || detail::is_leaf_v<E>) return false;
    else {
      using Rd = typename V::child_type;
      if constexpr (!detail::is_reduce_node_v<Rd>) return false;
      else {
        using T = typename Dst::value_type;
        return std::is_same_v<typename Rd::child_type, E> && plan::row_fused_v<V> && K == N::rank - 1 &&
               Rd::count == N::shape_type::dims[N::rank - 1] && run_stride<Dst, K>() == 1 &&
               std::is_same_v<T, L> && std::is_same_v<typename E::value_type, L> && std::is_same_v<typename Rd::input_t, L> &&
               std::is_same_v<typename Rd::acc_type, L> && simd_ok<E, L>::value;
      }
    }
  }
}

// One whole row of a tee-fusable N into dst.
template <int K, class L, class Dst, class N>
void run_tee_row(const Dst& dst, const N& n, const index_t* idx) {
  using C = std::tuple_element_t<1, decltype(N::args)>;
  using V = typename tee_view<C>::type;
  using Rd = typename V::child_type;
  using Op = typename Rd::op_type;
  using T = typename Dst::value_type;
  constexpr index_t inner = N::shape_type::dims[N::rank - 1];
  constexpr index_t blocks = (inner + reduce_block - 1) / reduce_block;
  const auto d = make_row<K, L>(dst, idx);
  const auto e = make_row<K, L>(std::get<0>(n.args), idx);
  const tee_row<decltype(e), T> t{e, d.p};
  const L acc = Op::merge(Op::template identity<L>(), reduce_tree<Op, L, L>(t, 0, blocks, inner, 0));
  auto r = static_cast<compute_t<typename C::value_type>>(Op::finalize(acc, Rd::count));
  if constexpr (!std::is_same_v<C, V>) r = static_cast<compute_t<typename C::value_type>>(C::op_type::template apply<typename C::value_type>(r));
  using tail_t = map_row<typename N::op_type, typename N::value_type, L, leaf_row<const T, L, 1>, scalar_row<typename C::value_type, L>>;
  const tail_t tail{{leaf_row<const T, L, 1>{d.p}, scalar_row<typename C::value_type, L>{r}}};
  store_run<T, L, 1, typename N::value_type>(d, tail, 0, inner);
}
} // namespace tenfold::cpu
