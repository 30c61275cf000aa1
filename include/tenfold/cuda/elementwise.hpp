#pragma once
// Elementwise kernels, instantiated from the expression type: one thread computes `vector` consecutive
// elements per step of a grid-stride loop.
//  - flat trees (every leaf contiguous at the output's shape, or a broadcast scalar) index by the
//    linear position alone and move 16 bytes per leaf per step when the pointers allow it;
//  - any other tree (views, broadcasts along some axes, generators, reductions read directly)
//    unravels the position and asks each node for its element (`at`).
#include <cuda_runtime.h>

#include <cstdint>

#include "tenfold/core/expr.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/cuda/error.hpp"
#include "tenfold/cuda/kernel.hpp"
#include "tenfold/cuda/launch.hpp"
#include "tenfold/cuda/memory.hpp"
#include "tenfold/plan/nest_node.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cuda::detail {
using tenfold::detail::is_leaf_v;
using tenfold::detail::is_map_node_v;
using tenfold::detail::is_scalar_node_v;

// A leaf that reads one element for the whole tensor (every stride 0).
template <class N>
constexpr bool is_broadcast_leaf() {
  for (int i = 0; i < N::rank; ++i)
    if (N::strides[i] != 0 && N::shape_type::dims[i] != 1) return false;
  return true;
}

// Can N be evaluated from the linear position alone, at shape S?
template <class N, class S>
constexpr bool flat_tree() {
  [[maybe_unused]] constexpr plan::nest_node kind = plan::nest_kind_v<N>; // a node kind the nests do not know stops here
  if constexpr (is_leaf_v<N>) return std::is_same_v<typename N::shape_type, S> && (N::contiguous || is_broadcast_leaf<N>());
  else if constexpr (is_scalar_node_v<N>) return true;
  else if constexpr (is_map_node_v<N>)
    return []<class... C>(tenfold::detail::tuple<C...>*) { return (flat_tree<C, S>() && ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // the other kinds are read through the element's index (at)
}

// The widest element a flat tree moves through memory: it sets the vector width.
template <class N>
constexpr std::size_t widest_load() {
  if constexpr (is_leaf_v<N>) return N::contiguous ? sizeof(typename N::value_type) : 1;
  else if constexpr (is_map_node_v<N>)
    return []<class... C>(tenfold::detail::tuple<C...>*) {
      std::size_t w = 1;
      ((w = w > widest_load<C>() ? w : widest_load<C>()), ...);
      return w;
    }(static_cast<decltype(N::args)*>(nullptr));
  else return 1;
}

// Are the contiguous leaves' pointers aligned for V-element vector accesses? (Checked on the host.)
template <int V, class N>
bool leaves_aligned(const N& n) {
  if constexpr (is_leaf_v<N>) {
    if constexpr (!N::contiguous) return true;
    else return reinterpret_cast<std::uintptr_t>(n.data()) % (V * sizeof(typename N::value_type)) == 0;
  } else if constexpr (is_map_node_v<N>) {
    return tenfold::detail::unpack([](const auto&... c) { return (leaves_aligned<V>(c) && ...); }, n.args);
  } else {
    return true;
  }
}

template <class T, int V>
struct lanes {
  T v[V];
};
// V elements of T in one access of V * sizeof(T) bytes (up to 16).
template <class T, int V>
struct alignas(V * sizeof(T) >= 16 ? 16 : V * sizeof(T)) packed {
  T v[V];
};

// V consecutive values of a flat tree starting at linear position i, in the node's compute type.
template <int V, class N>
__device__ __forceinline__ lanes<compute_t<typename N::value_type>, V> flat_load(const N& n, index_t i) {
  using C = compute_t<typename N::value_type>;
  lanes<C, V> r;
  if constexpr (is_leaf_v<N>) {
    using T = typename N::value_type;
    if constexpr (!N::contiguous) {
      const C x = static_cast<C>(n.data()[N::offset]);
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = x;
    } else if constexpr (V == 1) {
      r.v[0] = static_cast<C>(n.data()[i]);
    } else {
      const auto p = *reinterpret_cast<const packed<T, V>*>(n.data() + i);
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = static_cast<C>(p.v[k]);
    }
  } else if constexpr (is_scalar_node_v<N>) {
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = n.value;
  } else {
    const auto in = tenfold::detail::unpack([i](const auto&... c) { return tenfold::detail::make_tuple(flat_load<V>(c, i)...); }, n.args);
#pragma unroll
    for (int k = 0; k < V; ++k)
      r.v[k] = tenfold::detail::unpack([k](const auto&... x) { return C(N::op_type::template apply<typename N::value_type>(x.v[k]...)); }, in);
  }
  return r;
}

template <int V>
struct flat_body {
  static constexpr int max_threads = elementwise_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};
template <int V>
template <class Dst, class N>
__device__ void flat_body<V>::run(const Dst& dst, const N& n) {
  using D = typename Dst::value_type;
  constexpr index_t size = N::shape_type::size, full = size / V * V;
  const index_t stride = index_t(gridDim.x) * blockDim.x * V;
  for (index_t i = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < full; i += stride) {
    const auto x = flat_load<V>(n, i);
    if constexpr (V == 1) {
      dst.data()[i] = convert<D>(x.v[0]);
    } else {
      packed<D, V> out;
#pragma unroll
      for (int k = 0; k < V; ++k) out.v[k] = convert<D>(x.v[k]);
      *reinterpret_cast<packed<D, V>*>(dst.data() + i) = out;
    }
  }
  if constexpr (full < size) { // the ragged tail, one element per thread of block 0
    if (blockIdx.x == 0 && full + threadIdx.x < size) dst.data()[full + threadIdx.x] = convert<D>(flat_load<1>(n, full + threadIdx.x).v[0]);
  }
}

// Any tree: unravel the position, ask the nodes, store through the destination's strides.
struct indexed_body {
  static constexpr int max_threads = elementwise_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};
template <class Dst, class N>
__device__ void indexed_body::run(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  const index_t stride = index_t(gridDim.x) * blockDim.x;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < S::size; i += stride) {
    index_t idx[S::rank > 0 ? S::rank : 1];
    tenfold::detail::unravel<S>(i, idx);
    dst.data()[Dst::offset_of(idx)] = convert<D>(n.at(idx));
  }
}

template <class Dst, class N>
void run_elementwise(const Dst& dst, const N& n, stream_ref s) {
  using S = typename N::shape_type;
  if constexpr (S::size == 0) return;
  else if constexpr (Dst::contiguous && flat_tree<N, S>()) {
    constexpr std::size_t widest = widest_load<N>() > sizeof(typename Dst::value_type) ? widest_load<N>() : sizeof(typename Dst::value_type);
    constexpr int V = vector_width(widest);
    // The vector path needs every contiguous pointer aligned to its access; ours always are (cudaMalloc
    // and the arena align to 64 bytes and more), a user's leaf_at over an odd address takes V = 1.
    if (V > 1 && leaves_aligned<V>(n) && leaves_aligned<V>(dst)) {
      constexpr launch_shape l = elementwise_launch(S::size, V);
      launch<flat_body<V>>(l.grid, l.block, s, dst, n, "tenfold::cuda flat elementwise kernel");
    } else {
      constexpr launch_shape l = elementwise_launch(S::size, 1);
      launch<flat_body<1>>(l.grid, l.block, s, dst, n, "tenfold::cuda flat elementwise kernel");
    }
  } else {
    constexpr launch_shape l = elementwise_launch(S::size, 1);
    launch<indexed_body>(l.grid, l.block, s, dst, n, "tenfold::cuda indexed elementwise kernel");
  }
}
} // namespace tenfold::cuda::detail
