#pragma once
// Row access for the CPU evaluator. The output is walked as [outer..., inner] where `inner` is the
// longest suffix of axes over which every leaf is either contiguous or broadcast (stride 0); so an
// elementwise tree over same-shaped tensors is one flat loop, and a broadcast bias is a splat. Each node
// gives a row object with `scalar(j)` and `batch(j)` (xsimd::batch of the tree's lane type L).
#include "tenfold/core/xsimd.hpp"

#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/ops/cast.hpp"
#include "tenfold/ops/descriptor.hpp"
#include "tenfold/cpu/row_memo.hpp"
#include "tenfold/cpu/transpose.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/plan/nest_node.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cpu {
using detail::leaf;
using detail::map_node;
using detail::scalar_node;

template <class L>
using batch = xsimd::batch<L>;
template <class L>
inline constexpr index_t lanes = index_t(batch<L>::size);

// ---- reductions broadcast back: computed once per row ----------------------------------------------
// `x - max(x, axis<1>, keepdims)`: the reduction, broadcast along the axes it reduced, is constant along
// the run, so a row computes it once (vectorised, pairwise: cpu/reduce.hpp) and reads it as a scalar.
template <class N>
typename N::acc_type reduce_one(const N& n, const index_t* out, bool parallel_inside, index_t length = -1);

// Pooling's rows (cpu/window_rows.hpp, included at the end): a strided view of a pad, and a small
// reduction over trailing window axes with the outputs along the run as SIMD lanes.
template <class N>
constexpr bool padded_view();
template <class N, class L>
constexpr bool window_row_ok();
template <class L, class N>
auto make_padded_row(const N& n, const index_t* idx);
template <class L, class N>
auto make_bare_pad_row(const N& n, const index_t* idx);
template <class N>
constexpr bool padded_view_rows();
template <class N>
constexpr bool bare_pad_rows();
template <class L, class N>
auto make_window_row(const N& n, const index_t* idx);
// A reshape of a strided tensor, read in runs of its innermost axis (cpu/reshaped_rows.hpp).
template <class N>
consteval bool reshaped_leaf();
template <int K, class L, class N>
auto make_reshaped_leaf_row(const N& n, const index_t* idx);

// ---- which suffix of axes can be walked as one flat run --------------------------------------------
// kind of a leaf's access over axes [k, R): 0 = broadcast (all strides 0), 1 = contiguous row-major.
template <int R>
constexpr bool suffix_flat(const std::array<index_t, R>& st, const std::array<index_t, R>& dims, int k) {
  bool zero = true, rowmajor = true;
  index_t expect = 1;
  for (int i = R - 1; i >= k; --i) {
    if (dims[i] == 1) continue; // stride of an extent-1 axis never matters
    zero = zero && st[i] == 0;
    rowmajor = rowmajor && st[i] == expect;
    expect *= dims[i];
  }
  return zero || rowmajor;
}

// Periodic over axes [k, R): a contiguous last axis of E values repeated along the other axes (their
// strides 0): a per-channel operand broadcast over an image's positions (batch norm's statistics in
// NHWC). E * element size a multiple of 64 bytes, so that a vector at a multiple of its width in the
// run stays inside one period on every ISA: the run can span all those axes, element j reading j % E.
template <int R>
constexpr bool suffix_periodic(const std::array<index_t, R>& st, const std::array<index_t, R>& dims, int k, index_t bytes) {
  if constexpr (R == 0) return false;
  else {
    if (k >= R - 1 || st[R - 1] != 1 || dims[R - 1] * bytes % 64 != 0) return false;
    for (int i = k; i < R - 1; ++i)
      if (dims[i] != 1 && st[i] != 0) return false;
    return true;
  }
}
template <class N, int K>
constexpr bool periodic_leaf() {
  using S = typename N::shape_type;
  return !suffix_flat<N::rank>(N::strides, S::dims, K) &&
         suffix_periodic<N::rank>(N::strides, S::dims, K, index_t(sizeof(typename N::element_type)));
}

// take along an axis before the source's last, of a tensor (an embedding's lookup): a run along the
// last axis is part of one row of the source, found from the run's index once, then read as a leaf row
// (element by element through `at`, the index was looked up and the offset recomputed for every element:
// the decoder's [384, 128] lookup took 99 us).
template <class N>
constexpr bool take_rows() {
  if constexpr (!detail::is_take_node_v<N>) return false;
  else {
    using Src = std::remove_cvref_t<decltype(detail::get<0>(N::args))>;
    return !N::along && detail::is_leaf_v<Src> && N::axis < Src::rank - 1;
  }
}

template <class N>
constexpr bool flat_from(int k) {
  using enum plan::nest_node;
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == leaf)
    return suffix_flat<N::rank>(N::strides, N::shape_type::dims, k) ||
           suffix_periodic<N::rank>(N::strides, N::shape_type::dims, k, index_t(sizeof(typename N::element_type)));
  else if constexpr (kind == map)
    return []<class... C>(detail::tuple<C...>*, int kk) { return (flat_from<C>(kk) && ...); }(
        static_cast<decltype(N::args)*>(nullptr), k);
  else if constexpr (kind == reduce_view) return plan::constant_from<N>(k);
  else if constexpr (kind == reduction) return k >= N::rank - 1 || !window_row_ok<N, typename N::input_t>(); // pooling: one row at a time
  else if constexpr (kind == block) return k >= N::rank - 1; // a GEMM block's rows are its own
  else if constexpr (kind == pad) return k >= N::rank - 1 || !bare_pad_rows<N>(); // a padded row at a time where it can
  else if constexpr (kind == take) return k >= N::rank - 1 || !take_rows<N>();      // a source row at a time where it can
  else return true; // scalar, generator, view, pad, concat, take, by_index: the same everywhere, or read by index
}

// First axis of the flat run: the smallest k whose suffix is flat for the tree and the destination.
template <class N, class Dst>
constexpr int coalesce_start() {
  constexpr int r = N::rank;
  if constexpr (r == 0) return 0;
  else {
    int k = r - 1;
    // (the destination only where it is contiguous or broadcast: it is written through leaf rows)
    while (k > 0 && flat_from<N>(k - 1) && suffix_flat<Dst::rank>(Dst::strides, Dst::shape_type::dims, k - 1)) --k;
    return k;
  }
}

// Stride along the flat run for a leaf: its last axis's stride, or 1/0 once the run spans several axes.
template <class N, int K>
constexpr index_t run_stride() {
  constexpr int r = N::rank;
  if constexpr (r == 0) return 0;
  else if constexpr (K == r - 1) return N::shape_type::dims[r - 1] == 1 ? 0 : N::strides[r - 1];
  else {
    for (int i = r - 1; i >= K; --i)
      if (N::shape_type::dims[i] != 1 && N::strides[i] != 0) return 1;
    return 0;
  }
}

// ---- the lane type: every non-bool node of a vectorised tree computes in L ----------------------------
template <class N>
struct lane_of {
  using type = std::conditional_t<std::is_same_v<typename N::value_type, bool>, void, compute_t<typename N::value_type>>;
};
template <class Op, class... C>
struct lane_of<map_node<Op, C...>> {
  using V = typename map_node<Op, C...>::value_type;
  using type = std::conditional_t<
      !std::is_same_v<V, bool>, compute_t<V>,
      std::conditional_t<Op::op_category == ops::category::logical,
                         typename lane_of<std::tuple_element_t<0, std::tuple<C...>>>::type,
                         typename Op::template operating_type<typename C::value_type...>>>;
};

template <class L>
inline constexpr bool lane_type_v = std::is_same_v<L, float> || std::is_same_v<L, double> ||
                                    std::is_same_v<L, std::int32_t> || std::is_same_v<L, std::int64_t>;

template <class N, class L>
using node_batch = std::conditional_t<std::is_same_v<typename N::value_type, bool>, xsimd::batch_bool<L>, batch<L>>;

template <class N, class L>
struct simd_ok {
  static constexpr bool value =
      !std::is_same_v<typename N::value_type, bool> && std::is_same_v<compute_t<typename N::value_type>, L>;
};
template <class T, class S, class L>
struct simd_ok<scalar_node<T, S>, L> {
  static constexpr bool value = !std::is_same_v<T, bool>;
};
// An integer tensor cast to the lanes' floating type: its row loads it converted (leaf_row's load, the
// static_cast that cast's scalar rule is), so a compare of class ids in float lanes (nll_loss's one-hot
// mask) vectorises with the float tree around it.
template <class Op, class C, class L>
inline constexpr bool converted_leaf_v = false;
template <class To, class C, class L>
inline constexpr bool converted_leaf_v<ops::cast<To>, C, L> =
    detail::is_leaf_v<C> && std::is_integral_v<typename C::value_type> && !std::is_same_v<typename C::value_type, bool> &&
    std::is_floating_point_v<L> && std::is_same_v<To, L>;

template <class Op, class... C, class L>
struct simd_ok<map_node<Op, C...>, L> {
  using V = typename map_node<Op, C...>::value_type;
  static constexpr bool types_ok = [] {
    if constexpr (Op::op_category == ops::category::logical) return true;
    else if constexpr (std::is_same_v<V, bool>)
      return std::is_same_v<typename Op::template operating_type<typename C::value_type...>, L>;
    else return std::is_same_v<compute_t<V>, L>;
  }();
  static constexpr bool value = [] {
    // Not a lane type (void: a tree of bool tensors only): it runs element by element, and batches of
    // it must not even be named (xsimd::batch_bool<void> is a hard error, not a failed requirement).
    // Nor is Op::simd named where an operand is not vectorised: its deduced return type would instantiate
    // its body for batches it does not take (isnan of a bool tensor's batch_bool).
    if constexpr (!lane_type_v<L> || !((simd_ok<C, L>::value || converted_leaf_v<Op, C, L>) && ...) || !types_ok) return false;
    else return requires(const node_batch<C, L>&... b) { Op::simd(b...); };
  }();
};

// ---- rows ------------------------------------------------------------------------------------------
template <class T, class L, index_t Stride>
struct leaf_row {
  using arch = typename batch<L>::arch_type;
  using gather_index = std::conditional_t<sizeof(L) == 4, std::int32_t, std::int64_t>;
  // Only AVX2 and AVX-512 have a gather kernel; other targets fill the lanes one by one.
  static constexpr bool has_gather_kernel = requires(const L* q, xsimd::batch<gather_index> i) {
    xsimd::kernel::gather(q, i, arch{});
  };
  template <class I>
  static xsimd::batch<I> gather_offsets() {
    alignas(default_alignment) static constexpr auto offsets = [] {
      std::array<I, lanes<L>> o{};
      for (index_t k = 0; k < lanes<L>; ++k) o[k] = I(k * Stride);
      return o;
    }();
    return xsimd::batch<I>::load_aligned(offsets.data());
  }
  T* p;
  TENFOLD_INLINE compute_t<std::remove_const_t<T>> scalar(index_t j) const { return static_cast<compute_t<std::remove_const_t<T>>>(p[j * Stride]); }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    using V = std::remove_const_t<T>;
    if constexpr (Stride == 0) return batch<L>(static_cast<L>(p[0]));
    else if constexpr (Stride == 1 && std::is_same_v<V, L>) return batch<L>::load_unaligned(p + j);
    else if constexpr (std::is_same_v<V, L> && has_permuting_load<L, Stride>) {
      // A subsampled (step 2) or reversed operand: contiguous loads and one permute; nothing outside
      // the elements read is touched (masked load).
      return permuting_load<L, Stride>(p + j * Stride);
    } else if constexpr (std::is_same_v<V, L> && std::is_floating_point_v<L> &&
                         lanes<L> * (Stride < 0 ? -Stride : Stride) < (index_t(1) << 30) && has_gather_kernel) {
      // A hardware gather: writing lanes to a stack buffer and reloading it would stall on store forwarding.
      // (Called through xsimd's kernel: batch::gather in xsimd 8.1 names template arguments the
      // AVX-512/AVX2 overloads do not take, and silently falls back to one lane at a time.)
      return tenfold::simd::gather(static_cast<const L*>(p + j * Stride), gather_offsets<gather_index>());
    } else {
      alignas(default_alignment) L tmp[lanes<L>];
      for (index_t k = 0; k < lanes<L>; ++k) tmp[k] = static_cast<L>(p[(j + k) * Stride]);
      return batch<L>::load_aligned(tmp);
    }
  }
};

// A periodic leaf's row over several axes (see suffix_periodic): element j is p[j % E].
template <class T, class L, index_t E>
struct periodic_leaf_row {
  T* p;
  TENFOLD_INLINE compute_t<std::remove_const_t<T>> scalar(index_t j) const { return static_cast<compute_t<std::remove_const_t<T>>>(p[j % E]); }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    if constexpr (std::is_same_v<std::remove_const_t<T>, L>) return batch<L>::load_unaligned(p + j % E);
    else {
      alignas(default_alignment) L tmp[lanes<L>];
      for (index_t k = 0; k < lanes<L>; ++k) tmp[k] = static_cast<L>(p[(j + k) % E]);
      return batch<L>::load_aligned(tmp);
    }
  }
};

template <class T, class L>
struct scalar_row {
  compute_t<T> v;
  TENFOLD_INLINE compute_t<T> scalar(index_t) const { return v; }
  TENFOLD_INLINE batch<L> load(index_t) const { return batch<L>(static_cast<L>(v)); }
};

template <class Op, class V, class L, class... R>
struct map_row {
  detail::tuple<R...> rows;
  TENFOLD_INLINE compute_t<V> scalar(index_t j) const {
    return detail::unpack([j](const auto&... r) { return Op::template apply<V>(r.scalar(j)...); }, rows);
  }
  TENFOLD_INLINE auto load(index_t j) const {
    // Forced too: GCC otherwise keeps a long op (exp) out of line in an unrolled reduction loop, a
    // call per vector with its constants reloaded each time (20% of softmax's time at AVX2).
    return detail::unpack([j](const auto&... r) TENFOLD_INLINE_LAMBDA { return Op::simd(r.load(j)...); }, rows);
  }
};

// A reduction read directly: each element of the run is one vectorised reduction (cpu/reduce.hpp).
template <class N, int K, class L>
struct reduce_row {
  const N* node;
  std::array<index_t, N::rank + 1> idx;
  TENFOLD_INLINE compute_t<typename N::value_type> scalar(index_t j) const {
    std::array<index_t, N::rank + 1> i = idx;
    for (int a = N::rank - 1; a >= K; --a) {
      i[a] = j % N::shape_type::dims[a];
      j /= N::shape_type::dims[a];
    }
    using Rd = N;
    return static_cast<compute_t<typename N::value_type>>(Rd::op_type::finalize(reduce_one(*node, i.data(), false), Rd::count));
  }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    alignas(default_alignment) L tmp[lanes<L>];
    for (index_t k = 0; k < lanes<L>; ++k) tmp[k] = static_cast<L>(scalar(j + k));
    return batch<L>::load_aligned(tmp);
  }
};

// Any other node: element by element through its own `at`, unravelling the run index.
template <class N, int K, class L>
struct generic_row {
  const N* node;
  std::array<index_t, N::rank> idx;
  TENFOLD_INLINE compute_t<typename N::value_type> scalar(index_t j) const {
    std::array<index_t, N::rank> i = idx;
    for (int a = N::rank - 1; a >= K; --a) {
      i[a] = j % N::shape_type::dims[a];
      j /= N::shape_type::dims[a];
    }
    return node->at(i.data());
  }
  TENFOLD_INLINE batch<L> load(index_t j) const {
    alignas(default_alignment) L tmp[lanes<L>];
    for (index_t k = 0; k < lanes<L>; ++k) tmp[k] = static_cast<L>(scalar(j + k));
    return batch<L>::load_aligned(tmp);
  }
};

template <class T, class S>
struct gemm_block;
template <class T, class L>
struct gemm_block_row;
// (A finished GEMM block read by an epilogue: gemm_block, and conv's conv_block in cpu/conv.hpp.)
template <class N>
inline constexpr bool is_gemm_block_v = false;
template <class T, class S>
inline constexpr bool is_gemm_block_v<gemm_block<T, S>> = true;

// Is N a view the walk could not fold (over a generator: rope's sign, reshape<2, 1>(arange(-1, 2))
// broadcast) whose affine map reads no output axis in [K, rank)? Then it is one value per run, read once
// through its own `at` where it was read per element.
template <class N, int K>
constexpr bool view_constant_along_run() {
  if constexpr (plan::nest_kind_v<N> != plan::nest_node::view) return false;
  else if constexpr (!detail::is_affine_map_v<typename N::map_type>) return false;
  else {
    for (int j = 0; j < int(N::map_type::src.size()); ++j) {
      const int a = N::map_type::src[j];
      if (a >= K && N::shape_type::dims[a] != 1) return false;
    }
    return true;
  }
}

// Is N the same for every element of a run over axes [K, rank)? (Scalars, operands broadcast along
// the run, row-fused reductions, and elementwise functions of those.)
template <class N, int K>
constexpr bool row_constant() {
  using enum plan::nest_node;
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == scalar) return true;
  else if constexpr (kind == leaf) {
    for (int a = K; a < N::rank; ++a)
      if (N::strides[a] != 0 && N::shape_type::dims[a] != 1) return false;
    return true;
  } else if constexpr (kind == reduce_view) return plan::constant_from<N>(K);
  else if constexpr (kind == view) return view_constant_along_run<N, K>();
  else if constexpr (kind == map)
    return []<class... C>(detail::tuple<C...>*) { return (row_constant<C, K>() && ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // generator, reduction, view, pad, concat, take, block, by_index: taken to vary along the run
}

template <int K, class L, class N>
TENFOLD_INLINE auto make_row(const N& n, const index_t* idx) {
  [[maybe_unused]] constexpr plan::nest_node kind = plan::nest_kind_v<N>; // a node kind the nests do not know stops here
  if constexpr (is_gemm_block_v<N>) {
    static_assert(K == N::rank - 1);
    return n.template row<L>(idx);
  } else if constexpr (detail::is_leaf_v<N>) {
    index_t off = N::offset;
    for (int i = 0; i < K; ++i) off += idx[i] * N::strides[i];
    if constexpr (K < N::rank - 1 && periodic_leaf<N, K>())
      return periodic_leaf_row<typename N::element_type, L, N::shape_type::dims[N::rank - 1]>{n.data() + off};
    else return leaf_row<typename N::element_type, L, run_stride<N, K>()>{n.data() + off};
  } else if constexpr (detail::is_scalar_node_v<N>) {
    return scalar_row<typename N::value_type, L>{n.value};
  } else if constexpr (plan::constant_from<N>(K)) {
    using Rd = typename N::child_type;
    std::array<index_t, N::rank + 1> out{};
    std::array<index_t, Rd::rank + 1> in{};
    for (int i = 0; i < K; ++i) out[i] = idx[i];
    N::map_type::map(out.data(), in.data());
    const auto acc = memo_reduce<Rd, Rd::rank>(n.arg, in.data(), [&] { return reduce_one(n.arg, in.data(), false); });
    return scalar_row<typename N::value_type, L>{
        static_cast<compute_t<typename N::value_type>>(Rd::op_type::finalize(acc, Rd::count))};
  } else if constexpr (view_constant_along_run<N, K>()) {
    std::array<index_t, N::rank + 1> at{}; // (the run's axes at 0: the map does not read them)
    for (int i = 0; i < K; ++i) at[i] = idx[i];
    return scalar_row<typename N::value_type, L>{n.at(at.data())};
  } else if constexpr (K == N::rank - 1 && window_row_ok<N, L>()) {
    return make_window_row<L>(n, idx);
  } else if constexpr (plan::direct_fused_v<N>) {
    reduce_row<N, K, L> r{&n, {}};
    for (int i = 0; i < K; ++i) r.idx[i] = idx[i];
    return r;
  } else if constexpr (detail::is_map_node_v<N> && row_constant<N, K>()) {
    // Computed once per row, not once per element (a reciprocal of a row sum costs one division).
    const auto whole = detail::unpack(
        [idx](const auto&... c) {
          return map_row<typename N::op_type, typename N::value_type, L, decltype(make_row<K, L>(c, idx))...>{{make_row<K, L>(c, idx)...}};
        },
        n.args);
    return scalar_row<typename N::value_type, L>{whole.scalar(0)};
  } else if constexpr (detail::is_map_node_v<N>) {
    return detail::unpack(
        [idx](const auto&... c) {
          return map_row<typename N::op_type, typename N::value_type, L, decltype(make_row<K, L>(c, idx))...>{
              {make_row<K, L>(c, idx)...}};
        },
        n.args);
  } else if constexpr (K == N::rank - 1 && padded_view_rows<N>()) {
    return make_padded_row<L>(n, idx);
  } else if constexpr (K == N::rank - 1 && bare_pad_rows<N>()) {
    return make_bare_pad_row<L>(n, idx);
  } else if constexpr (K == N::rank - 1 && take_rows<N>()) {
    // the source's index: the output's, with the indices' value in place of their axes (checked in range
    // before the nest ran: check_indices)
    using Src = std::remove_cvref_t<decltype(detail::get<0>(n.args))>;
    constexpr int a = N::axis, r = N::index_shape::rank;
    const Src& src = detail::get<0>(n.args);
    index_t off = Src::offset + static_cast<index_t>(detail::get<1>(n.args).at(idx + a)) * Src::strides[a];
    for (int i = 0; i < a; ++i) off += idx[i] * Src::strides[i];
    for (int i = a + 1; i + 1 < Src::rank; ++i) off += idx[i + r - 1] * Src::strides[i];
    return leaf_row<typename Src::element_type, L, run_stride<Src, Src::rank - 1>()>{src.data() + off};
  } else if constexpr (reshaped_leaf<N>()) {
    return make_reshaped_leaf_row<K, L>(n, idx);
  } else {
    generic_row<N, K, L> r{&n, {}};
    for (int i = 0; i < K; ++i) r.idx[i] = idx[i];
    return r;
  }
}
// ---- storing a run ---------------------------------------------------------------------------------
// Stream: bypass the caches with non-temporal stores (for outputs far larger than the caches).
template <class T, class L, index_t Stride, class V, class Row, bool Stream = false>
TENFOLD_INLINE void store_run(const leaf_row<T, L, Stride>& dst, const Row& src, index_t j, index_t stop) {
  using D = std::remove_const_t<T>;
  constexpr index_t w = lanes<L>;
  // Whole batches up to `body`, then fewer than w scalars. (`body` is computed up front: after a
  // `j + w <= stop` loop with a constant stop, GCC 12 put the loop's final j into the scalar tail
  // before it folded the tail's guard, saw a dead tail from `stop` that wraps around 2^64 times, and
  // warned in every user's build at -O2 [-Waggressive-loop-optimizations].)
  [[maybe_unused]] const index_t body = j + (stop - j) / w * w;
  if constexpr (std::is_same_v<compute_t<D>, L> && Stride == 1) {
    for (; j < body; j += w) {
      const auto b = src.load(j);
      if constexpr (std::is_same_v<D, L> && Stream) store_stream(dst.p + j, b);
      else if constexpr (std::is_same_v<D, L>) b.store_unaligned(dst.p + j);
      else {
        alignas(default_alignment) L tmp[w];
        b.store_aligned(tmp);
        for (index_t k = 0; k < w; ++k) dst.p[j + k] = convert<D>(tmp[k]);
      }
    }
  } else if constexpr (std::is_same_v<D, bool> && std::is_same_v<V, bool>) {
    for (; j < body; j += w) {
      if constexpr (Stride == 1) src.load(j).store_unaligned(dst.p + j);
      else {
        bool tmp[w];
        src.load(j).store_unaligned(tmp);
        for (index_t k = 0; k < w; ++k) dst.p[(j + k) * Stride] = tmp[k];
      }
    }
  }
  for (; j < stop; ++j) dst.p[j * Stride] = convert<D>(src.scalar(j));
}

template <class T, class L, index_t Stride, class Row>
TENFOLD_INLINE void store_run_scalar(const leaf_row<T, L, Stride>& dst, const Row& src, index_t j, index_t stop) {
  for (; j < stop; ++j) dst.p[j * Stride] = convert<std::remove_const_t<T>>(src.scalar(j));
}

} // namespace tenfold::cpu

#include "tenfold/cpu/reshaped_rows.hpp"
#include "tenfold/cpu/window_rows.hpp"
