#pragma once
// Row-fused kernels: one group of threads (a warp, or a block for long rows) per output row.
//
// A reduction broadcast back along the axes it reduced (plan::row_fused_v: softmax's max and sum,
// layer_norm's two means) is constant along a row, so the group computes it once per row, cooperatively,
// into a "slot" every thread of the group holds in registers; the elementwise tail then reads the slot.
// Slots are numbered in post-order, so a reduction nested in another's operand (softmax's sum over
// exp(x - max)) is computed first, in dependency order. Nothing here knows softmax or layer_norm: the
// kernel follows the types alone. A reduction at the root whose innermost axis is reduced runs here too:
// each output element is one "row".
//
// Rows whose leaves run contiguously along the row take cuda/rows_vector.hpp's vector path instead
// (16-byte accesses, the row kept in registers across passes); this kernel serves every other tree.
#include <cuda_runtime.h>

#include "tenfold/core/children.hpp"
#include "tenfold/cuda/row_slots.hpp"
#include "tenfold/cuda/rows_vector.hpp"

namespace tenfold::cuda::detail {

// Input index of position p of Rd's reduced subspace (row-major over the reduced axes, as
// reduce_node::at walks it); the kept axes come from base.
template <class Rd>
__device__ __forceinline__ void position_index(const index_t* base, index_t p, index_t* in) {
  using In = typename Rd::input_shape;
#pragma unroll
  for (int i = In::rank - 1; i >= 0; --i) {
    if (tenfold::detail::element_of<Rd::mask>(i)) {
      in[i] = p % tenfold::detail::extent<In>(i);
      p /= tenfold::detail::extent<In>(i);
    } else {
      in[i] = base[i];
    }
  }
}

template <class N, unsigned Varying, int Base>
__device__ compute_t<typename N::value_type> row_value(const N& n, const index_t* idx, const slot* slots);
template <class Rd>
__device__ compute_t<typename Rd::value_type> sequential_reduce(const Rd& rd, const index_t* idx);
template <class N, unsigned Varying, int Base, class Sh, class G, std::size_t... I>
__device__ void compute_map_slots(const N& n, const index_t* idx, slot* slots, const G& g, bool share, std::index_sequence<I...>);

// Rd reduced over its whole reduced subspace from `base`, by the group; every thread gets the result.
template <class Rd, int Base, class G>
__device__ typename Rd::acc_type group_reduce(const Rd& rd, const index_t* base, const slot* slots, const G& g) {
  using Op = typename Rd::op_type;
  using A = typename Rd::acc_type;
  using I = typename Rd::input_t;
  using C = typename Rd::child_type;
  constexpr unsigned varying = mask_bits<Rd>();
  constexpr index_t count = Rd::count;
  index_t in[C::rank > 0 ? C::rank : 1];
  A acc = Op::template identity<A>();
  const index_t size = group_size(g);
  if constexpr (order_sensitive_v<Op>) {
    const index_t chunk = ceil_div(count, size), begin = g.rank() * chunk, end = begin + chunk < count ? begin + chunk : count;
    for (index_t p = begin; p < end; ++p) {
      position_index<Rd>(base, p, in);
      acc = Op::combine(acc, static_cast<I>(row_value<C, varying, Base>(rd.arg, in, slots)), p);
    }
  } else {
    for (index_t p = g.rank(); p < count; p += size) {
      position_index<Rd>(base, p, in);
      acc = Op::combine(acc, static_cast<I>(row_value<C, varying, Base>(rd.arg, in, slots)), p);
    }
  }
  return g.template allmerge<Op>(acc);
}

// Fills the slots of N's subtree for the row through idx, innermost reductions first. A slot that
// plan/row_slots.hpp pairs with an earlier one copies its result when the launch found the operands
// alike (`share`).
template <class N, unsigned Varying, int Base, class Sh, class G>
__device__ void compute_slots(const N& n, const index_t* idx, slot* slots, const G& g, bool share) {
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
    compute_slots<C, mask_bits<Rd>(), Base, Sh>(n.arg.arg, base, slots, g, share);
    const auto acc = group_reduce<Rd, Base>(n.arg, base, slots, g);
    slots[s].put(static_cast<compute_t<typename Rd::value_type>>(Rd::op_type::finalize(acc, Rd::count)));
  } else if constexpr (is_map_node_v<N>) {
    compute_map_slots<N, Varying, Base, Sh>(n, idx, slots, g, share, std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
  }
}
template <class N, unsigned Varying, int Base, class Sh, class G, std::size_t... I>
__device__ void compute_map_slots(const N& n, const index_t* idx, slot* slots, const G& g, bool share, std::index_sequence<I...>) {
  using Args = decltype(N::args);
  (compute_slots<tenfold::detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>(), Sh>(tenfold::detail::get<I>(n.args), idx, slots, g, share), ...);
}

template <class N, unsigned Varying, int Base, std::size_t... I>
__device__ __forceinline__ compute_t<typename N::value_type> map_value(const N& n, const index_t* idx, const slot* slots, std::index_sequence<I...>) {
  using Args = decltype(N::args);
  return compute_t<typename N::value_type>(N::op_type::template apply<typename N::value_type>(
      row_value<tenfold::detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>()>(tenfold::detail::get<I>(n.args), idx, slots)...));
}

template <class N, unsigned Varying, int Base>
__device__ compute_t<typename N::value_type> row_value(const N& n, const index_t* idx, const slot* slots) {
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    return slots[Base + slot_count<typename Rd::child_type, mask_bits<Rd>()>()].template get<compute_t<typename N::value_type>>();
  } else if constexpr (is_map_node_v<N>) {
    return map_value<N, Varying, Base>(n, idx, slots, std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
  } else if constexpr (tenfold::detail::is_reduce_node_v<N>) {
    return sequential_reduce(n, idx);
  } else if constexpr (is_view_of_reduction<N>()) {
    index_t in[N::child_type::rank > 0 ? N::child_type::rank : 1]; // a broadcast reduction that varies along the row
    N::map_type::map(idx, in);
    return sequential_reduce(n.arg, in);
  } else {
    [[maybe_unused]] constexpr plan::nest_node kind = plan::nest_kind_v<N>; // leaf, scalar, generator, view, pad, concat: read by index
    return n.at(idx);
  }
}

// A reduction inside the value of one element (cross_entropy's per-row sum of log_softmax, read by the
// batch mean): this thread alone reduces it, its own row-fused operands computed first into local
// slots, so each is reduced once per element instead of once per position (reduce_node::at's cost).
template <class Rd>
__device__ compute_t<typename Rd::value_type> sequential_reduce(const Rd& rd, const index_t* idx) {
  using C = typename Rd::child_type;
  constexpr unsigned varying = mask_bits<Rd>();
  slot local[slot_count<C, varying>() + 1];
  index_t base[C::rank > 0 ? C::rank : 1];
  Rd::base_index(idx, base);
  compute_slots<C, varying, 0, void>(rd.arg, base, local, single_thread{}, false); // (not shared: see row_value)
  const auto acc = group_reduce<Rd, 0>(rd, base, local, single_thread{});
  return static_cast<compute_t<typename Rd::value_type>>(Rd::op_type::finalize(acc, Rd::count));
}

// One thread per output element, for trees that hold reductions but no row to share (a reduction over
// leading axes at the root, a reduction read along axes it does not reduce): the element's reductions
// go into local slots once each, then the element is computed from them.
struct pointwise_body {
  static constexpr int max_threads = elementwise_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n, bool share) {
    using S = typename N::shape_type;
    using D = typename Dst::value_type;
    const index_t stride = index_t(gridDim.x) * blockDim.x;
    for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < S::size; i += stride) {
      index_t idx[S::rank > 0 ? S::rank : 1];
      tenfold::detail::unravel<S>(i, idx);
      slot local[slot_count<N, 0u>() + 1];
      compute_slots<N, 0u, 0, plan::row_slot_sharing<N, 0u>>(n, idx, local, single_thread{}, share);
      dst.data()[Dst::offset_of(idx)] = convert<D>(row_value<N, 0u, 0>(n, idx, local));
    }
  }
};

// Does the tree hold a reduction anywhere (then pointwise_body, not indexed_body's plain `at`)?
template <class N>
struct is_reduction : std::bool_constant<tenfold::detail::is_reduce_node_v<N>> {};
template <class N>
constexpr bool holds_reduction() {
  return tenfold::detail::any_node<is_reduction, N>();
}

template <class Dst, class N>
void run_pointwise(const Dst& dst, const N& n, stream_ref s) {
  constexpr launch_shape l = elementwise_launch(N::shape_type::size, 1);
  launch<pointwise_body>(l.grid, l.block, s, dst, n, "tenfold::cuda pointwise kernel", plan::same_repeated_reductions(n));
}

template <class Dst, class N, class G>
__device__ void run_row(const Dst& dst, const N& n, index_t row, const G& g, bool share) {
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  index_t idx[S::rank > 0 ? S::rank : 1];
  if constexpr (tenfold::detail::is_reduce_node_v<N>) {
    using C = typename N::child_type;
    constexpr unsigned varying = mask_bits<N>();
    slot slots[slot_count<C, varying>() + 1];
    index_t base[C::rank > 0 ? C::rank : 1];
    tenfold::detail::unravel<S>(row, idx);
    N::base_index(idx, base);
    compute_slots<C, varying, 0, plan::row_slot_sharing<C, varying>>(n.arg, base, slots, g, share);
    const auto acc = group_reduce<N, 0>(n, base, slots, g);
    if (g.rank() == 0) dst.data()[Dst::offset_of(idx)] = convert<D>(static_cast<compute_t<typename N::value_type>>(N::op_type::finalize(acc, N::count)));
  } else {
    constexpr int R = S::rank;
    constexpr unsigned varying = 1u << (R - 1);
    constexpr index_t cols = S::dims[R - 1];
    slot slots[slot_count<N, varying>() + 1];
    tenfold::detail::unravel<S>(row * cols, idx);
    compute_slots<N, varying, 0, plan::row_slot_sharing<N, varying>>(n, idx, slots, g, share);
    for (index_t j = g.rank(); j < cols; j += group_size(g)) {
      idx[R - 1] = j;
      dst.data()[Dst::offset_of(idx)] = convert<D>(row_value<N, varying, 0>(n, idx, slots));
    }
  }
}

template <bool WarpPerRow>
struct row_body {
  static constexpr int max_threads = WarpPerRow ? int(rows_block) : 1024;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n, bool share);
};
template <bool WarpPerRow>
template <class Dst, class N>
__device__ void row_body<WarpPerRow>::run(const Dst& dst, const N& n, bool share) {
  constexpr index_t rows = row_count<N>();
  if constexpr (WarpPerRow) {
    const unsigned per_block = blockDim.x / warp_size;
    const index_t first = index_t(blockIdx.x) * per_block + threadIdx.x / warp_size, step = index_t(gridDim.x) * per_block;
    // Whole warps leave together: the shuffles inside need every lane.
    for (index_t r = first; r < rows; r += step) run_row(dst, n, r, warp_group{}, share);
  } else {
    __shared__ alignas(16) unsigned char scratch[(1024 / warp_size + 1) * max_acc_bytes];
    for (index_t r = blockIdx.x; r < rows; r += gridDim.x) run_row(dst, n, r, block_group{scratch}, share);
  }
}

// Does the elementwise root N need the row kernel (a row-fused reduction somewhere in it)?
template <class N>
constexpr bool needs_rows() {
  using S = typename N::shape_type;
  if constexpr (S::rank == 0) return false;
  else return has_slots<N, 1u << (S::rank - 1)>();
}

template <class Dst, class N>
void run_rows(const Dst& dst, const N& n, stream_ref s) {
  constexpr index_t rows = row_count<N>();
  if constexpr (rows == 0 || N::shape_type::size == 0) return;
  else {
    const bool share = plan::same_repeated_reductions(n); // (once per launch: plan/same_reductions.hpp)
    if (run_vector_rows(dst, n, s, share)) return;
    constexpr launch_shape l = row_launch(rows, row_length<N>());
    launch<row_body<(l.per_block > 1)>>(l.grid, l.block, s, dst, n, "tenfold::cuda row kernel", share);
  }
}
} // namespace tenfold::cuda::detail
