#pragma once
// A row whose tail reads the very values its row-fused reduction reduces — softmax's E * (1 / sum(E)),
// with E = exp(x - max(x)) — computes E once per element instead of twice: while the reduction walks E,
// each value is also written to the destination row, and the tail then reads E back from there while
// the row is still in L1/L2. Recognised from the types alone: op(E, f(broadcast(reduce(E) over the last
// axis))) with f the identity or one unary op, E not a plain tensor. Values are bitwise those of the
// two-pass evaluation (same E, same reduction order, same tail).
#include "tenfold/cpu/elementwise_config.hpp"
#include "tenfold/cpu/reduce.hpp"
#include "tenfold/core/unpack.hpp"
#include "tenfold/plan/same_reductions.hpp"

namespace tenfold::cpu {

// The rows of the leaves an expression reads along its run, some rows ahead (elementwise_config's
// row_prefetch_config): a row's compute (softmax's exp sweep) then overlaps the memory traffic of the
// next, which would otherwise start only when that row's first sweep misses in the cache. Row-constant
// subtrees (the broadcast reductions) read the same leaves and are skipped.
template <int K, class N>
constexpr int count_row_leaves() {
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == plan::nest_node::leaf) return run_stride<N, K>() == 1 ? 1 : 0;
  else if constexpr (kind == plan::nest_node::map && !row_constant<N, K>())
    return []<class... C>(detail::tuple<C...>*) { return (count_row_leaves<K, C>() + ... + 0); }(static_cast<decltype(N::args)*>(nullptr));
  else return 0; // row-constant, or read through the run index (not prefetched)
}
// Count, cache level and whether the destination is touched too are compile-time constants, so the
// touches unroll into registers. (Count 0: none.)
template <int Count, bool ToL1, bool Dst = false>
struct row_prefetch {
  std::array<const char*, Count> p{};
  std::array<index_t, Count> bytes{}; // element size
  int count = 0;
  static constexpr bool touches_dst = Dst;
  const char* w = nullptr; // the destination's row (Dst)
  index_t w_bytes = 0;
  TENFOLD_INLINE void touch(index_t j) const {
    constexpr int level = ToL1 ? 3 : 2;
    if constexpr (Dst) __builtin_prefetch(w + j * w_bytes, 1, level);
    for (int i = 0; i < Count; ++i) __builtin_prefetch(p[i] + j * bytes[i], 0, level);
  }
};
template <int K, class N, class P>
void collect_row_leaves(const N& n, const index_t* idx, P& pf) {
  // (the nodes count_row_leaves counts)
  if constexpr (plan::nest_kind_v<N> == plan::nest_node::leaf) {
    if constexpr (run_stride<N, K>() == 1) {
      index_t off = N::offset;
      for (int i = 0; i < K; ++i) off += idx[i] * N::strides[i];
      pf.p[pf.count] = reinterpret_cast<const char*>(n.data() + off);
      pf.bytes[pf.count++] = index_t(sizeof(typename N::element_type));
    }
  } else if constexpr (plan::nest_kind_v<N> == plan::nest_node::map && !row_constant<N, K>()) {
    detail::unpack([&](const auto&... c) { (collect_row_leaves<K>(c, idx, pf), ...); }, n.args);
  }
}
// The prefetcher of rows of `Bytes` bytes whose loads of N (into destination D) touch the row P.ahead
// rows later: none where that is 0; the destination's row too where P.dst, D is contiguous along it and
// not Streamed (written past the caches, where a prefetch for writing would only pull its lines in).
template <int K, class N, class D, index_t Bytes, row_prefetch_config P, bool Streamed>
using row_prefetch_t = row_prefetch<(P.ahead > 0 ? count_row_leaves<K, N>() : 0), (Bytes <= P.l1_bytes),
                                    (P.ahead > 0 && P.dst && !Streamed && run_stride<D, K>() == 1)>;
// The row `ahead` rows after row o, or o itself where that is at or past `end` (the last rows then touch
// themselves again: already cached, and no branch in the loop).
inline index_t row_ahead(index_t o, int ahead, index_t end) { return o + ahead < end ? o + ahead : o; }
// pf's pointers for the row at idx: N's leaves, and the destination's row where pf touches it.
template <int K, class N, class D, class P>
void collect_prefetch(const N& n, const D& dst, const index_t* idx, P& pf) {
  if constexpr (std::tuple_size_v<decltype(pf.p)> > 0) collect_row_leaves<K>(n, idx, pf);
  if constexpr (P::touches_dst) {
    index_t off = D::offset;
    for (int i = 0; i < K; ++i) off += idx[i] * D::strides[i];
    pf.w = reinterpret_cast<const char*>(dst.data() + off);
    pf.w_bytes = index_t(sizeof(typename D::element_type));
  }
}

// Does N hold a reduction computed once per row of a run over axes [K, rank)? Such a row is swept
// more than once (the reductions, then the tail), and its first sweep would wait on memory.
template <int K, class N>
constexpr bool has_row_reduction() {
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == plan::nest_node::reduce_view) return plan::constant_from<N>(K);
  else if constexpr (kind == plan::nest_node::map)
    return []<class... C>(detail::tuple<C...>*) { return (has_row_reduction<K, C>() || ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // the other kinds hold no row-fused reduction (the walk takes them out of views)
}
// A row whose loads also prefetch the same positions of the next row (the tail sweep of a row-fused
// expression other than the tee's: layer_norm, rms_norm).
template <class Row, class Ahead>
struct prefetching_row {
  Row src;
  Ahead ahead;
  TENFOLD_INLINE auto scalar(index_t j) const { return src.scalar(j); }
  TENFOLD_INLINE auto load(index_t j) const {
    ahead.touch(j);
    return src.load(j);
  }
};

// Reads a row and keeps what it read in `out`. A reduction reads each position exactly once, so each
// read is also the moment to prefetch that position of the next row (`ahead`) and to finish that
// position of the previous row (`behind`: its tail, stored), spreading both over this row's compute.
// Both are held by value: the reduction loop works on a local copy of the row (reduce_block_run), so
// they stay in registers although each iteration stores through `out`.
template <class Row, class T, class Ahead, class Behind>
struct tee_row {
  Row src;
  T* out;
  Ahead ahead;
  Behind behind;
  TENFOLD_INLINE auto scalar(index_t j) const {
    behind.finish(j, j + 1);
    const auto v = src.scalar(j);
    out[j] = static_cast<T>(v);
    return v;
  }
  TENFOLD_INLINE auto load(index_t j) const {
    ahead.touch(j);
    behind.finish(j, j + lanes<T>);
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
  else if constexpr (detail::tuple_size_v<decltype(N::args)> != 2) return false;
  else {
    using E = detail::tuple_element_t<0, decltype(N::args)>;
    using V = typename tee_view<detail::tuple_element_t<1, decltype(N::args)>>::type;
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

// The types say that the tail reads the very values the reduction reduces, but two tensors of one type
// say so too (exp(a) / sum(exp(b)) with a and b alike): the two subtrees must also hold the same
// operands, compared child by child (plan::same::same_data): a byte compare of the whole subtree also
// compared the padding between children, which differs from node to node where nodes are built on the
// stack, and silently turned the tee off (softmax at half its speed, found by profiling).
template <class N>
bool tee_same_values(const N& n) {
  using C = detail::tuple_element_t<1, decltype(N::args)>;
  using V = typename tee_view<C>::type;
  const auto& c = detail::get<1>(n.args);
  const V* v;
  if constexpr (std::is_same_v<C, V>) v = &c;
  else v = &detail::get<0>(c.args);
  const auto& e = detail::get<0>(n.args);
  const auto& reduced = v->arg.arg;
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(reduced)>, std::remove_cvref_t<decltype(e)>>);
  return plan::same::same_data(e, reduced);
}

// The tail of a row whose reduction is done: dst[j] = op(E[j], r), E read back from where the tee
// kept it. `active` is false before the first row.
template <class T, class L, class V, class Tail, bool Stream>
struct tee_finish {
  leaf_row<T, L, 1> d{};
  Tail tail{};
  bool active = false;
  TENFOLD_INLINE void finish(index_t j0, index_t j1) const {
    if (active) store_run<T, L, 1, V, Tail, Stream>(d, tail, j0, j1);
  }
};

// Rows [o0, o1) of a tee-fusable N into dst. E goes to the destination row, or, when the output is
// streamed past the caches (or the row is at least Cfg.tee_pipeline_from_bytes long), to one of two
// stack rows: row o's tail is then stored (with non-temporal stores where streamed: no read for
// ownership) while row o + 1's exp sweep runs, so the stores overlap compute instead of following it.
// Each row is computed exactly as on its own (same E, same reduction order), so the result does not
// depend on how rows are split over threads.
inline constexpr index_t tee_pipeline_bytes = index_t(256) << 10; // both stack rows together

template <int K, class L, bool Stream, elementwise_config Cfg, class Dst, class N>
void run_tee_rows(const Dst& dst, const N& n, index_t o0, index_t o1) {
  using C = detail::tuple_element_t<1, decltype(N::args)>;
  using V = typename tee_view<C>::type;
  using Rd = typename V::child_type;
  using Op = typename Rd::op_type;
  using T = typename Dst::value_type;
  using S = typename N::shape_type;
  using R = compute_t<typename C::value_type>;
  constexpr index_t inner = S::dims[N::rank - 1];
  constexpr index_t blocks = (inner + reduce_block - 1) / reduce_block;
  constexpr bool pipelined =
      (Stream || inner * index_t(sizeof(T)) >= Cfg.tee_pipeline_from_bytes) && 2 * inner * index_t(sizeof(T)) <= tee_pipeline_bytes;
  using tail_t = map_row<typename N::op_type, typename N::value_type, L, leaf_row<const T, L, 1>, scalar_row<typename C::value_type, L>>;
  using finish_t = tee_finish<T, L, typename N::value_type, tail_t, Stream>;
  const auto& e_node = detail::get<0>(n.args);
  using prefetch_t = row_prefetch_t<K, std::remove_cvref_t<decltype(e_node)>, Dst, inner * index_t(sizeof(T)), Cfg.tee, Stream>;
  alignas(default_alignment) T stack_rows[pipelined ? 2 : 1][pipelined ? inner : 1];
  std::array<index_t, K + 1> idx{}, next{};
  const finish_t none{};
  finish_t behind{};
  for (index_t o = o0; o < o1; ++o) {
    detail::unravel<shape_from<prefix_dims<S, K>()>>(o, idx.data());
    detail::unravel<shape_from<prefix_dims<S, K>()>>(row_ahead(o, Cfg.tee.ahead, o1), next.data());
    prefetch_t ahead;
    collect_prefetch<K>(e_node, dst, next.data(), ahead);
    const auto d = make_row<K, L>(dst, idx.data());
    T* const e_out = pipelined ? stack_rows[(o - o0) & 1] : d.p;
    const auto e = make_row<K, L>(e_node, idx.data()); // (computes the row's max)
    const tee_row<decltype(e), T, prefetch_t, finish_t> t{e, e_out, ahead, pipelined ? behind : none};
    const L acc = Op::merge(Op::template identity<L>(), reduce_run<Op, L, L, blocks>(t, inner, 0));
    auto r = static_cast<R>(Op::finalize(acc, Rd::count));
    if constexpr (!std::is_same_v<C, V>) r = static_cast<R>(C::op_type::template apply<typename C::value_type>(r));
    const tail_t tail{{leaf_row<const T, L, 1>{e_out}, scalar_row<typename C::value_type, L>{r}}};
    if constexpr (pipelined) behind = {d, tail, true};
    else store_run<T, L, 1, typename N::value_type>(d, tail, 0, inner);
  }
  behind.finish(0, inner);
}
} // namespace tenfold::cpu
