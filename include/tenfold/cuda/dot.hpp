#pragma once
// GEMM-driven roots whose outputs are few and whose sums are long: a block of threads per run of
// outputs. Each thread adds every slices-th term of one output's sum (the node's partial_at), the block
// adds the slices' partial sums pairwise, and one thread per output stores the root's epilogue.
// Where this runs (dot_group below): a convolution's weight gradient (dW of a 3x3 conv over a batch
// of 64 28x28 images: 144 outputs of 50176 terms each), where a thread per output left all but one
// block idle, each thread walking its whole sum; a small matmul over a long K (a batch-64 dense layer:
// 64 x 128 outputs, K = 1568), where the 128 x 128 tiles made one block.
#include "tenfold/cuda/gemm.hpp"

namespace tenfold::cuda::detail {

// Outputs at or above which a thread per output fills the device (about a wave of resident threads).
inline constexpr index_t dot_outputs_limit = 32768;

// How a GEMM-driven root is shared out: `threads` per block, each block taking `run` consecutive outputs
// along the innermost axis at a time, with threads / run threads ("slices") per output, each adding
// every slices-th term. A run makes neighbouring threads read neighbouring elements of the operand
// whose innermost axis is the output's (a weight's output channels: 32 outputs, one 128-byte read
// per term) and the same element of the other (one broadcast read); it shrinks until the runs are at
// least a wave of blocks (128). threads == 0: not taken here (the tiled GEMM, or a thread per output
// for a convolution with many outputs or short sums).
struct dot_shape {
  unsigned threads = 0, run = 1;
  constexpr bool operator==(const dot_shape&) const = default;
};
inline constexpr index_t dot_min_blocks = 128;

template <class N>
constexpr dot_shape dot_launch() {
  using Mm = gemm_of_t<N>;
  using S = typename N::shape_type;
  constexpr index_t outputs = S::size, K = Mm::K;
  if constexpr (tenfold::detail::is_conv_node_v<Mm>) {
    if (outputs >= dot_outputs_limit || K < 64) return {};
  } else {
    if constexpr (uses_tensor_cores_v<N>) return {};
    else {
      // Tiles for half the SMs, short sums, or many outputs: the tiled kernel. (A thread per output,
      // tried for 64 x 1568 outputs of K = 128, took 55 us where the 13 tiles take 23.)
      constexpr dim3 g = gemm_grid<N, false>();
      if (index_t(g.x) * g.y * g.z >= 64 || K < 32 || outputs >= dot_outputs_limit) return {};
    }
  }
  constexpr index_t inner = S::dims[S::rank - 1], lines = outputs / inner;
  index_t run = pow2_at_least(inner < 32 ? inner : 32);
  while (run > 1 && lines * ceil_div(inner, run) < dot_min_blocks) run /= 2;
  index_t threads = pow2_at_least(run * ceil_div(K, 32)); // about 32 terms per thread
  threads = threads < 32 ? 32 : threads > 1024 ? 1024 : threads;
  return {unsigned(threads), unsigned(run)};
}

template <unsigned Threads, unsigned Run>
struct dot_body {
  static constexpr int max_threads = int(Threads);
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& root);
};
template <unsigned Threads, unsigned Run>
template <class Dst, class N>
__device__ void dot_body<Threads, Run>::run(const Dst& dst, const N& root) {
  using Mm = gemm_of_t<N>;
  using C = compute_t<typename Mm::value_type>;
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  constexpr index_t inner = S::dims[S::rank - 1], per_line = ceil_div(inner, Run), runs = S::size / inner * per_line;
  constexpr unsigned slices = Threads / Run;
  __shared__ C part[Threads];
  const Mm& mm = find_gemm(root);
  const unsigned lane = threadIdx.x % Run, slice = threadIdx.x / Run;
  // (r is the block's: every thread reaches the barriers.)
  for (index_t r = blockIdx.x; r < runs; r += gridDim.x) {
    const index_t j = (r % per_line) * Run + lane;
    const bool mine = j < inner;
    index_t idx[S::rank];
    tenfold::detail::unravel<S>(r / per_line * inner + (mine ? j : 0), idx);
    part[threadIdx.x] = mine ? mm.partial_at(idx, slice, slices) : C(0);
    __syncthreads();
    // The slices' partial sums, pairwise in a fixed order (the same bits every run).
    for (unsigned h = slices / 2; h > 0; h /= 2) {
      if (slice < h) part[threadIdx.x] += part[threadIdx.x + h * Run];
      __syncthreads();
    }
    if (slice == 0 && mine) dst.data()[Dst::offset_of(idx)] = convert<D>(epilogue_value(root, idx, part[threadIdx.x]));
    __syncthreads(); // (part is rewritten by the next run)
  }
}

template <class Dst, class N>
void run_dot(const Dst& dst, const N& n, stream_ref s) {
  constexpr dot_shape l = dot_launch<N>();
  static_assert(l.threads > 1);
  using S = typename N::shape_type;
  constexpr index_t runs = S::size / S::dims[S::rank - 1] * ceil_div(S::dims[S::rank - 1], l.run);
  launch<dot_body<l.threads, l.run>>(unsigned(runs < 65535 ? runs : 65535), l.threads, s, dst, n, "tenfold::cuda dot kernel");
}
} // namespace tenfold::cuda::detail
