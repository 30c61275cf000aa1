#pragma once
// Row-fused kernels, vector path: the same slots in the same dependency order as cuda/rows.hpp's
// generic kernel, for the trees whose every leaf is read contiguously along the row (innermost stride 1,
// rows starting on a 16-byte boundary) or is constant along it (stride 0), and whose every slot reduces
// the innermost axis alone. That is softmax, log_softmax, layer_norm (gamma and beta broadcast over rows
// are contiguous leaves with a row stride of 0), rms_norm and reductions along the last axis, on
// ordinary tensors; views with another innermost stride take the generic kernel.
//
// Why it is faster than the generic kernel:
//  - each thread owns a compile-time number of 16-byte chunks of the row (chunk c of the thread of rank
//    t starts at element (c * G + t) * V; a warp's accesses coalesce), so a leaf's element is its row
//    start plus a constant: no per-element index arithmetic, one vector load per chunk;
//  - the row of the first leaf the first reduction reads (softmax's and layer_norm's x) is loaded into
//    registers once, up front (every load of the row in flight at once); every later read of the same
//    row of memory, in any pass, is served from those registers, so the row crosses DRAM once however
//    many reductions the tree holds. "The same row" is checked at run time by address, so two tensors
//    of the same type (layer_norm(x + r)) stay correct: r is simply read from memory.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "tenfold/cuda/row_slots.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cuda::detail {

// ---- which trees qualify (compile time) ------------------------------------------------------------

// Stride of a leaf along the row (its innermost axis); 0 also where that axis has extent 1.
template <class N>
constexpr index_t leaf_row_stride() {
  using S = typename N::shape_type;
  if constexpr (S::rank == 0) return 0;
  else return S::dims[S::rank - 1] == 1 ? 0 : N::strides[S::rank - 1];
}

// Does every row of the leaf start V elements apart from an aligned pointer?
template <class N, int V>
constexpr bool rows_start_aligned() {
  // (no early return: after one the loop was unreachable for some leaves, and nvcc warned, #128-D)
  bool aligned = N::offset % V == 0;
  for (int i = 0; i + 1 < N::rank; ++i)
    aligned = aligned && (N::shape_type::dims[i] == 1 || N::strides[i] % V == 0);
  return aligned;
}

template <class Rd>
constexpr bool reduces_last_axis_only() {
  constexpr int r = Rd::input_shape::rank;
  if constexpr (r == 0) return false;
  else return mask_bits<Rd>() == 1u << (r - 1) && !order_sensitive_v<typename Rd::op_type>;
}

// Can N be evaluated chunk by chunk along rows of Cols elements (Varying: the row's axis)?
template <class N, unsigned Varying, index_t Cols, int V>
constexpr bool vector_row_tree() {
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    if constexpr (!reduces_last_axis_only<Rd>()) return false;
    else return Rd::input_shape::dims[Rd::input_shape::rank - 1] == Cols && vector_row_tree<typename Rd::child_type, mask_bits<Rd>(), Cols, V>();
  } else if constexpr (is_map_node_v<N>) {
    return []<class... C>(tenfold::detail::tuple<C...>*) { return (vector_row_tree<C, Varying, Cols, V>() && ...); }(static_cast<decltype(N::args)*>(nullptr));
  } else if constexpr (is_leaf_v<N>) {
    return leaf_row_stride<N>() == 0 || (leaf_row_stride<N>() == 1 && rows_start_aligned<N, V>());
  } else {
    return is_scalar_node_v<N>;
  }
}

// The widest element read or written: it sets V, the elements per 16-byte chunk.
template <class N>
constexpr std::size_t widest_element() {
  if constexpr (is_leaf_v<N>) return sizeof(typename N::value_type);
  else if constexpr (requires { N::args; })
    return []<class... C>(tenfold::detail::tuple<C...>*) {
      std::size_t w = 1;
      ((w = w > widest_element<C>() ? w : widest_element<C>()), ...);
      return w;
    }(static_cast<decltype(N::args)*>(nullptr));
  else if constexpr (requires { N::arg; }) return widest_element<std::remove_cvref_t<decltype(N::arg)>>();
  else return 1;
}
template <class Dst, class N>
constexpr int row_vector_width() {
  constexpr std::size_t w = widest_element<N>(), d = sizeof(typename Dst::value_type);
  return vector_width(w > d ? w : d);
}

template <class Dst, class N>
constexpr bool vector_rows_eligible() {
  constexpr index_t cols = row_length<N>();
  constexpr int V = row_vector_width<Dst, N>();
  if constexpr (cols % V != 0 || vector_row_launch(row_count<N>(), cols, V).grid == 0) {
    return false;
  } else if constexpr (tenfold::detail::is_reduce_node_v<N>) {
    return reduces_last_axis_only<N>() && vector_row_tree<typename N::child_type, mask_bits<N>(), cols, V>();
  } else if constexpr (!is_leaf_v<Dst>) {
    return false;
  } else {
    return leaf_row_stride<Dst>() == 1 && rows_start_aligned<Dst, V>() && vector_row_tree<N, 1u << (N::rank - 1), cols, V>();
  }
}

// Are the contiguous leaves' pointers aligned for V-element chunks? (Checked on the host.)
template <int V, class N>
bool row_leaves_aligned(const N& n) {
  if constexpr (is_leaf_v<N>) {
    if constexpr (leaf_row_stride<N>() != 1) return true;
    else return reinterpret_cast<std::uintptr_t>(n.data()) % (V * sizeof(typename N::value_type)) == 0;
  } else if constexpr (requires { n.args; }) {
    return tenfold::detail::unpack([](const auto&... c) { return (row_leaves_aligned<V>(c) && ...); }, n.args);
  } else if constexpr (requires { n.arg; }) {
    return row_leaves_aligned<V>(n.arg);
  } else {
    return true;
  }
}

// ---- the row in chunks ---------------------------------------------------------------------------

// G threads share a row of Cols elements; each holds Chunks chunks of V elements.
template <unsigned G, int V, int Chunks, index_t Cols>
struct row_tiling {
  static constexpr unsigned group = G;
  static constexpr int vector = V, chunks = Chunks;
  static constexpr index_t cols = Cols;
  static constexpr int full_chunks = int(Cols / V / G); // in range for every rank: no test compiled
  __device__ static index_t start(int c, unsigned rank) { return (index_t(c) * G + rank) * V; }
  __device__ static bool in_range(int c, index_t j) { return c < full_chunks || j < Cols; }
};

// f(integral_constant<int, c>) for c in [0, N): a chunk index is always a constant, so the register
// arrays below are indexed by constants only (never spilled to local memory).
template <int N, class F, int... C>
__device__ __forceinline__ void each_chunk_(F& f, std::integer_sequence<int, C...>) {
  (f(std::integral_constant<int, C>{}), ...);
}
template <int N, class F>
__device__ __forceinline__ void each_chunk(F&& f) {
  each_chunk_<N>(f, std::make_integer_sequence<int, N>{});
}

template <class T, int V>
__device__ __forceinline__ packed<T, V> load_chunk(const T* p) {
  return *reinterpret_cast<const packed<T, V>*>(p);
}

// The row kept in registers: this thread's chunks of one row of memory, and where that row starts.
struct no_row_cache {};
template <class T, int V, int Chunks>
struct row_cache {
  const T* row;
  packed<T, V> v[Chunks];
};
template <class Cache, class T>
inline constexpr bool caches_v = false;
template <class T, int V, int C>
inline constexpr bool caches_v<row_cache<T, V, C>, T> = true;

// ---- which row is cached: the first contiguous leaf (in tree order) under the first slot holding one.
// It is read by the first reduction and again by every later pass; a leaf read only by the elementwise
// tail (gamma, beta) is read once anyway and is not worth the registers.

template <class N, unsigned Varying, bool InSlot>
constexpr bool finds_row_leaf();
template <class Args, unsigned Varying, bool InSlot>
constexpr int first_child_finding() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    int r = -1;
    ((r < 0 && finds_row_leaf<tenfold::detail::tuple_element_t<I, Args>, Varying, InSlot>() ? (r = int(I)) : 0), ...);
    return r;
  }(std::make_index_sequence<tenfold::detail::tuple_size_v<Args>>{});
}
template <class N, unsigned Varying, bool InSlot>
constexpr bool finds_row_leaf() {
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    return finds_row_leaf<typename Rd::child_type, mask_bits<Rd>(), true>();
  } else if constexpr (is_map_node_v<N>) {
    return first_child_finding<decltype(N::args), Varying, InSlot>() >= 0;
  } else if constexpr (is_leaf_v<N>) {
    return InSlot && leaf_row_stride<N>() == 1;
  } else {
    return false;
  }
}

// Start of that leaf's row (idx: N's row, innermost index 0), or nullptr where there is none.
template <class N, unsigned Varying, bool InSlot>
__device__ __forceinline__ auto cached_row(const N& n, const index_t* idx) {
  if constexpr (!finds_row_leaf<N, Varying, InSlot>()) {
    return nullptr;
  } else if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    using C = typename Rd::child_type;
    index_t in[Rd::rank > 0 ? Rd::rank : 1], base[C::rank > 0 ? C::rank : 1];
    N::map_type::map(idx, in);
    Rd::base_index(in, base);
    return cached_row<C, mask_bits<Rd>(), true>(n.arg.arg, base);
  } else if constexpr (is_map_node_v<N>) {
    using Args = decltype(N::args);
    constexpr int i = first_child_finding<Args, Varying, InSlot>();
    return cached_row<tenfold::detail::tuple_element_t<i, Args>, Varying, InSlot>(tenfold::detail::get<i>(n.args), idx);
  } else {
    return static_cast<const typename N::value_type*>(n.data() + N::offset_of(idx));
  }
}

template <class Tl, unsigned Varying, bool InSlot, class N, class G>
__device__ __forceinline__ auto load_row_cache(const N& n, const index_t* idx, const G& g) {
  const auto row = cached_row<N, Varying, InSlot>(n, idx);
  if constexpr (std::is_null_pointer_v<std::remove_const_t<decltype(row)>>) {
    return no_row_cache{};
  } else {
    using T = std::remove_cvref_t<decltype(*row)>;
    row_cache<T, Tl::vector, Tl::chunks> c;
    c.row = row;
    const unsigned rank = g.rank();
    each_chunk<Tl::chunks>([&](auto ch) {
      constexpr int k = decltype(ch)::value;
      const index_t j = Tl::start(k, rank);
      if (Tl::in_range(k, j)) c.v[k] = load_chunk<T, Tl::vector>(row + j);
    });
    return c;
  }
}

// ---- evaluation ----------------------------------------------------------------------------------

// The V values of N at chunk Ch (elements [j, j + V) of the row through idx).
template <class N, unsigned Varying, int Base, class Tl, int Ch, class Cache>
__device__ __forceinline__ lanes<compute_t<typename N::value_type>, Tl::vector> vector_row_value(const N& n, const index_t* idx, index_t j,
                                                                                                   const slot* slots, const Cache& cache);

template <class N, unsigned Varying, int Base, class Tl, int Ch, class Cache, std::size_t... I>
__device__ __forceinline__ lanes<compute_t<typename N::value_type>, Tl::vector> vector_map_value(const N& n, const index_t* idx, index_t j,
                                                                                                   const slot* slots, const Cache& cache,
                                                                                                   std::index_sequence<I...>) {
  using Args = decltype(N::args);
  using C = compute_t<typename N::value_type>;
  const auto in = tenfold::detail::make_tuple(vector_row_value<tenfold::detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>(), Tl, Ch>(tenfold::detail::get<I>(n.args), idx,
                                                                                                                             j, slots, cache)...);
  lanes<C, Tl::vector> r;
#pragma unroll
  for (int k = 0; k < Tl::vector; ++k) r.v[k] = C(N::op_type::template apply<typename N::value_type>(tenfold::detail::get<I>(in).v[k]...));
  return r;
}

template <class N, unsigned Varying, int Base, class Tl, int Ch, class Cache>
__device__ __forceinline__ lanes<compute_t<typename N::value_type>, Tl::vector> vector_row_value(const N& n, const index_t* idx, index_t j,
                                                                                                   const slot* slots, const Cache& cache) {
  using C = compute_t<typename N::value_type>;
  constexpr int V = Tl::vector;
  lanes<C, V> r;
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    const C s = slots[Base + slot_count<typename Rd::child_type, mask_bits<Rd>()>()].template get<C>();
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = s;
  } else if constexpr (is_map_node_v<N>) {
    r = vector_map_value<N, Varying, Base, Tl, Ch>(n, idx, j, slots, cache, std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
  } else if constexpr (is_scalar_node_v<N>) {
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = n.value;
  } else { // a leaf (vector_row_tree admits nothing else)
    using T = typename N::value_type;
    const T* row = n.data() + N::offset_of(idx);
    if constexpr (leaf_row_stride<N>() == 0) {
      const C x = static_cast<C>(*row);
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = x;
    } else {
      packed<T, V> p;
      if constexpr (caches_v<Cache, T>) p = row == cache.row ? cache.v[Ch] : load_chunk<T, V>(row + j);
      else p = load_chunk<T, V>(row + j);
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = static_cast<C>(p.v[k]);
    }
  }
  return r;
}

// Rd over the row through base, by the group: V accumulators per thread (independent chains), merged,
// then merged across the group. Only order-free entries come here, so any merge order is right.
template <class Rd, int Base, class Tl, class G, class Cache>
__device__ __forceinline__ typename Rd::acc_type vector_group_reduce(const Rd& rd, const index_t* base, const slot* slots, const G& g,
                                                                     const Cache& cache) {
  using Op = typename Rd::op_type;
  using A = typename Rd::acc_type;
  using I = typename Rd::input_t;
  constexpr int V = Tl::vector;
  A acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = Op::template identity<A>();
  const unsigned rank = g.rank();
  each_chunk<Tl::chunks>([&](auto ch) {
    constexpr int c = decltype(ch)::value;
    const index_t j = Tl::start(c, rank);
    if (Tl::in_range(c, j)) {
      const auto x = vector_row_value<typename Rd::child_type, mask_bits<Rd>(), Base, Tl, c>(rd.arg, base, j, slots, cache);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = Op::combine(acc[k], static_cast<I>(x.v[k]), j + k);
    }
  });
#pragma unroll
  for (int k = 1; k < V; ++k) acc[0] = Op::merge(acc[0], acc[k]);
  return g.template allmerge<Op>(acc[0]);
}

template <class N, unsigned Varying, int Base, class Tl, class Sh, class G, class Cache>
__device__ __forceinline__ void vector_compute_slots(const N& n, const index_t* idx, slot* slots, const G& g, const Cache& cache, bool share);
template <class N, unsigned Varying, int Base, class Tl, class Sh, class G, class Cache, std::size_t... I>
__device__ __forceinline__ void vector_compute_map_slots(const N& n, const index_t* idx, slot* slots, const G& g, const Cache& cache,
                                                         bool share, std::index_sequence<I...>) {
  using Args = decltype(N::args);
  (vector_compute_slots<tenfold::detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>(), Tl, Sh>(tenfold::detail::get<I>(n.args), idx, slots, g,
                                                                                                               cache, share),
   ...);
}
// Fills the slots of N's subtree for the row through idx, innermost reductions first (as compute_slots,
// sharing as it does).
template <class N, unsigned Varying, int Base, class Tl, class Sh, class G, class Cache>
__device__ __forceinline__ void vector_compute_slots(const N& n, const index_t* idx, slot* slots, const G& g, const Cache& cache, bool share) {
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    using C = typename Rd::child_type;
    constexpr int s = Base + slot_count<C, mask_bits<Rd>()>();
    if constexpr (shared_slot<Sh, s>() != s) {
      if (share) {
        slots[s] = slots[shared_slot<Sh, s>()];
        return;
      }
    }
    index_t in[Rd::rank > 0 ? Rd::rank : 1], base[C::rank > 0 ? C::rank : 1];
    N::map_type::map(idx, in);
    Rd::base_index(in, base);
    vector_compute_slots<C, mask_bits<Rd>(), Base, Tl, Sh>(n.arg.arg, base, slots, g, cache, share);
    const auto acc = vector_group_reduce<Rd, Base, Tl>(n.arg, base, slots, g, cache);
    slots[s].put(static_cast<compute_t<typename Rd::value_type>>(Rd::op_type::finalize(acc, Rd::count)));
  } else if constexpr (is_map_node_v<N>) {
    vector_compute_map_slots<N, Varying, Base, Tl, Sh>(n, idx, slots, g, cache, share,
                                                       std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
  }
}

template <class Tl, class Dst, class N, class G>
__device__ __forceinline__ void vector_run_row(const Dst& dst, const N& n, index_t row, const G& g, bool share) {
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  constexpr int V = Tl::vector;
  index_t idx[S::rank > 0 ? S::rank : 1];
  const unsigned rank = g.rank();
  if constexpr (tenfold::detail::is_reduce_node_v<N>) {
    using C = typename N::child_type;
    constexpr unsigned varying = mask_bits<N>();
    index_t base[C::rank > 0 ? C::rank : 1];
    tenfold::detail::unravel<S>(row, idx);
    N::base_index(idx, base);
    const auto cache = load_row_cache<Tl, varying, true>(n.arg, base, g);
    slot slots[slot_count<C, varying>() + 1];
    vector_compute_slots<C, varying, 0, Tl, plan::row_slot_sharing<C, varying>>(n.arg, base, slots, g, cache, share);
    const auto acc = vector_group_reduce<N, 0, Tl>(n, base, slots, g, cache);
    if (rank == 0) dst.data()[Dst::offset_of(idx)] = convert<D>(static_cast<compute_t<typename N::value_type>>(N::op_type::finalize(acc, N::count)));
  } else {
    constexpr unsigned varying = 1u << (S::rank - 1);
    tenfold::detail::unravel<S>(row * Tl::cols, idx);
    const auto cache = load_row_cache<Tl, varying, false>(n, idx, g);
    slot slots[slot_count<N, varying>() + 1];
    vector_compute_slots<N, varying, 0, Tl, plan::row_slot_sharing<N, varying>>(n, idx, slots, g, cache, share);
    D* const out = dst.data() + Dst::offset_of(idx);
    each_chunk<Tl::chunks>([&](auto ch) {
      constexpr int c = decltype(ch)::value;
      const index_t j = Tl::start(c, rank);
      if (Tl::in_range(c, j)) {
        const auto x = vector_row_value<N, varying, 0, Tl, c>(n, idx, j, slots, cache);
        packed<D, V> o;
#pragma unroll
        for (int k = 0; k < V; ++k) o.v[k] = convert<D>(x.v[k]);
        *reinterpret_cast<packed<D, V>*>(out + j) = o;
      }
    });
  }
}

// A warp per row (8 rows per block at a time), or a block of Tl::group threads per row.
template <class Tl>
struct vector_row_body {
  static constexpr bool warp_per_row = Tl::group == unsigned(warp_size);
  static constexpr int max_threads = warp_per_row ? int(rows_block) : int(Tl::group);
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n, bool share);
};
template <class Tl>
template <class Dst, class N>
__device__ void vector_row_body<Tl>::run(const Dst& dst, const N& n, bool share) {
  constexpr index_t rows = row_count<N>();
  if constexpr (warp_per_row) {
    const unsigned per_block = blockDim.x / warp_size;
    const index_t first = index_t(blockIdx.x) * per_block + threadIdx.x / warp_size, step = index_t(gridDim.x) * per_block;
    for (index_t r = first; r < rows; r += step) vector_run_row<Tl>(dst, n, r, warp_group{}, share); // whole warps leave together
  } else {
    __shared__ alignas(16) unsigned char scratch[(Tl::group / warp_size + 1) * max_acc_bytes];
    for (index_t r = blockIdx.x; r < rows; r += gridDim.x) vector_run_row<Tl>(dst, n, r, block_group{scratch}, share);
  }
}

// Runs the vector kernel where the tree qualifies and its pointers are aligned; false: the caller runs
// the generic kernel.
template <class Dst, class N>
bool run_vector_rows(const Dst& dst, const N& n, stream_ref s, bool share) {
  if constexpr (!vector_rows_eligible<Dst, N>()) {
    return false;
  } else {
    constexpr int V = row_vector_width<Dst, N>();
    constexpr index_t cols = row_length<N>();
    constexpr launch_shape l = vector_row_launch(row_count<N>(), cols, V);
    if (!row_leaves_aligned<V>(n)) return false;
    if constexpr (!tenfold::detail::is_reduce_node_v<N>) {
      if (!row_leaves_aligned<V>(dst)) return false;
    }
    using Tl = row_tiling<row_group(l), V, row_chunks(l, cols), cols>;
    launch<vector_row_body<Tl>>(l.grid, l.block, s, dst, n, "tenfold::cuda vector row kernel", share);
    return true;
  }
}
} // namespace tenfold::cuda::detail
