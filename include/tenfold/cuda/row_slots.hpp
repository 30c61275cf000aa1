#pragma once
// What the row-fused kernels share (cuda/rows.hpp's generic kernel, cuda/rows_vector.hpp's vector path):
// where each slot's result lives (which reductions are slots, their order and which of them share one
// result: plan/row_slots.hpp), and the groups of threads (a warp, a block, one thread) that reduce a
// row together.
#include <cuda_runtime.h>

#include <cstring>

#include "tenfold/cuda/elementwise.hpp"
#include "tenfold/cuda/group.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/plan/nest_node.hpp"
#include "tenfold/plan/row_slots.hpp"
#include "tenfold/plan/same_reductions.hpp"

namespace tenfold::cuda::detail {

// The slots' numbering and their sharing are decided in plan/row_slots.hpp.
using plan::child_base;
using plan::has_slots;
using plan::is_slot;
using plan::mask_bits;
using plan::slot_count;

// The slot whose result slot S reads: S itself, or an earlier slot of the same reduction at the same
// index (Sh: plan::row_slot_sharing of the slot array's tree; void: none shared).
template <class Sh, int S>
constexpr int shared_slot() {
  if constexpr (std::is_void_v<Sh>) return S;
  else return Sh::share[std::size_t(S)];
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
