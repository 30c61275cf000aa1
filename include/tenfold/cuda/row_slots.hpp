#pragma once
// What the row-fused kernels share (cuda/rows.hpp's generic kernel, cuda/rows_vector.hpp's vector path):
// which reductions of a tree are "slots" (computed once per row, in post-order), where each slot's
// result lives, and the groups of threads (a warp, a block, one thread) that reduce a row together.
#include <cuda_runtime.h>

#include <cstring>

#include "tenfold/cuda/elementwise.hpp"
#include "tenfold/cuda/group.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/plan/nest_node.hpp"

namespace tenfold::cuda::detail {

// Reduced axes of a reduction, as a bit set over its input's axes (bit i: axis i).
template <class Rd>
constexpr unsigned mask_bits() {
  unsigned m = 0;
  for (int i = 0; i < Rd::input_shape::rank; ++i)
    if (Rd::mask[i]) m |= 1u << i;
  return m;
}

// Is N a reduction seen through a broadcast that is constant along the axes in `Varying` (the axes a
// row iterates over)? Then it is computed once per row, into a slot.
template <class N, unsigned Varying>
constexpr bool is_slot() {
  if constexpr (!plan::is_reduce_view_v<N>) return false;
  else {
    for (int j = 0; j < int(N::map_type::src.size()); ++j) {
      const int a = N::map_type::src[j];
      if (a >= 0 && N::shape_type::dims[a] != 1 && ((Varying >> a) & 1u)) return false;
    }
    return true;
  }
}

template <class N, unsigned Varying>
constexpr int slot_count() {
  [[maybe_unused]] constexpr plan::nest_node kind = plan::nest_kind_v<N>; // a node kind the nests do not know stops here
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    return slot_count<typename Rd::child_type, mask_bits<Rd>()>() + 1;
  } else if constexpr (is_map_node_v<N>) {
    return []<class... C>(std::tuple<C...>*) { return (0 + ... + slot_count<C, Varying>()); }(static_cast<decltype(N::args)*>(nullptr));
  } else {
    return 0; // the other kinds hold no slot: the walk takes reductions out of views and pads
  }
}

// Slot base of child I of a map node: the slots of the children before it come first.
template <class Args, unsigned Varying, std::size_t I>
constexpr int child_base() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (0 + ... + slot_count<std::tuple_element_t<J, Args>, Varying>());
  }(std::make_index_sequence<I>{});
}

template <class N, unsigned Varying>
constexpr bool has_slots() {
  return slot_count<N, Varying>() > 0;
}

// A view of a reduction (a function, not `&&` in an `if constexpr`: nvcc substitutes both sides).
template <class N>
constexpr bool is_view_of_reduction() {
  if constexpr (plan::is_view_node_v<N>) return tenfold::detail::is_reduce_node_v<typename N::child_type>;
  else return false;
}

// A slot holds one finalized reduction result in its compute type (at most 8 bytes: double, int64).
struct slot {
  alignas(8) unsigned char bytes[8];
  template <class T>
  __device__ void put(const T& v) {
    static_assert(sizeof(T) <= 8);
    std::memcpy(bytes, &v, sizeof(T));
  }
  template <class T>
  __device__ T get() const {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }
};

// Who reduces a row: one warp, or the whole block (with shared scratch for the cross-warp merge), or
// one thread alone (a reduction nested in the value of one element, see sequential_reduce).
struct warp_group {
  __device__ unsigned rank() const { return threadIdx.x % warp_size; }
  template <class Op, class A>
  __device__ A allmerge(const A& a) const {
    return warp_allmerge<Op>(a);
  }
};
struct block_group {
  unsigned char* scratch; // (warps + 1) accumulators
  __device__ unsigned rank() const { return threadIdx.x; }
  __device__ unsigned size_() const { return blockDim.x; }
  template <class Op, class A>
  __device__ A allmerge(const A& a) const {
    return block_allmerge<Op>(a, reinterpret_cast<A*>(scratch));
  }
};
struct single_thread {
  __device__ unsigned rank() const { return 0; }
  template <class Op, class A>
  __device__ A allmerge(const A& a) const {
    return a;
  }
};
template <class G>
__device__ unsigned group_size(const G& g) {
  if constexpr (std::is_same_v<G, warp_group>) return warp_size;
  else if constexpr (std::is_same_v<G, single_thread>) return 1;
  else return g.size_();
}
inline constexpr std::size_t max_acc_bytes = 32; // moments<double> is the largest accumulator (24 bytes)

// Entries whose merge depends on which partial covers earlier positions (argmax/argmin's first index)
// give each thread one contiguous run of positions; the others interleave, so that a warp's loads coalesce.
template <class Op>
inline constexpr bool order_sensitive_v = Op::result_kind == ops::reduce_result::index;

// Rows of the output (all axes but the last), or the outputs of a root reduction.
template <class N>
constexpr index_t row_count() {
  using S = typename N::shape_type;
  if constexpr (tenfold::detail::is_reduce_node_v<N>) return S::size;
  else return S::rank == 0 ? 1 : S::size / S::dims[S::rank - 1];
}
template <class N>
constexpr index_t row_length() {
  using S = typename N::shape_type;
  if constexpr (tenfold::detail::is_reduce_node_v<N>) return N::count;
  else return S::rank == 0 ? 1 : S::dims[S::rank - 1];
}
} // namespace tenfold::cuda::detail
