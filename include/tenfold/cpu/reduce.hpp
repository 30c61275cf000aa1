#pragma once
// Reduction and scan kernels. Sums are pairwise over fixed 1024-element blocks, each block vectorised
// with several accumulators, so `sum` of 10^7 floats stays within ~1e-7 of the exact value, and the
// tree's shape depends only on the extent: results are identical for any thread count.
#include "tenfold/cpu/rows.hpp"
#include "tenfold/plan/bounded.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/cpu/thread_pool.hpp"

namespace tenfold::cpu {

template <class S, int K>
constexpr auto prefix_dims() {
  detail::dims_t<K> d{};
  for (int i = 0; i < K; ++i) d[i] = S::dims[i];
  return d;
}

inline constexpr index_t reduce_block = 1024;
// Reduced elements below which a reduction stays on the calling thread.
inline constexpr index_t parallel_reduce_grain = 1 << 15;

template <class Op, class I, class A>
inline constexpr bool simd_reducible = lane_type_v<I> && std::is_same_v<A, I> && requires(batch<I> b) {
  Op::simd_combine(b, b);
  Op::simd_merge(b, b);
};

// lane_shift<I, S>::type: the swizzle moving lane k + S to lane k (wrapping around).
template <class I, index_t S, class Seq = std::make_index_sequence<std::size_t(lanes<I>)>>
struct lane_shift;
template <class I, index_t S, std::size_t... K>
struct lane_shift<I, S, std::index_sequence<K...>> {
  using U = std::conditional_t<sizeof(I) == 4, std::uint32_t, std::uint64_t>;
  using type = xsimd::batch_constant<xsimd::batch<U, typename batch<I>::arch_type>, U((K + S) % sizeof...(K))...>;
};
// (Only lane types of 4 and 8 bytes reach it: simd_reducible.)
template <class I>
inline constexpr bool has_lane_swizzle = requires(batch<I> b) {
  xsimd::kernel::swizzle(b, typename lane_shift<I, 1>::type{}, typename batch<I>::arch_type{});
};
// Steps S, S/2, ..., 1 of the tree.
template <class Op, class I, index_t S>
TENFOLD_INLINE batch<I> merge_lanes_from(batch<I> v) {
  if constexpr (S == 0) return v;
  else {
    v = Op::simd_merge(v, xsimd::kernel::swizzle(v, typename lane_shift<I, S>::type{}, typename batch<I>::arch_type{}));
    return merge_lanes_from<Op, I, S / 2>(v);
  }
}

// The lanes of a batch merged as a tree, lane[k] = merge(lane[k], lane[k + step]) for step = w/2, ...,
// 1: log2(w) dependent steps. In registers where the ISA has xsimd's swizzle (a block's last step would
// otherwise be a store and a chain of store-forwarded scalar loads, per 1024-element block); the
// same merges of the same values either way.
template <class Op, class I>
TENFOLD_INLINE I merge_lanes(batch<I> v) {
  constexpr index_t w = lanes<I>;
  alignas(default_alignment) I lane[w];
  if constexpr (has_lane_swizzle<I>) {
    merge_lanes_from<Op, I, w / 2>(v).store_aligned(lane);
  } else {
    v.store_aligned(lane);
    for (index_t step = w / 2; step >= 1; step /= 2)
      for (index_t k = 0; k < step; ++k) lane[k] = Op::merge(lane[k], lane[k + step]);
  }
  return lane[0];
}

// Reduce positions [lo, hi) of a run (at most one block) starting at reduced position `base`.
template <class Op, class I, class A, class Row>
TENFOLD_INLINE A reduce_block_run(const Row& row_in, index_t lo, index_t hi, index_t base) {
  // A local copy: a row that also stores what it reads (cpu/row_tee.hpp) would otherwise make the
  // compiler reload every pointer and scalar of the row after each of its (may-alias) vector stores.
  const Row row = row_in;
  // An op whose accumulator is not one vector (logsumexp's running max and sum) may reduce a whole
  // block itself.
  if constexpr (lane_type_v<I> && std::is_same_v<decltype(row.load(0)), batch<I>> &&
                requires { Op::template simd_block<A, I>(row, lo, hi); })
    return Op::template simd_block<A, I>(row, lo, hi);
  A acc = Op::template identity<A>();
  index_t j = lo;
  if constexpr (simd_reducible<Op, I, A> && std::is_same_v<decltype(row.load(0)), batch<I>>) {
    constexpr index_t w = lanes<I>;
    if (hi - lo >= w) {
      batch<I> a0(Op::template identity<A>()), a1 = a0, a2 = a0, a3 = a0;
      for (; j + 4 * w <= hi; j += 4 * w) {
        a0 = Op::simd_combine(a0, row.load(j));
        a1 = Op::simd_combine(a1, row.load(j + w));
        a2 = Op::simd_combine(a2, row.load(j + 2 * w));
        a3 = Op::simd_combine(a3, row.load(j + 3 * w));
      }
      for (; j + w <= hi; j += w) a0 = Op::simd_combine(a0, row.load(j));
      acc = Op::merge(acc, merge_lanes<Op>(Op::simd_merge(Op::simd_merge(a0, a1), Op::simd_merge(a2, a3))));
    }
  }
  for (; j < hi; ++j) acc = Op::combine(acc, static_cast<I>(row.scalar(j)), base + j);
  return acc;
}

// Pairwise tree over already reduced blocks part[b0, b1).
template <class Op, class A>
A merge_tree(const A* part, index_t b0, index_t b1) {
  if (b1 - b0 == 1) return part[b0];
  const index_t mid = b0 + (b1 - b0) / 2;
  return Op::merge(merge_tree<Op>(part, b0, mid), merge_tree<Op>(part, mid, b1));
}
inline constexpr index_t reduce_tree_leaves = 64;

// Pairwise tree over the blocks [b0, b1) of a run of length n. Up to 64 blocks are reduced in one
// sweep first (no call between blocks), then merged along the same tree. The block loop is the one
// place the block's code is inlined (a run of one block goes through reduce_run below).
template <class Op, class I, class A, class Row>
A reduce_tree(const Row& row, index_t b0, index_t b1, index_t n, index_t base) {
  if (b1 - b0 <= reduce_tree_leaves) {
    A part[reduce_tree_leaves]{}; // (zeroed: GCC cannot see that merge_tree reads only the entries written)
    for (index_t b = b0; b < b1; ++b)
      part[b - b0] = reduce_block_run<Op, I, A>(row, b * reduce_block, std::min(n, (b + 1) * reduce_block), base);
    return merge_tree<Op>(part, 0, b1 - b0);
  }
  const index_t mid = b0 + (b1 - b0) / 2;
  return Op::merge(reduce_tree<Op, I, A>(row, b0, mid, n, base), reduce_tree<Op, I, A>(row, mid, b1, n, base));
}

// A run of n positions in `Blocks` blocks (a constant wherever a run is reduced): one block in one
// sweep, more along the tree. (A second inlined copy of the block's code in the tree for one block was
// 6% of the code of a sanitized test build.)
template <class Op, class I, class A, index_t Blocks, class Row>
TENFOLD_INLINE A reduce_run(const Row& row, index_t n, index_t base) {
  if constexpr (Blocks == 1) return reduce_block_run<Op, I, A>(row, 0, n, base);
  else return reduce_tree<Op, I, A>(row, 0, Blocks, n, base);
}

// Same tree, with the subtrees below depth `levels` computed in parallel.
template <class Op, class I, class A, class Row>
A reduce_tree_parallel(const Row& row, index_t n, index_t base) {
  const index_t blocks = (n + reduce_block - 1) / reduce_block;
  constexpr int levels = 6;
  A part[1 << levels];
  index_t lo[1 << levels], hi[1 << levels];
  int count = 0;
  auto split = [&](auto&& self, index_t b0, index_t b1, int depth) -> void {
    if (depth == levels || b1 - b0 == 1) {
      lo[count] = b0, hi[count] = b1, ++count;
      return;
    }
    const index_t mid = b0 + (b1 - b0) / 2;
    self(self, b0, mid, depth + 1), self(self, mid, b1, depth + 1);
  };
  split(split, 0, blocks, 0);
  auto task = [&](int t) { part[t] = reduce_tree<Op, I, A>(row, lo[t], hi[t], n, base); };
  thread_pool::instance().run(count, task);
  // Merge the parts along the same tree.
  int next = 0;
  auto merge = [&](auto&& self, index_t b0, index_t b1, int depth) -> A {
    if (depth == levels || b1 - b0 == 1) return part[next++];
    const index_t mid = b0 + (b1 - b0) / 2;
    A a = self(self, b0, mid, depth + 1);
    return Op::merge(a, self(self, mid, b1, depth + 1));
  };
  return merge(merge, 0, blocks, 0);
}

// First axis of the reduced run: reduced trailing axes that the operand lets us walk as one.
template <class C, auto Mask>
constexpr int run_start() {
  int t = C::rank > 0 ? C::rank - 1 : 0;
  while (t > 0 && Mask[t - 1] && flat_from<C>(t - 1)) --t;
  return t;
}

// N is taken as a plain type parameter: GCC 12 crashes on lambdas inside templates whose own
// parameters include class-type values (the reduced-axis mask).
// The accumulator of one output element `out` of a reduction whose innermost axis is reduced: the
// run (the reduced trailing axes the operand lets us walk as one) is vectorised and pairwise; other
// reduced axes are walked with an odometer. Used by the reduction kernel and by fused rows.
// `length`: that of a bounded axis the reduction runs over (upto<N>; the reduction kernel's roots only,
// plan/fusion.hpp). The bounded axis is then either the run (the first axis of a flat reduction, or the
// innermost: a run of `length` values) or one the odometer walks, to the length (the run starts after it).
template <class N>
typename N::acc_type reduce_one(const N& n, const index_t* out, bool parallel_inside, index_t length) {
  using Op = typename N::op_type;
  using C = typename N::child_type;
  using IS = typename C::shape_type;
  using I = typename N::input_t;
  using A = typename N::acc_type;
  constexpr bool over = plan::reduces_bounded_axis<N>();
  constexpr int R = C::rank, b = over ? IS::bounded_axis : -1, T0 = run_start<C, N::mask>();
  // where the run starts: not before the bounded axis unless it is the run (first or innermost)
  constexpr int T = !over || b == 0 || T0 > b ? T0 : b == R - 1 ? R - 1 : b + 1;
  constexpr bool bounded_run = over && T == b; // the run is the bounded axis (with any after it)
  static_assert(R == 0 || N::mask[R > 0 ? R - 1 : 0]);
  using L = std::conditional_t<lane_type_v<I> && simd_ok<C, I>::value, I, float>;
  constexpr index_t run = detail::product(IS::dims, T, R), runs = N::count / (run ? run : 1);
  constexpr index_t blocks = (run + reduce_block - 1) / reduce_block;
  std::array<index_t, R + 1> in{};
  N::base_index(out, in.data());
  A acc = Op::template identity<A>();
  if constexpr (over)
    if (length < 0) throw error("tenfold: internal: a reduction over an upto<N> axis reached a fused row");
  index_t active_run = run, active_runs = runs;
  if constexpr (bounded_run) active_run = detail::active_part<IS>(run, length);
  else if constexpr (over) active_runs = detail::active_part<IS>(runs, length);
  if (active_run == 0) return acc;
  for (index_t r = 0; r < active_runs; ++r) {
    const auto row = make_row<T, L>(n.arg, in.data());
    if constexpr (bounded_run)
      acc = Op::merge(acc, parallel_inside ? reduce_tree_parallel<Op, I, A>(row, active_run, r * active_run)
                                           : reduce_tree<Op, I, A>(row, 0, (active_run + reduce_block - 1) / reduce_block, active_run, r * active_run));
    else if constexpr (blocks > 0)
      acc = Op::merge(acc, parallel_inside && blocks > 1 ? reduce_tree_parallel<Op, I, A>(row, run, r * run)
                                                         : reduce_run<Op, I, A, blocks>(row, run, r * run));
    for (int i = T - 1; i >= 0; --i) { // odometer over the reduced axes before the run (the bounded one to its length)
      if (!N::mask[i]) continue;
      if (++in[i] < (i == b ? length : IS::dims[i])) break;
      in[i] = 0;
    }
  }
  return acc;
}

// Block b of `count` reduced rows over an operand of shape IS read as flat runs from axis K on: reduced
// row r is row r % rows of run r / rows (rows: the extents from K to the last axis, exclusive), so
// f(at, i0, i1) is called per run with the run's index before axis K and its rows [i0, i1), in row order.
template <class IS, int K, class F>
TENFOLD_INLINE void for_flat_runs(index_t b, index_t count, F&& f) {
  constexpr index_t rows = [] {
    index_t n = 1;
    for (int i = K > 0 ? K : 0; i < IS::rank - 1; ++i) n *= IS::dims[i];
    return n;
  }();
  for (index_t r = b * reduce_block, rend = std::min(count, r + reduce_block); r < rend;) {
    std::array<index_t, IS::rank + 1> at{};
    for (index_t q = r / rows, i = K - 1; i >= 0; --i) at[i] = q % IS::dims[i], q /= IS::dims[i];
    const index_t i0 = r % rows, i1 = std::min(rows, i0 + (rend - r));
    f(at.data(), i0, i1);
    r += i1 - i0;
  }
}

// A reduction whose innermost axis is kept: its constants. Outputs are rows of `width` along that axis,
// each reduced row (a position of the reduced axes) read as a run of it.
template <class N>
struct kept_reduction {
  using Op = typename N::op_type;
  using C = typename N::child_type;
  using IS = typename C::shape_type;
  using OS = typename N::shape_type;
  using I = typename N::input_t;
  using A = typename N::acc_type;
  using L = std::conditional_t<lane_type_v<I> && simd_ok<C, I>::value, I, float>;
  static constexpr int R = C::rank;
  using index_array = std::array<index_t, R + 1>;
  static constexpr index_t outputs = OS::size, count = N::count;
  static constexpr bool over_bounded = plan::reduces_bounded_axis<N>();
  static constexpr int bounded_in = over_bounded ? IS::bounded_axis : -1; // (the reduced bounded axis)
  static constexpr std::array<bool, R + 1> mask = [] {
    std::array<bool, R + 1> m{};
    for (int i = 0; i < R; ++i) m[i] = N::mask[i];
    return m;
  }();
  static constexpr index_t width = R > 0 ? IS::dims[R > 0 ? R - 1 : 0] : 1;
  // A tile of accumulators spans up to 16 KiB of a row, so each reduced row is read in long runs.
  static constexpr index_t tile = std::clamp<index_t>(index_t(16384 / sizeof(A)), 16, 4096);
  static constexpr index_t out_rows = outputs / (width ? width : 1);
  // A single row of a few vectors of outputs over an operand that reads as flat runs from axis K on
  // (periodic broadcasts included: batch norm's per-channel sums in NHWC; a per-image row mask keeps
  // K at 1): a block is walked as runs (for_flat_runs) with its partials in registers. The same
  // combines in the same order as the general block, so the same bits.
  static constexpr int K = [] {
    int k = R - 1;
    while (k > 0 && flat_from<C>(k - 1)) --k;
    return k;
  }();
  static constexpr bool flat_block = out_rows == 1 && !OS::has_bounded && !over_bounded && K < R - 1 &&
                                     simd_reducible<Op, I, A> && std::is_same_v<L, I> && width % lanes<I> == 0 &&
                                     width / lanes<I> <= 8;
  static constexpr index_t static_blocks = (count + reduce_block - 1) / reduce_block;
  // One row of outputs over many reduced rows (batch norm's per-channel sums): its blocks are shared
  // out over the threads, each partial kept in a buffer of at most 32 KiB, then merged in order.
  static constexpr bool row_blocks = out_rows == 1 && !OS::has_bounded && !over_bounded && width <= tile && static_blocks > 1 &&
                                     static_blocks * width * index_t(sizeof(A)) <= 32768;
};

// Block b of reduced positions ([b * reduce_block, ...): one partial per output of columns [j0, j1) of
// output row orow) into blk[0, j1 - j0); the blocks are then merged into the total in order
// (pairwise-ish accuracy for long columns, and the same bits however the blocks were shared out).
// active_count: the reduced positions (all of them but over an upto<N> axis, whose `length` is given).
template <class N>
void reduce_kept_block(const N& n, index_t orow, index_t j0, index_t j1, index_t b, typename N::acc_type* blk, index_t active_count,
                       index_t length) {
  using K_ = kept_reduction<N>;
  using Op = typename K_::Op;
  using IS = typename K_::IS;
  using I = typename K_::I;
  using A = typename K_::A;
  using L = typename K_::L;
  using index_array = typename K_::index_array;
  constexpr int R = K_::R;
  constexpr index_t width = K_::width;
  if constexpr (K_::flat_block) {
    constexpr int K = K_::K;
    constexpr index_t w = lanes<I>, V = width / w;
    batch<I> acc[V];
    for (index_t v = 0; v < V; ++v) acc[v] = batch<I>(Op::template identity<A>());
    for_flat_runs<IS, K>(b, active_count, [&](const index_t* at, index_t i0, index_t i1) {
      const auto row = make_row<K, L>(n.arg, at);
      for (index_t i = i0; i < i1; ++i)
        for (index_t v = 0; v < V; ++v) acc[v] = Op::simd_combine(acc[v], row.load(i * width + v * w));
    });
    for (index_t v = 0; v < V; ++v) acc[v].store_unaligned(blk + v * w);
    (void)orow, (void)j0, (void)j1, (void)length;
  } else {
    constexpr auto mask = K_::mask;
    constexpr int bounded_in = K_::bounded_in;
    index_array in{}, out{};
    detail::unravel<typename N::shape_type>(orow * width, out.data());
    N::base_index(out.data(), in.data());
    for (index_t q = b * reduce_block, i = R - 2; i >= 0; --i) { // the reduced axes at position q
      if (!mask[i]) continue;
      const index_t extent = i == bounded_in ? length : IS::dims[i];
      in[i] = q % extent;
      q /= extent;
    }
    for (index_t j = 0; j < j1 - j0; ++j) blk[j] = Op::template identity<A>();
    for (index_t r = b * reduce_block, rend = std::min(active_count, r + reduce_block); r < rend; ++r) {
      const auto row = make_row<R - 1, L>(n.arg, in.data());
      index_t j = j0;
      if constexpr (simd_reducible<Op, I, A> && std::is_same_v<L, I>) {
        constexpr index_t w = lanes<I>;
        for (; j + w <= j1; j += w)
          Op::simd_combine(batch<I>::load_unaligned(blk + (j - j0)), row.load(j)).store_unaligned(blk + (j - j0));
      }
      for (; j < j1; ++j) blk[j - j0] = Op::combine(blk[j - j0], static_cast<I>(row.scalar(j)), r);
      for (int i = R - 2; i >= 0; --i) {
        if (!mask[i]) continue;
        if (++in[i] < (i == bounded_in ? length : IS::dims[i])) break;
        in[i] = 0;
      }
    }
  }
}

// The row of outputs of a row_blocks reduction from its blocks' partials (part[b * width + j]), merged
// in block order.
template <class Dst, class N>
void finish_row_blocks(const Dst& dst, const typename N::acc_type* part) {
  using K_ = kept_reduction<N>;
  using A = typename K_::A;
  using D = typename Dst::value_type;
  typename K_::index_array out{};
  for (index_t j = 0; j < K_::width; ++j) {
    A acc = K_::Op::template identity<A>();
    for (index_t b = 0; b < K_::static_blocks; ++b) acc = K_::Op::merge(acc, part[b * K_::width + j]);
    out[N::rank - 1] = j;
    dst.data()[Dst::offset_of(out.data())] = convert<D>(K_::Op::finalize(acc, K_::count));
  }
}

template <class Dst, class N>
void run_reduce(const Dst& dst, const N& n) {
  using Op = typename N::op_type;
  using C = typename N::child_type;
  using IS = typename C::shape_type;
  using D = typename Dst::value_type;
  constexpr int R = C::rank;
  constexpr index_t outputs = N::shape_type::size, count = N::count;
  // (a bounded axis, kept: the outputs whose index on it is below dst.length(), detail::active_at)
  using OS = typename N::shape_type;
  index_t active = outputs;
  if constexpr (OS::has_bounded) active = detail::active_part<OS>(outputs, dst.length());
  const auto output_at = [&](index_t a) {
    if constexpr (OS::has_bounded) return detail::active_at<OS>(a, dst.length());
    else return a;
  };
  // (a bounded first axis, reduced: as many positions per output as its length holds; mean divides by it)
  constexpr bool over_bounded = plan::reduces_bounded_axis<N>();
  constexpr int bounded_in = over_bounded ? IS::bounded_axis : -1; // (the reduced bounded axis)
  index_t length = -1, active_count = count;
  if constexpr (over_bounded) {
    detail::find_length(n.arg, length);
    active_count = detail::active_part<IS>(count, length);
    if (active_count == 0 && Op::needs_nonempty)
      throw error(detail::message("tenfold: ", Op::name, " over an upto<", IS::dims[bounded_in], "> axis of length 0 (it has no identity)"));
  }
  if constexpr (R == 0 || N::mask[R > 0 ? R - 1 : 0]) {
    using index_array = std::array<index_t, R + 1>; // (declared here: GCC 12 crashes on it inside the lambdas)
    // The innermost axis is reduced: each output reduces runs along it (several axes long when flat).
    auto one_output = [&](index_t o, bool parallel_inside) {
      index_array out{};
      detail::unravel<typename N::shape_type>(output_at(o), out.data());
      dst.data()[Dst::offset_of(out.data())] = convert<D>(Op::finalize(reduce_one(n, out.data(), parallel_inside, length), active_count));
    };
    if constexpr (outputs == 0) return;
    else if (active == 1 || active < thread_pool::instance().size()) {
      for (index_t o = 0; o < active; ++o) one_output(o, active_count >= 4 * parallel_reduce_grain);
    } else {
      const index_t grain = std::max<index_t>(1, parallel_reduce_grain / std::max<index_t>(count, 1));
      parallel_for(active, grain, 1, [&](index_t b, index_t e) {
        for (index_t o = b; o < e; ++o) one_output(o, false);
      });
    }
  } else {
    // The innermost axis is kept: accumulate whole rows of outputs at once, vectorised along it.
    using K_ = kept_reduction<N>;
    using A = typename K_::A;
    using index_array = typename K_::index_array;
    constexpr index_t width = K_::width, tile = K_::tile, out_rows = K_::out_rows;
    // (the kept innermost axis bounded: every row of outputs, each to the length; a kept bounded axis
    // before it: the active rows, each whole)
    constexpr bool inner_bounded = OS::has_bounded && OS::bounded_axis == OS::rank - 1;
    const index_t active_width = [&] {
      if constexpr (inner_bounded) return dst.length();
      else return width;
    }();
    const index_t active_rows = inner_bounded ? out_rows : active / (width ? width : 1);
    const index_t blocks = (active_count + reduce_block - 1) / reduce_block;
    if constexpr (K_::row_blocks) {
      A part[K_::static_blocks * width];
      parallel_for(blocks, std::max<index_t>(1, parallel_reduce_grain / (reduce_block * width)), 1, [&](index_t b0, index_t b1) {
        for (index_t b = b0; b < b1; ++b) reduce_kept_block(n, 0, 0, width, b, part + b * width, active_count, length);
      });
      finish_row_blocks<Dst, N>(dst, part);
    } else {
      auto one_tile = [&](index_t arow, index_t j0) {
        index_t orow = arow; // (a kept bounded axis before the last: the active rows, mapped)
        if constexpr (OS::has_bounded && !inner_bounded) orow = detail::active_at<OS, OS::rank - 1>(arow, dst.length());
        const index_t j1 = std::min(active_width, j0 + tile);
        A acc[tile], blk[tile];
        for (index_t j = 0; j < j1 - j0; ++j) acc[j] = Op::template identity<A>();
        for (index_t b = 0; b < blocks; ++b) {
          reduce_kept_block(n, orow, j0, j1, b, blk, active_count, length);
          for (index_t j = 0; j < j1 - j0; ++j) acc[j] = Op::merge(acc[j], blk[j]);
        }
        index_array out{};
        detail::unravel<typename N::shape_type>(orow * width, out.data());
        for (index_t j = j0; j < j1; ++j) {
          out[N::rank - 1] = j;
          dst.data()[Dst::offset_of(out.data())] = convert<D>(Op::finalize(acc[j - j0], active_count));
        }
      };
      const index_t tiles = (active_width + tile - 1) / tile;
      const index_t grain = std::max<index_t>(1, parallel_reduce_grain / std::max<index_t>(count * tile, 1));
      parallel_for(active_rows * tiles, grain, 1, [&](index_t b, index_t e) {
        for (index_t t = b; t < e; ++t) one_tile(t / tiles, (t % tiles) * tile);
      });
    }
  }
}

// Inclusive scan along one axis: each line is walked in order, in the accumulator type.
template <class Dst, class Op, class C, int Axis>
void run_scan(const Dst& dst, const detail::scan_node<Op, C, Axis>& n) {
  using S = typename C::shape_type;
  using I = typename detail::scan_node<Op, C, Axis>::input_t;
  using D = typename Dst::value_type;
  constexpr int R = S::rank;
  using index_array = std::array<index_t, R + 1>;
  constexpr index_t len = S::dims[Axis], lines = S::size / (len ? len : 1);
  auto line = [&](index_t l) {
    index_array idx{};
    for (int i = R - 1; i >= 0; --i) { // unravel l over every axis but Axis
      if (i == Axis) continue;
      idx[i] = l % S::dims[i];
      l /= S::dims[i];
    }
    I acc = Op::template identity<I>();
    for (index_t k = 0; k < len; ++k) {
      idx[Axis] = k;
      acc = Op::combine(acc, static_cast<I>(n.arg.at(idx.data())), k);
      dst.data()[Dst::offset_of(idx.data())] = convert<D>(acc);
    }
  };
  parallel_for(lines, std::max<index_t>(1, (index_t(1) << 15) / std::max<index_t>(len, 1)), 1, [&](index_t b, index_t e) {
    for (index_t l = b; l < e; ++l) line(l);
  });
}
} // namespace tenfold::cpu
