#pragma once
// The CPU evaluator: `tenfold::eval(dst, expr)` and Tensor assignment land here. One loop nest per
// assignment, chosen at compile time from the expression type: elementwise trees run as flat (or
// row-wise) SIMD loops split across the thread pool; a reduction or scan at the root runs its own kernel.
#include "tenfold/core/buffer.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/core/trace.hpp"
#include "tenfold/cpu/attention.hpp"
#include "tenfold/cpu/attention_backward.hpp"
#include "tenfold/cpu/blocks.hpp"
#include "tenfold/cpu/conv.hpp"
#include "tenfold/cpu/gemm_eval.hpp"
#include "tenfold/cpu/materialize.hpp"
#include "tenfold/cpu/reduce.hpp"
#include "tenfold/cpu/row_tee.hpp"
#include "tenfold/cpu/scatter.hpp"
#include "tenfold/cpu/split_rows.hpp"
#include "tenfold/cpu/window_reduce.hpp"
#include "tenfold/plan/aliasing.hpp"
#include "tenfold/plan/arena.hpp"
#include "tenfold/plan/bounded.hpp"
#include "tenfold/tuned/elementwise_cpu.hpp"
#include <memory>
#include <new>
#include <span>

namespace tenfold {
namespace cpu {

// Elements below which an assignment stays on the calling thread.
inline constexpr index_t parallel_grain = 1 << 15;

// The streaming threshold: the tuned table's entry for the build's machine, else the default
// (cpu/elementwise_config.hpp).
constexpr elementwise_config elementwise_config_for() {
  for (const elementwise_tuned_entry& e : tuned::elementwise_cpu)
    if (e.machine == build_machine) return e.config;
  return {};
}

// Does some leaf step through memory along the run, a cache line or more per element (a transposed
// or widely strided operand)?
template <class N, int K>
constexpr bool strided_run() {
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == plan::nest_node::leaf) {
    // Small strides (a step-2 slice, a flip) read every cache line anyway: tiling would not help.
    constexpr index_t s = run_stride<N, K>();
    return s > 16 || s < -16;
  } else if constexpr (kind == plan::nest_node::map)
    return []<class... C>(detail::tuple<C...>*) { return (strided_run<C, K>() || ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // the other kinds read no operand along the run by a stride of their own
}

// Tile edge for strided runs: a tile's rows of every operand stay in L1 while it is written.
inline constexpr index_t transpose_tile = 32;

// Outputs at least this large (bytes) are written with streaming stores.
inline constexpr index_t streaming_bytes = elementwise_config_for().streaming_bytes;
// ... and the row-fused nests' outputs (softmax, the norms) at least this large.
inline constexpr index_t rows_streaming_bytes = elementwise_config_for().rows_streaming();

// W x W blocks, column strips outermost: each strip reads W rows of a transposed operand front to back
// (prefetch-friendly) and writes whole cache lines of the output. `row` handles the ragged edges.
template <class Dst, class N, class Row>
void run_blocks(const Dst& dst, const N& n, const Row& row) {
  using S = typename N::shape_type;
  using L = compute_t<typename N::value_type>;
  constexpr int R = S::rank;
  constexpr index_t w = lanes<L>, rows = S::dims[R - 2], cols = S::dims[R - 1];
  constexpr index_t strips = (cols + w - 1) / w, batches = detail::product(S::dims, 0, R - 2);
  constexpr bool stream = S::size * index_t(sizeof(L)) >= streaming_bytes;
  using index_array = std::array<index_t, R + 1>;
  auto block_at = [&](index_array& i, index_t r, index_t j0) {
    i[R - 2] = r;
    const auto blk = make_block<L>(n, i.data()).load(j0);
    L* d = dst.data() + Dst::offset_of(i.data()) + j0;
    for (index_t q = 0; q < w; ++q) {
      if constexpr (stream) store_stream(d + q * row_stride_v<Dst>, blk[q]);
      else blk[q].store_unaligned(d + q * row_stride_v<Dst>);
    }
  };
  auto edge = [&](index_array& i, index_t r, index_t j0, index_t j1) {
    i[R - 2] = r;
    row(i.data(), j0, j1);
  };
  constexpr index_t full_rows = rows / w * w, full_cols = cols / w * w;
  if constexpr (stream) {
    // Larger than the caches: column strips outermost, so each strip streams W operand rows.
    auto run_strips = [&](index_t b, index_t e) {
      index_array i{};
      for (index_t t = b; t < e; ++t) {
        detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(t / strips, i.data());
        const index_t j0 = t % strips * w, j1 = std::min(cols, j0 + w);
        index_t r = 0;
        if (j1 - j0 == w)
          for (; r < full_rows; r += w) block_at(i, r, j0);
        for (; r < rows; ++r) edge(i, r, j0, j1);
      }
      stream_fence();
    };
    parallel_for(batches * strips, 1, 1, run_strips);
  } else {
    // In cache: row blocks outermost, so the output is written front to back.
    constexpr index_t row_blocks = (rows + w - 1) / w;
    auto run_rows = [&](index_t b, index_t e) {
      index_array i{};
      for (index_t t = b; t < e; ++t) {
        detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(t / row_blocks, i.data());
        const index_t r0 = t % row_blocks * w;
        if (r0 + w <= rows) {
          for (index_t j0 = 0; j0 < full_cols; j0 += w) block_at(i, r0, j0);
          if (full_cols < cols)
            for (index_t r = r0; r < r0 + w; ++r) edge(i, r, full_cols, cols);
        } else {
          for (index_t r = r0; r < rows; ++r) edge(i, r, 0, cols);
        }
      }
    };
    constexpr index_t tasks = batches * row_blocks;
    if constexpr (S::size <= parallel_grain) run_rows(0, tasks);
    else parallel_for(tasks, std::max<index_t>(1, parallel_grain / (cols * w)), 1, run_rows);
  }
}

// A bounded shape's nest: `rows` rows of `width` elements (rows of its first Kr axes, the a-th at place
// at(a)), one after another, split across the threads.
template <int Kr, class L, bool vec, class Dst, class N, class At>
void run_active_rows(const Dst& dst, const N& n, index_t rows, index_t width, At at) {
  using S = typename N::shape_type;
  [[maybe_unused]] const bool share = plan::same_repeated_reductions(n);
  using index_array = std::array<index_t, S::rank + 1>; // (outside the lambda: GCC 12 crashes on it inside)
  parallel_for(rows * width, parallel_grain, lanes<L>, [&](index_t begin, index_t end) {
    index_array i{};
    index_t o = begin / width, j = begin % width;
    while (begin < end) {
      [[maybe_unused]] const std::conditional_t<plan::repeated_reductions_v<N>, row_memo_scope, no_memo_scope> memo(share);
      detail::unravel<shape_from<prefix_dims<S, Kr>()>>(at(o), i.data());
      const index_t stop = std::min(width, j + (end - begin));
      const auto d = make_row<Kr, L>(dst, i.data());
      const auto r = make_row<Kr, L>(n, i.data());
      if constexpr (vec) store_run<typename Dst::element_type, L, run_stride<Dst, Kr>(), typename N::value_type, decltype(r), false>(d, r, j, stop);
      else store_run_scalar(d, r, j, stop);
      begin += stop - j;
      j = 0;
      ++o;
    }
  });
}

// Rows of at most this many elements are short: their setup costs more than their loads and stores.
inline constexpr index_t short_run = 32;
// For a nest over S whose runs start at axis K: how many axes before K a task walks as nested loops
// (0: the runs are not short). As many as leave at least 16 blocks of rows to share among the threads,
// and a block of at most 8192 elements.
template <class S, int K>
constexpr int short_run_axes() {
  if (K == 0 || detail::product(S::dims, K, S::rank) > short_run) return 0;
  int j = 0;
  while (j < K && detail::product(S::dims, 0, K - j - 1) >= 16 && detail::product(S::dims, K - j - 1, S::rank) <= 8192) ++j;
  return j;
}
// f() for every index of the axes A .. B-1 of idx (the others as they are), in order: nested loops of
// constant trip counts.
template <int A, int B, class S, class F>
TENFOLD_INLINE void for_rows_of(index_t* idx, const F& f) {
  if constexpr (A == B) f();
  else
    for (idx[A] = 0; idx[A] < S::dims[A]; ++idx[A]) for_rows_of<A + 1, B, S>(idx, f);
}

// dst: a writable leaf with N's shape, under configuration C (run_elementwise: the build machine's;
// tools/tune times others).
template <elementwise_config C, class Dst, class N>
void run_elementwise_with(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  constexpr int R = S::rank, K = coalesce_start<N, Dst>();
  constexpr index_t inner = detail::product(S::dims, K, R), outer = detail::product(S::dims, 0, K);
  using L0 = typename lane_of<N>::type;
  constexpr bool vec = lane_type_v<L0> && simd_ok<N, L0>::value;
  using L = std::conditional_t<vec, L0, float>;
  if constexpr (S::size == 0) return;
  else if constexpr (S::has_bounded && S::bounded_axis == R - 1 && R >= 2) {
    // The bounded axis innermost (a reduction's rows, [B, upto<T>]): each row of the other axes runs to
    // the length.
    const index_t length = dst.length();
    run_active_rows<R - 1, L, vec>(dst, n, detail::product(S::dims, 0, R - 1), length, [](index_t o) { return o; });
  } else if constexpr (S::has_bounded) {
    // A bounded axis: the outer rows (its axes and those before it, Kb) whose index on it is below
    // dst.length(): a prefix of them where it is the first axis, blocks of them (detail::active_at)
    // elsewhere.
    constexpr int Kb = std::max(K, S::bounded_axis + 1);
    constexpr index_t inner_b = detail::product(S::dims, Kb, R), outer_b = detail::product(S::dims, 0, Kb);
    const index_t length = dst.length(), rows = detail::active_part<S>(outer_b, length);
    if constexpr (vec && tee_fusable<N, Dst, Kb, L>()) {
      if (tee_same_values(n)) {
        parallel_for(rows, std::max<index_t>(1, parallel_grain / inner_b), 1, [&](index_t o0, index_t o1) {
          if constexpr (S::bounded_axis == 0) run_tee_rows<Kb, L, false, C>(dst, n, o0, o1);
          else
            for (index_t o = o0; o < o1; ++o) {
              const index_t f = detail::active_at<S, Kb>(o, length);
              run_tee_rows<Kb, L, false, C>(dst, n, f, f + 1);
            }
        });
        return;
      }
    }
    run_active_rows<Kb, L, vec>(dst, n, rows, inner_b, [length](index_t o) { return detail::active_at<S, Kb>(o, length); });
  } else if constexpr (constexpr index_t b = split_rows_factor<Dst, N>(); b > 0) {
    // Reshapes of [..., n/b, b] back to [..., n] in the tree (RoPE's adjoint): the nest over [..., n/b, b],
    // where they cancel (split_rows.hpp).
    run_elementwise_with<C>(split_last<b>(dst), split_last<b>(n));
  } else if constexpr (vec && R >= 3 && !has_transposed_leaf<N>() && col_stride_v<Dst> == 1 && detail::is_elementwise_tree<N>() &&
                       transposed_axis<N, lanes<L>>() >= 0) {
    // An operand contiguous along an earlier axis than the rows: that axis becomes the rows' (blocks.hpp).
    constexpr int a = transposed_axis<N, lanes<L>>();
    run_elementwise_with<C>(swap_axes<a, R - 2>(dst), swap_axes<a, R - 2>(n));
  } else {
    // Outputs far larger than the caches are written with non-temporal stores (no read for ownership);
    // row-fused nests from their own threshold.
    constexpr index_t threshold = K > 0 && has_row_reduction<K, N>() ? C.rows_streaming() : C.streaming_bytes;
    constexpr bool stream = S::size * index_t(sizeof(typename Dst::value_type)) >= threshold;
    [[maybe_unused]] const bool share = plan::same_repeated_reductions(n); // (plan/same_reductions.hpp: once per launch)
    using index_array = std::array<index_t, R + 1>; // (outside the lambdas: GCC 12 crashes on it inside)
    // (forced inline: called once per row, a call per row of 16 floats and the row's setup redone from its
    // index were 2/3 of rope's pass; a nest instantiates one of the branches below that call it)
    auto row = [&](const index_t* idx, index_t j, index_t stop) TENFOLD_INLINE_LAMBDA {
      if constexpr (vec && tee_fusable<N, Dst, K, L>()) {
        if (j == 0 && stop == inner && tee_same_values(n)) { // E once per element
          index_t o = 0;
          for (int i = 0; i < K; ++i) o = o * S::dims[i] + idx[i];
          return run_tee_rows<K, L, false, C>(dst, n, o, o + 1);
        }
      }
      // each kind of reduction once per row, when the launch found the kinds' operands equal
      [[maybe_unused]] const std::conditional_t<plan::repeated_reductions_v<N>, row_memo_scope, no_memo_scope> memo(share);
      const auto d = make_row<K, L>(dst, idx);
      const auto s = make_row<K, L>(n, idx);
      if constexpr (vec && K > 0 && has_row_reduction<K, N>()) {
        // The tail sweep prefetches a later row, which its reductions will read first.
        using prefetch_t = row_prefetch_t<K, N, Dst, inner * index_t(sizeof(L)), C.tail, stream>;
        index_array next{};
        index_t o = 0;
        for (int i = 0; i < K; ++i) o = o * S::dims[i] + idx[i];
        detail::unravel<shape_from<prefix_dims<S, K>()>>(row_ahead(o, C.tail.ahead, outer), next.data());
        prefetch_t ahead;
        collect_prefetch<K>(n, dst, next.data(), ahead);
        const prefetching_row<decltype(s), prefetch_t> ps{s, ahead};
        store_run<typename Dst::element_type, L, run_stride<Dst, K>(), typename N::value_type, decltype(ps), stream>(d, ps, j, stop);
      } else if constexpr (vec) store_run<typename Dst::element_type, L, run_stride<Dst, K>(), typename N::value_type, decltype(s), stream>(d, s, j, stop);
      else store_run_scalar(d, s, j, stop);
    };
    index_array idx{};
    using D = typename Dst::value_type;
    if constexpr (vec && R >= 2 && has_transposed_leaf<N>() && std::is_same_v<D, L> &&
                  std::is_same_v<typename N::value_type, D> && col_stride_v<Dst> == 1) {
      run_blocks(dst, n, row);
    } else if constexpr (R >= 2 && K == R - 1 && (strided_run<N, K>() || strided_run<Dst, K>())) {
      // A transposed operand: walk the last two axes in square tiles so that the columns it reads
      // are reused from L1 instead of fetched once per output row.
      constexpr index_t rows = S::dims[R - 2], cols = S::dims[R - 1], tb = transpose_tile;
      constexpr index_t row_tiles = (rows + tb - 1) / tb, col_tiles = (cols + tb - 1) / tb;
      constexpr index_t batches = detail::product(S::dims, 0, R - 2);
      auto tiles = [&](index_t b, index_t e) {
        index_array i{};
        for (index_t t = b; t < e; ++t) {
          const index_t o = t / (row_tiles * col_tiles), rt = t / col_tiles % row_tiles, ct = t % col_tiles;
          detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(o, i.data());
          const index_t j0 = ct * tb, j1 = std::min(cols, j0 + tb);
          for (index_t r = rt * tb; r < std::min(rows, (rt + 1) * tb); ++r) {
            i[R - 2] = r;
            row(i.data(), j0, j1);
          }
        }
        if constexpr (stream) stream_fence();
      };
      constexpr index_t count = batches * row_tiles * col_tiles;
      if constexpr (S::size <= parallel_grain) tiles(0, count);
      else parallel_for(count, std::max<index_t>(1, parallel_grain / (tb * tb)), 1, tiles);
    } else if constexpr (vec && tee_fusable<N, Dst, K, L>()) {
      // Whole rows per thread: each row prefetches a later one (C.tee), and a streamed row's stores
      // overlap the next row's compute. (Where the reduction turns out to read other tensors than the
      // tail, rows go one at a time through `row`, which then takes the ordinary path.)
      const bool tee = tee_same_values(n);
      parallel_for(outer, std::max<index_t>(1, parallel_grain / inner), 1, [&](index_t o0, index_t o1) {
        if (tee) {
          run_tee_rows<K, L, stream, C>(dst, n, o0, o1);
        } else {
          index_array i{};
          for (index_t o = o0; o < o1; ++o) {
            detail::unravel<shape_from<prefix_dims<S, K>()>>(o, i.data());
            row(i.data(), 0, inner);
          }
        }
        if constexpr (stream) stream_fence();
      });
    } else if constexpr (S::size <= parallel_grain) {
      // Small static extents: plain nested loops with constant trip counts, which the compiler unrolls.
      for (index_t o = 0; o < outer; ++o) {
        detail::unravel<shape_from<prefix_dims<S, K>()>>(o, idx.data());
        row(idx.data(), 0, inner);
      }
    } else if constexpr (constexpr int J = short_run_axes<S, K>(); J > 0) {
      // Short runs (rope's halves: rows of 16 floats): a task takes whole blocks of rows, the last J axes
      // before the run walked as nested loops, so that a row's operands are found by stepping from the
      // last row's rather than from its index (that setup was most of such a pass).
      constexpr index_t blocks = detail::product(S::dims, 0, K - J), block = detail::product(S::dims, K - J, R);
      parallel_for(blocks, std::max<index_t>(1, parallel_grain / block), 1, [&](index_t b0, index_t b1) {
        index_array i{};
        for (index_t b = b0; b < b1; ++b) {
          detail::unravel<shape_from<prefix_dims<S, K - J>()>>(b, i.data());
          for_rows_of<K - J, K, S>(i.data(), [&] { row(i.data(), 0, inner); });
        }
        if constexpr (stream) stream_fence();
      });
    } else {
      parallel_for(S::size, parallel_grain, lanes<L>, [&](index_t begin, index_t end) {
        index_array i{};
        index_t o = begin / inner, j = begin % inner;
        while (begin < end) {
          detail::unravel<shape_from<prefix_dims<S, K>()>>(o, i.data());
          const index_t stop = std::min(inner, j + (end - begin));
          row(i.data(), j, stop);
          begin += stop - j;
          j = 0;
          ++o;
        }
        if constexpr (stream) stream_fence();
      });
    }
  }
}

template <class Dst, class N>
void run_elementwise(const Dst& dst, const N& n) {
  run_elementwise_with<elementwise_config_for()>(dst, n);
}

// keepdims at the root is only the destination's shape: the destination leaf without the reduced
// (unit) axes, into which the same reduction without keepdims is evaluated.
template <class Dst, auto Mask>
constexpr int unkept_rank() {
  int r = 0;
  for (int i = 0; i < Dst::rank; ++i) r += !Mask[i];
  return r;
}
template <class Dst, auto Mask>
constexpr detail::dims_t<unkept_rank<Dst, Mask>()> unkept_dims() {
  detail::dims_t<unkept_rank<Dst, Mask>()> d{};
  for (int i = 0, k = 0; i < Dst::rank; ++i)
    if (!Mask[i]) d[k++] = Dst::shape_type::extents[i];
  return d;
}
template <class Dst, auto Mask>
constexpr std::array<index_t, unkept_rank<Dst, Mask>()> unkept_strides() {
  std::array<index_t, unkept_rank<Dst, Mask>()> s{};
  for (int i = 0, k = 0; i < Dst::rank; ++i)
    if (!Mask[i]) s[k++] = Dst::strides[i];
  return s;
}
template <class N>
constexpr bool keeps_dims() {
  if constexpr (detail::is_reduce_node_v<N>) return N::keep;
  else return false;
}
template <class N, class Dst>
auto without_keepdims(const Dst& dst) {
  return detail::leaf<typename Dst::element_type, shape_from<unkept_dims<Dst, N::mask>()>, detail::canon(unkept_strides<Dst, N::mask>()),
                      Dst::offset, typename Dst::holder_type>{{}, dst.holder};
}

template <class Dst, class N>
void run(const Dst& dst, const N& n);

// A concat at the root (a stack too): one nest per operand, into its part of dst (a leaf with dst's
// strides, offset along the axis). Through the node's index map every element was found by comparing
// its index with the parts' bounds: a stack of three [12, 4, 64, 32] tensors took 0.7 ms.
template <class Dst, class N>
void run_concat(const Dst& dst, const N& n) {
  constexpr int A = N::axis;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (run(detail::leaf<typename Dst::element_type, typename std::remove_cvref_t<decltype(detail::get<I>(n.args))>::shape_type,
                      detail::canon(Dst::strides), Dst::offset + N::bounds[I] * Dst::strides[A], typename Dst::holder_type>{{}, dst.holder},
         detail::get<I>(n.args)),
     ...);
  }(std::make_index_sequence<N::bounds.size() - 1>{});
}

// The kernel for root N (what `run` does, untraced).
template <class Dst, class N>
void run_root(const Dst& dst, const N& n) {
  if constexpr (plan::gemm_root_v<N>) {
    if constexpr (detail::is_conv_node_v<std::remove_cvref_t<decltype(find_matmul(n))>>) run_conv(dst, n);
    else run_gemm(dst, n);
  }
  // (Roots with kernels of their own before the loop-nest analyses, which know only nest nodes.)
  else if constexpr (detail::is_scan_node_v<N>) run_scan(dst, n);
  else if constexpr (detail::is_attention_node_v<N>) run_attention(dst, n);
  else if constexpr (detail::is_attention_grad_node_v<N>) run_attention_grad(dst, n);
  else if constexpr (detail::is_scatter_add_node_v<N>) run_scatter_add(dst, n);
  else if constexpr (detail::is_concat_node_v<N> && !N::shape_type::has_bounded && detail::is_leaf_v<Dst>) run_concat(dst, n);
  else if constexpr (keeps_dims<N>()) {
    // (so that a max pool's tie count, a keepdims sum over each window, takes the window kernel)
    run_root(without_keepdims<N>(dst), detail::reduce_node<typename N::op_type, typename N::child_type, N::mask, false>{{}, n.arg});
  } else if constexpr (window_rooted<N>() && !N::shape_type::has_bounded) run_window_rows(dst, n); // pooling (and its elementwise consumers)
  else if constexpr (detail::is_reduce_node_v<N>) run_reduce(dst, n);
  else run_elementwise(dst, n);
}

template <class Dst, class N>
void run(const Dst& dst, const N& n) {
#if defined(TENFOLD_TRACE)
  const trace::scope traced(N::str(), [] {
    std::string s = "[";
    for (int i = 0; i < N::rank; ++i) {
      if (i) s += ',';
      s += std::to_string(N::shape_type::dims[i]);
    }
    return s + "]";
  }());
#endif
  run_root(dst, n);
}
} // namespace cpu

namespace detail {
template <class X>
auto as_destination(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_tensor_v<D>) {
    static_assert(std::is_lvalue_reference_v<X>, "tenfold::eval: the destination must be an lvalue tensor");
    return as_node(x);
  } else {
    static_assert(is_leaf_v<D> && !std::is_const_v<typename D::element_type>,
                  "tenfold::eval: the destination must be a Tensor or a writable view of one");
    return D(x);
  }
}
} // namespace detail

namespace detail {
template <std::size_t Bytes>
struct arena_delete {
  void operator()(std::byte* p) const { free_buffer(p, Bytes, plan::arena_alignment); }
};

template <class Dst, class Src, class Buffers>
void eval_with(Dst&& dst, Src&& src, Buffers& buffers) {
  const auto out = as_destination(std::forward<Dst>(dst));
  using O = std::remove_const_t<decltype(out)>;
  using S = typename O::shape_type;
  auto root = expand_to<S>(as_node(std::forward<Src>(src)));
  // Every assignment comes here (eval, Tensor's and TensorMap's operator=, a program's result and its
  // state updates): one place refuses a narrowing one.
  static_assert(check_assignment<typename O::value_type, typename decltype(root)::value_type>::ok);
  if constexpr (any_node<is_take, decltype(root)>()) check_take_indices(root); // before anything runs
  if constexpr (S::has_bounded || any_node<touches_bounded, decltype(root)>()) {
    static_assert(check_bounded_support<decltype(root)>::ok);
    // The destination takes the operands' length (or keeps its own, where none has one: a fill).
    index_t length = -1;
    find_length(root, length);
    if constexpr (S::has_bounded && borrows_elements_v<std::remove_cvref_t<Dst>>) {
      // (a TensorMap covers the caller's memory up to its length, no further: the operands must agree)
      if (length >= 0 && length != out.length())
        throw error(detail::message("tenfold::eval: a TensorMap", std::remove_cvref_t<Dst>::shape_string(),
                                    " of length ", out.length(), " assigned operands of length ", length));
      length = out.length();
    } else if constexpr (S::has_bounded) {
      if (length >= 0) *out.holder.len = length;
      else length = out.length();
    }
    buffers.length = length; // (intermediate buffers of bounded shapes hold as many rows)
  }
  auto a = plan::peel_reshape(out, std::move(root)); // (reshape(e) into a row-major destination: e into it)
  const auto prepared = plan::prepare_root(std::move(a.root), buffers);
  if (plan::aliases(a.dst, prepared)) {
    // Rare: the destination is read through another index map (x = transpose(x)). Evaluate aside.
    Tensor<typename O::value_type, typename decltype(a.dst)::shape_type> tmp;
    if constexpr (S::has_bounded) tmp.set_length(out.length());
    cpu::run(as_node(tmp), prepared);
    cpu::run(a.dst, as_node(std::as_const(tmp)));
    return;
  }
  cpu::run(a.dst, prepared);
}
} // namespace detail

// Evaluates src into dst. Buffers that must materialise are laid out by the arena planner in one
// block, allocated here (once, and only if the expression needs any).
template <class Dst, class Src>
void eval(Dst&& dst, Src&& src) {
  using O = std::remove_const_t<decltype(detail::as_destination(dst))>;
  using N = decltype(detail::expand_to<typename O::shape_type>(detail::as_node(std::forward<Src>(src))));
  using P = arena_plan<N, O>;
  std::unique_ptr<std::byte[], detail::arena_delete<P::bytes>> block;
  if constexpr (P::bytes > 0) block.reset(static_cast<std::byte*>(detail::allocate_buffer(P::bytes, plan::arena_alignment)));
  cpu::arena_buffers slots{block.get(), P::offsets.data(), P::buffers};
  detail::eval_with(std::forward<Dst>(dst), std::forward<Src>(src), slots);
}

// The arena bytes eval(dst, src, arena) needs for this destination and expression: a compile-time
// constant (arena_plan of the expression as the destination sees it).
template <class Dst, class Src>
inline constexpr index_t eval_arena_bytes = [] {
  using O = std::remove_const_t<decltype(detail::as_destination(std::declval<Dst&>()))>;
  return arena_plan<decltype(detail::expand_to<typename O::shape_type>(detail::as_node(std::declval<Src>()))), O>::bytes;
}();

// Evaluates src into dst with every materialised buffer placed in `arena` at its planned offset
// (arena_plan<decltype(src)>): nothing is allocated. The arena must hold arena_plan<...>::bytes and be
// 64-byte aligned; otherwise tenfold::error says what is wrong and nothing is evaluated.
template <class Dst, class Src>
void eval(Dst&& dst, Src&& src, std::span<std::byte> arena) {
  using O = std::remove_const_t<decltype(detail::as_destination(dst))>;
  using N = decltype(detail::expand_to<typename O::shape_type>(detail::as_node(std::forward<Src>(src))));
  using P = arena_plan<N, O>;
  if (index_t(arena.size()) < P::bytes)
    throw error(detail::message("tenfold::eval: the arena has ", arena.size(), " bytes; this expression needs ", P::bytes));
  if (reinterpret_cast<std::uintptr_t>(arena.data()) % plan::arena_alignment != 0)
    throw error("tenfold::eval: the arena must be 64-byte aligned");
  cpu::arena_buffers slots{arena.data(), P::offsets.data(), P::buffers};
  detail::eval_with(std::forward<Dst>(dst), std::forward<Src>(src), slots);
}
} // namespace tenfold
