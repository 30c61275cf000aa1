#pragma once
// attention(q, k, v) on the device, flash-style: a block of 128 threads per (batch element, tile of
// query rows), Sp threads per row (attention_splits: 4 for fewer than 32768 rows in all, else 1): warp
// p (a split) takes keys p * Tk/Sp .. of every key tile, its lanes consecutive rows. A thread holds its
// query (scaled) and its partial output row in registers; the keys and values pass through shared
// memory a tile of Tk keys at a time, the lanes of a warp reading the same key (a broadcast). Per tile a
// thread scores its keys, rescales its output once to the new maximum and adds the weighted values
// (online softmax: the S x S scores never exist); at the end the splits' partials (maximum, normaliser,
// output row) are merged through shared memory in a fixed order and the block writes its rows together.
// The masks are the node's (core/attention_node.hpp): causal (bottom-right aligned),
// first_keys; a query that sees no key gives 0. Operands are strided leaves (the planner materialises
// anything else), read through their strides. Heads wider than fast_head_limit (registers) take the
// indexed elementwise kernel, a thread per output through the node's at(). key_lengths reads its
// lengths from device memory (cuda::key_lengths; host lengths are a tenfold::error), each clamped to
// [0, keys] by keys_of.
#include "tenfold/core/attention_node.hpp"
#include "tenfold/cuda/elementwise.hpp"
#include "tenfold/cuda/tensor.hpp"

namespace tenfold::cuda {
// attention(q, k, v, cuda::key_lengths(lens)) on the device: batch element b reads its first lens[b] keys,
// lens a device tensor read when the kernel runs (so a CUDA graph captured once reads each replay's
// lengths; a length outside [0, keys] reads as the nearest end of that range).
template <index_t B>
key_lengths_t<B> key_lengths(const Tensor<std::int32_t, shape<B>>& lens) {
  return {lens.data(), true};
}
template <index_t B>
key_lengths_t<B> key_lengths(Tensor<std::int32_t, shape<B>>&&) = delete; // the expression would outlive it
} // namespace tenfold::cuda

namespace tenfold::cuda::detail {

inline constexpr unsigned attention_block = 128; // threads per block
// Threads per row (a warp each, each a part of every tile) for an output of shape S, whose rows are all
// but its last axis. A thread per row leaves few warps per SM where the rows are few (measured on an
// H200: 16384 rows of 512 keys ran 4 warps per SM, 3072 rows of 64 keys 1.5); four per row took those
// from 0.191 to 0.175 ms and 0.022 to 0.016 ms, but 32768 rows of 2048 keys, which fill every SM to
// its register limit (2 blocks of 4 warps at ~210 registers) with a thread each, from 0.806 to 0.914 ms:
// the merge and four times the tile loads per row only cost there.
template <class S>
inline constexpr index_t attention_splits = S::size / S::dims[S::rank - 1] < 32768 ? 4 : 1;
template <class S>
inline constexpr index_t attention_rows = index_t(attention_block) / attention_splits<S>; // rows per block
inline constexpr index_t fast_head_limit = 128;  // D and Dv each at most this for the register kernel

// Keys per shared-memory tile: (D + Dv) x Tk floats within 32 KiB, and a thread's Tk scores in registers.
template <index_t D, index_t Dv>
constexpr index_t attention_key_tile() {
  return (D + Dv) <= 128 ? 32 : 16;
}

template <class A>
__device__ inline A attention_exp(A x) {
  if constexpr (std::is_same_v<A, float>) return ::expf(x);
  else return ::exp(x);
}

template <class A>
__device__ inline A attention_log(A x) {
  if constexpr (std::is_same_v<A, float>) return ::logf(x);
  else return ::log(x);
}

template <class N>
constexpr bool fast_attention() {
  return N::D <= fast_head_limit && N::Dv <= fast_head_limit;
}

// out[0 .. rank - 3] = the batch axes of element `batch` of S (its axes before the last two).
template <class S>
__device__ __forceinline__ void attention_batch_index(index_t batch, index_t* out) {
  for (int a = S::rank - 3; a >= 0; --a) {
    out[a] = batch % tenfold::detail::extent<S>(a);
    batch /= tenfold::detail::extent<S>(a);
  }
}

// Rows [c0, c0 + T) of a strided operand (row stride rs, column stride cs) into a shared tile, zeros
// from row c1 on; every thread of the block takes part.
template <index_t T, index_t W, class A, class E>
__device__ __forceinline__ void load_attention_tile(A (&tile)[T][W], const E* p, index_t rs, index_t cs, index_t c0, index_t c1) {
  for (index_t t = threadIdx.x; t < T * W; t += attention_block) {
    const index_t c = t / W, d = t % W;
    tile[c][d] = c0 + c < c1 ? static_cast<A>(p[(c0 + c) * rs + d * cs]) : A(0);
  }
}

// One tile of keys [j0, j0 + T) into a query row's online softmax: the scores x·ks[c] (x the scaled
// query; keys from `seen` on masked, and a key scored -inf weighs 0), then the running maximum m, the
// normaliser l and the unnormalised output o rescaled once to the tile's maximum and the tile added.
template <index_t T, index_t D, index_t Dv, class A>
__device__ __forceinline__ void online_softmax_tile(const A (&x)[D], const A (&ks)[T][D], const A (&vs)[T][Dv], index_t j0,
                                                    index_t seen, A& m, A& l, A (&o)[Dv]) {
  const A neg_inf = -std::numeric_limits<A>::infinity();
  A sc[T];
  A mt = m;
#pragma unroll
  for (index_t c = 0; c < T; ++c) {
    A s = A(0);
#pragma unroll
    for (index_t d = 0; d < D; ++d) s += x[d] * ks[c][d];
    sc[c] = j0 + c < seen ? s : neg_inf;
    mt = sc[c] > mt ? sc[c] : mt;
  }
  if (mt == neg_inf) return; // nothing of finite score yet
  const A r = m == neg_inf ? A(0) : attention_exp(m - mt);
  l *= r;
#pragma unroll
  for (index_t e = 0; e < Dv; ++e) o[e] *= r;
#pragma unroll
  for (index_t c = 0; c < T; ++c) {
    const A p = sc[c] == neg_inf ? A(0) : attention_exp(sc[c] - mt);
    l += p;
#pragma unroll
    for (index_t e = 0; e < Dv; ++e) o[e] += p * vs[c][e];
  }
  m = mt;
}

// With Sp threads per row: the split of this thread (its warp) and its row in the block.
template <index_t Sp>
__device__ __forceinline__ index_t attention_split() {
  return index_t(threadIdx.x) / (index_t(attention_block) / Sp);
}
template <index_t Sp>
__device__ __forceinline__ index_t attention_lane() {
  return index_t(threadIdx.x) % (index_t(attention_block) / Sp);
}

// Split p's part of a shared tile of T rows: rows [p * T / Sp, (p + 1) * T / Sp).
template <index_t Sp, index_t T, index_t W, class A>
__device__ __forceinline__ auto& split_part(const A (&tile)[T][W]) {
  static_assert(T % Sp == 0, "tenfold::cuda: a shared tile splits evenly over the threads of a row");
  return *reinterpret_cast<const A(*)[T / Sp][W]>(&tile[attention_split<Sp>() * (T / Sp)]);
}

// The splits' rows x summed into sum[lane] (one split after the other: a fixed order); every thread of
// the block takes part, and sum is complete when it returns.
template <index_t Sp, index_t Rb, index_t W, class A>
__device__ __forceinline__ void sum_splits(const A (&x)[W], A (&sum)[Rb][W + 1]) {
  const index_t lane = attention_lane<Sp>(), split = attention_split<Sp>();
#pragma unroll 1
  for (index_t p = 0; p < Sp; ++p) {
    if (split == p) {
#pragma unroll
      for (index_t e = 0; e < W; ++e) sum[lane][e] = p == 0 ? x[e] : sum[lane][e] + x[e];
    }
    __syncthreads();
  }
}

// The block's rows of the output, rows row0 + lane (those under `rows`): each row the sum of its splits'
// x, times `scale` (the same in every split of a row), written with out's batch axes. One split: the
// thread writes its row; more: the rows pass through `sum` and neighbouring threads write neighbouring
// elements of a row. Every thread of the block takes part.
template <index_t Sp, index_t W, class Dst, class A, std::size_t R, index_t Rs>
__device__ __forceinline__ void write_rows(const Dst& dst, index_t (&out)[R], index_t row0, index_t rows, const A (&x)[W], A scale,
                                           A (&sum)[Rs][W + 1], A (&scales)[Rs]) {
  using T = typename Dst::value_type;
  const index_t lane = attention_lane<Sp>();
  if constexpr (Sp == 1) {
    if (row0 + lane >= rows) return;
    out[R - 2] = row0 + lane;
    for (index_t e = 0; e < W; ++e) {
      out[R - 1] = e;
      dst.data()[Dst::offset_of(out)] = convert<T>(x[e] * scale);
    }
  } else {
    static_assert(Rs == index_t(attention_block) / Sp);
    sum_splits<Sp>(x, sum);
    if (attention_split<Sp>() == 0) scales[lane] = scale;
    __syncthreads();
    for (index_t t = index_t(threadIdx.x); t < Rs * W; t += attention_block) {
      const index_t r = t / W, e = t % W;
      if (row0 + r >= rows) break;
      out[R - 2] = row0 + r, out[R - 1] = e;
      dst.data()[Dst::offset_of(out)] = convert<T>(sum[r][e] * scales[r]);
    }
  }
}

// The online softmaxes of a row's splits merged: each split's (m, l) shared, the row's maximum M and
// normaliser L over all its splits returned, and the factor exp(m - M) this split's output is scaled by
// (0 where it saw nothing). Every thread of the block takes part.
template <class A>
struct merged_softmax {
  A max, norm, factor;
};
template <index_t Sp, index_t Rb, class A>
__device__ __forceinline__ merged_softmax<A> merge_softmax(A m, A l, A (&ml)[Sp][Rb][2]) {
  const A neg_inf = -std::numeric_limits<A>::infinity();
  if constexpr (Sp == 1) return {m, l, A(1)};
  else {
    const index_t lane = attention_lane<Sp>();
    __syncthreads(); // ml may still be read by an earlier merge
    ml[attention_split<Sp>()][lane][0] = m, ml[attention_split<Sp>()][lane][1] = l;
    __syncthreads();
    A M = neg_inf, L = A(0);
#pragma unroll
    for (index_t p = 0; p < Sp; ++p) M = ml[p][lane][0] > M ? ml[p][lane][0] : M;
#pragma unroll
    for (index_t p = 0; p < Sp; ++p)
      if (ml[p][lane][0] != neg_inf) L += ml[p][lane][1] * attention_exp(ml[p][lane][0] - M);
    return {M, L, m == neg_inf ? A(0) : attention_exp(m - M)};
  }
}

struct attention_body {
  static constexpr int max_threads = attention_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};

template <class Dst, class N>
__device__ void attention_body::run(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using A = compute_t<typename N::value_type>;
  using CQ = typename N::q_type;
  using CK = typename N::k_type;
  using CV = typename N::v_type;
  constexpr int R = S::rank;
  constexpr index_t Sq = N::Sq, D = N::D, Dv = N::Dv, Tk = attention_key_tile<D, Dv>();
  constexpr index_t Sp = attention_splits<S>, Rb = attention_rows<S>;
  constexpr index_t tiles = (Sq + Rb - 1) / Rb;
  __shared__ alignas(16) A ks[Tk][D];
  __shared__ alignas(16) A vs[Tk][Dv];
  constexpr index_t Rs = Sp == 1 ? 1 : Rb; // rows merged through shared memory
  __shared__ A ml[Sp][Rb][2];
  __shared__ A sum[Rs][Dv + 1]; // (+1: lanes a bank apart)
  __shared__ A scales[Rs];

  // The block's batch element and query tile; out holds the output index (row and column set below).
  const index_t tile = index_t(blockIdx.x) % tiles, batch = index_t(blockIdx.x) / tiles;
  index_t out[R];
  attention_batch_index<S>(batch, out);
  const index_t i = tile * Rb + attention_lane<Sp>();
  const bool active = i < Sq;
  out[R - 2] = active ? i : Sq - 1;
  out[R - 1] = 0;
  // (rank 2: no batch axis, and key_lengths needs one, so keys_of ignores its argument)
  const index_t nk = n.keys_of(R > 2 ? out[0] : 0);
  const index_t seen = active ? N::visible(i, nk) : 0;
  // Keys the block walks: those its last query sees (causal: the most; else all nk).
  const index_t last = tile * Rb + Rb - 1 < Sq ? tile * Rb + Rb - 1 : Sq - 1;
  const index_t block_keys = N::visible(last, nk);

  const auto& q = tenfold::detail::get<0>(n.args);
  const auto& k = tenfold::detail::get<1>(n.args);
  const auto& v = tenfold::detail::get<2>(n.args);
  index_t iq[CQ::rank], ik[CK::rank], iv[CV::rank];
  N::template operand_index<typename CQ::shape_type>(out, out[R - 2], 0, iq);
  N::template operand_index<typename CK::shape_type>(out, 0, 0, ik);
  N::template operand_index<typename CV::shape_type>(out, 0, 0, iv);
  const auto* qp = q.data() + CQ::offset_of(iq);
  const auto* kp = k.data() + CK::offset_of(ik);
  const auto* vp = v.data() + CV::offset_of(iv);
  constexpr index_t qd = CQ::strides[CQ::rank - 1], kj = CK::strides[CK::rank - 2], kd = CK::strides[CK::rank - 1];
  constexpr index_t vj = CV::strides[CV::rank - 2], ve = CV::strides[CV::rank - 1];

  const A scale = static_cast<A>(n.scale);
  A qr[D], o[Dv];
#pragma unroll
  for (index_t d = 0; d < D; ++d) qr[d] = static_cast<A>(qp[d * qd]) * scale;
#pragma unroll
  for (index_t e = 0; e < Dv; ++e) o[e] = A(0);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  A m = neg_inf, l = A(0);

  constexpr index_t Tp = Tk / Sp;                  // keys per split per tile
  const index_t first = attention_split<Sp>() * Tp; // this split's first key in a tile
  for (index_t j0 = 0; j0 < block_keys; j0 += Tk) {
    __syncthreads(); // the previous tile is read by every thread
    load_attention_tile(ks, kp, kj, kd, j0, block_keys);
    load_attention_tile(vs, vp, vj, ve, j0, block_keys);
    __syncthreads();
    if (active && j0 + first < seen) online_softmax_tile(qr, split_part<Sp>(ks), split_part<Sp>(vs), j0 + first, seen, m, l, o); // (every thread reaches the barriers)
  }
  // The splits merged: each output scaled to the row's maximum, summed, then divided by the normaliser.
  const merged_softmax<A> row = merge_softmax<Sp>(m, l, ml);
#pragma unroll
  for (index_t e = 0; e < Dv; ++e) o[e] *= row.factor;
  write_rows<Sp>(dst, out, tile * Rb, Sq, o, row.norm == A(0) ? A(0) : A(1) / row.norm, sum, scales);
}

// A block of Threads per (batch element, Rb rows of the output) running Body where Fast, else a thread per output
// element through the node's at().
template <class Body, bool Fast, index_t Rb, unsigned Threads = attention_block, class Dst, class N>
void launch_attention(const Dst& dst, const N& n, stream_ref s, const char* what) {
  using S = typename N::shape_type;
  if constexpr (S::size == 0) return;
  else if constexpr (Fast) {
    constexpr index_t rows = S::dims[S::rank - 2];
    constexpr index_t blocks = (rows + Rb - 1) / Rb * (S::size / (rows * S::dims[S::rank - 1]));
    static_assert(blocks < (index_t(1) << 31), "tenfold::cuda: attention over more than 2^31 blocks");
    launch<Body>(dim3(unsigned(blocks)), dim3(Threads), s, dst, n, what);
  } else {
    constexpr launch_shape l = elementwise_launch(S::size, 1);
    launch<indexed_body>(l.grid, l.block, s, dst, n, what);
  }
}

template <class N>
void check_attention_lengths(const N& n) {
  if (n.lengths && !n.lengths_on_device)
    throw error("tenfold::cuda: attention with key_lengths in host memory: give the device its lengths as a cuda::Tensor "
                "(cuda::key_lengths), or evaluate it on the CPU");
}
} // namespace tenfold::cuda::detail
