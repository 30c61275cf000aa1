#pragma once
// Cooperative reductions of a "group" of threads — one warp, or one whole block — with a reduction
// entry's merge (ops/table_reduce.hpp). Partial results are merged in ascending order of the positions
// they cover (a covers earlier positions than b in merge(a, b)), which is what order-sensitive entries
// (argmax's first index, first NaN) need; order-free entries do not care.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "tenfold/core/config.hpp"
#include "tenfold/cuda/launch.hpp"

namespace tenfold::cuda::detail {

// __shfl_down_sync for any trivially copyable accumulator (moments, value_index, max_sum, bool):
// moved as 32-bit words.
template <class T>
__device__ T shuffle_down(const T& v, unsigned delta) {
  constexpr int words = int((sizeof(T) + 3) / 4);
  std::uint32_t w[words] = {};
  std::memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < words; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta);
  T r;
  std::memcpy(&r, w, sizeof(T));
  return r;
}
template <class T>
__device__ T shuffle_from(const T& v, int lane) {
  constexpr int words = int((sizeof(T) + 3) / 4);
  std::uint32_t w[words] = {};
  std::memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < words; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], lane);
  T r;
  std::memcpy(&r, w, sizeof(T));
  return r;
}

// Lane 0 ends with the merge of lanes [0, 32) in lane order: at step o, lane i (a multiple of 2o)
// covering [i, i+o) merges lane i+o covering [i+o, i+2o).
template <class Op, class A>
__device__ A warp_merge(A acc) {
  const unsigned lane = threadIdx.x % warp_size;
#pragma unroll
  for (unsigned o = 1; o < warp_size; o *= 2) {
    const A other = shuffle_down(acc, o);
    if ((lane & (2 * o - 1)) == 0) acc = Op::merge(acc, other);
  }
  return acc;
}

// Every lane of the warp gets the merged result.
template <class Op, class A>
__device__ A warp_allmerge(A acc) {
  return shuffle_from(warp_merge<Op>(acc), 0);
}

// Every thread of the block gets the merged result. `scratch` holds one A per warp plus one; the
// block must be a multiple of 32 threads. Ends with a barrier, so scratch may be reused at once.
template <class Op, class A>
__device__ A block_allmerge(A acc, A* scratch) {
  const unsigned warp = threadIdx.x / warp_size, lane = threadIdx.x % warp_size, warps = blockDim.x / warp_size;
  acc = warp_merge<Op>(acc);
  if (lane == 0) scratch[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    A w = lane < warps ? scratch[lane] : Op::template identity<A>();
    w = warp_merge<Op>(w);
    if (lane == 0) scratch[warps] = w;
  }
  __syncthreads();
  const A r = scratch[warps];
  __syncthreads();
  return r;
}
} // namespace tenfold::cuda::detail
