#pragma once
// attention(q, k, v) on the device as two register-tiled products per key tile, for f32 heads of at most
// 64 (D a multiple of 4, Dv of 32) over long key ranges: a block of 128 threads per (batch element, 64
// query rows), keys 32 at a time. Thread (ty, tx) = (tid / 8, tid % 8) holds query rows 4 ty .. 4 ty + 3:
//   - it computes their scores against keys 4 tx .. 4 tx + 3 of the tile (a 4 x 4 patch of S = q kᵀ)
//     from q and k tiles in shared memory stored transposed, so that per head dimension its 4 rows and
//     its 4 keys are two 16-byte loads for 16 FMAs (the row kernel, cuda/attention.hpp: 4 FMAs a load);
//   - it takes the rows' online softmax with the 7 other threads of its rows (the same warp: shuffles),
//     and writes its probabilities to shared memory, transposed;
//   - it adds P v to its part of the output rows, columns 32 g + 4 tx .. + 3 for each group g of 32
//     (a 4 x Dv/8 patch in registers), rescaled when a row's maximum grows.
// The masks and key counts are the node's (causal, first_keys, key_lengths), as in the row kernel; a row
// that sees no key gives 0. Sums run in another order than the CPU's (the tests compare at a tolerance).
#include "tenfold/cuda/attention.hpp"

namespace tenfold::cuda::detail {

// Measured on an H200 (bench/RESULTS.md, "CUDA on the H200: attention and the decode step"): 64 rows
// per block ran 512 keys in 0.151 ms and 2048 in 0.76, 32 rows (twice the blocks) 0.194 and 0.99; the
// row kernel 0.172 and 0.80, and it stays ahead up to 128 keys (0.029 against 0.033 ms), hence
// tiled_min_keys.
inline constexpr index_t tiled_rows = 64;                               // query rows per block
inline constexpr index_t tiled_keys = 32;                               // keys per tile
inline constexpr unsigned tiled_threads = unsigned(tiled_rows / 4 * 8); // a 4 x 4 patch of scores each
inline constexpr index_t tiled_min_keys = 256; // keys (k's extent) from which it runs rather than the row kernel

template <class N>
constexpr bool tiled_attention() {
  return std::is_same_v<compute_t<typename N::value_type>, float> && N::D % 4 == 0 && N::D <= 64 && N::Dv % 32 == 0 &&
         N::Dv <= 64 && N::Sk >= tiled_min_keys;
}

struct attention_tiled_body {
  static constexpr int max_threads = tiled_threads;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};

template <class Dst, class N>
__device__ void attention_tiled_body::run(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using CQ = typename N::q_type;
  using CK = typename N::k_type;
  using CV = typename N::v_type;
  constexpr int R = S::rank;
  constexpr index_t Sq = N::Sq, D = N::D, Dv = N::Dv, BQ = tiled_rows, BK = tiled_keys, G = Dv / 32;
  constexpr index_t tiles = (Sq + BQ - 1) / BQ;
  static_assert(BQ % 4 == 0 && BK == 4 * 8, "tenfold::cuda: BQ / 4 x 8 threads of 4 x 4 patches");
  __shared__ alignas(16) float qs[D][BQ];  // the block's queries (scaled), transposed
  __shared__ alignas(16) float ks[D][BK];  // a key tile, transposed
  __shared__ alignas(16) float vs[BK][Dv]; // its values
  __shared__ alignas(16) float ps[BK][BQ]; // the tile's probabilities, transposed

  const index_t tid = index_t(threadIdx.x), ty = tid / 8, tx = tid % 8;
  const index_t tile = index_t(blockIdx.x) % tiles, batch = index_t(blockIdx.x) / tiles, i0 = tile * BQ;
  index_t out[R];
  attention_batch_index<S>(batch, out);
  out[R - 2] = 0, out[R - 1] = 0;
  const index_t nk = n.keys_of(R > 2 ? out[0] : 0);
  const index_t last = i0 + BQ - 1 < Sq ? i0 + BQ - 1 : Sq - 1;
  const index_t block_keys = N::visible(last, nk);
  index_t seen[4]; // keys each of this thread's rows sees (0 past the last row)
#pragma unroll
  for (index_t r = 0; r < 4; ++r) seen[r] = i0 + 4 * ty + r < Sq ? N::visible(i0 + 4 * ty + r, nk) : 0;

  index_t iq[CQ::rank], ik[CK::rank], iv[CV::rank];
  N::template operand_index<typename CQ::shape_type>(out, 0, 0, iq);
  N::template operand_index<typename CK::shape_type>(out, 0, 0, ik);
  N::template operand_index<typename CV::shape_type>(out, 0, 0, iv);
  const auto* qp = tenfold::detail::get<0>(n.args).data() + CQ::offset_of(iq);
  const auto* kp = tenfold::detail::get<1>(n.args).data() + CK::offset_of(ik);
  const auto* vp = tenfold::detail::get<2>(n.args).data() + CV::offset_of(iv);
  constexpr index_t qi = CQ::strides[CQ::rank - 2], qd = CQ::strides[CQ::rank - 1];
  constexpr index_t kj = CK::strides[CK::rank - 2], kd = CK::strides[CK::rank - 1];
  constexpr index_t vj = CV::strides[CV::rank - 2], ve = CV::strides[CV::rank - 1];

  const float scale = static_cast<float>(n.scale);
  for (index_t t = tid; t < BQ * D; t += tiled_threads) {
    const index_t r = t / D, d = t % D;
    qs[d][r] = i0 + r < Sq ? static_cast<float>(qp[(i0 + r) * qi + d * qd]) * scale : 0.0f;
  }
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float m[4], l[4], o[4][4 * G];
#pragma unroll
  for (index_t r = 0; r < 4; ++r) {
    m[r] = neg_inf, l[r] = 0.0f;
#pragma unroll
    for (index_t c = 0; c < 4 * G; ++c) o[r][c] = 0.0f;
  }

  for (index_t j0 = 0; j0 < block_keys; j0 += BK) {
    __syncthreads(); // the previous tile's ks, vs and ps are read by every thread (and qs written, the first time)
    for (index_t t = tid; t < BK * D; t += tiled_threads) {
      const index_t c = t / D, d = t % D;
      ks[d][c] = j0 + c < block_keys ? static_cast<float>(kp[(j0 + c) * kj + d * kd]) : 0.0f;
    }
    for (index_t t = tid; t < BK * Dv; t += tiled_threads) {
      const index_t c = t / Dv, e = t % Dv;
      vs[c][e] = j0 + c < block_keys ? static_cast<float>(vp[(j0 + c) * vj + e * ve]) : 0.0f;
    }
    __syncthreads();
    // The 4 x 4 patch of scores.
    float s[4][4] = {};
#pragma unroll 8
    for (index_t d = 0; d < D; ++d) {
      const float4 a = *reinterpret_cast<const float4*>(&qs[d][4 * ty]);
      const float4 b = *reinterpret_cast<const float4*>(&ks[d][4 * tx]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (index_t r = 0; r < 4; ++r)
#pragma unroll
        for (index_t c = 0; c < 4; ++c) s[r][c] += av[r] * bv[c];
    }
    // Each row's online softmax over the tile, with the 7 other threads of the row (lanes tx ^ 1, 2, 4).
#pragma unroll
    for (index_t r = 0; r < 4; ++r) {
      float mt = m[r];
#pragma unroll
      for (index_t c = 0; c < 4; ++c) {
        if (j0 + 4 * tx + c >= seen[r]) s[r][c] = neg_inf;
        mt = s[r][c] > mt ? s[r][c] : mt;
      }
#pragma unroll
      for (int w = 1; w < 8; w *= 2) {
        const float x = __shfl_xor_sync(0xffffffffu, mt, w);
        mt = x > mt ? x : mt;
      }
      float p[4], sum = 0.0f;
#pragma unroll
      for (index_t c = 0; c < 4; ++c) {
        p[c] = s[r][c] == neg_inf ? 0.0f : attention_exp(s[r][c] - mt);
        sum += p[c];
      }
#pragma unroll
      for (int w = 1; w < 8; w *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, w);
      const float f = m[r] == neg_inf ? 0.0f : attention_exp(m[r] - mt); // (mt = -inf: nothing seen, f unused)
      if (mt != neg_inf) {
        l[r] = l[r] * f + sum;
#pragma unroll
        for (index_t c = 0; c < 4 * G; ++c) o[r][c] *= f;
        m[r] = mt;
      }
#pragma unroll
      for (index_t c = 0; c < 4; ++c) ps[4 * tx + c][4 * ty + r] = p[c];
    }
    __syncthreads();
    // The output patch += P v over the tile's keys.
#pragma unroll 4
    for (index_t c = 0; c < BK; ++c) {
      const float4 a = *reinterpret_cast<const float4*>(&ps[c][4 * ty]);
      const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (index_t g = 0; g < G; ++g) {
        const float4 b = *reinterpret_cast<const float4*>(&vs[c][32 * g + 4 * tx]);
        const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (index_t r = 0; r < 4; ++r)
#pragma unroll
          for (index_t e = 0; e < 4; ++e) o[r][4 * g + e] += av[r] * bv[e];
      }
    }
  }
  using T = typename Dst::value_type;
#pragma unroll
  for (index_t r = 0; r < 4; ++r) {
    if (i0 + 4 * ty + r >= Sq) break;
    const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
    out[R - 2] = i0 + 4 * ty + r;
#pragma unroll
    for (index_t g = 0; g < G; ++g)
#pragma unroll
      for (index_t e = 0; e < 4; ++e) {
        out[R - 1] = 32 * g + 4 * tx + e;
        dst.data()[Dst::offset_of(out)] = convert<T>(o[r][4 * g + e] * inv);
      }
  }
}

// attention on the device: the tiled kernel where the heads fit it and the keys are many, else the row
// kernel (cuda/attention.hpp), else (heads too wide) a thread per output.
template <class Dst, class N>
void run_attention(const Dst& dst, const N& n, stream_ref s) {
  check_attention_lengths(n);
  if constexpr (tiled_attention<N>())
    launch_attention<attention_tiled_body, true, tiled_rows, tiled_threads>(dst, n, s, "tenfold::cuda attention kernel (tiled)");
  else
    launch_attention<attention_body, fast_attention<N>(), attention_rows<typename N::shape_type>>(dst, n, s, "tenfold::cuda attention kernel");
}
} // namespace tenfold::cuda::detail
