#pragma once
// attention's backward pass on the device (core/attention_grad_node.hpp: FlashAttention-2's
// decomposition), in the forward kernel's mould (cuda/attention.hpp): attention_splits threads per row
// of the output (a warp each, taking a part of every tile, their partials merged at the end), the other
// side through shared memory a tile at a time, nothing of size Sq x Sk held anywhere.
//   stats [.., Sq, 2] and dq [.., Sq, D]: threads per query row, key and value tiles shared;
//   dk [.., Sk, D] and dv [.., Sk, Dv]:   threads per key row, query, g and stats tiles shared.
// A thread keeps its rows (q and g, or k and v) and its accumulator in registers: heads up to
// grad_head_limit wide (together) take these kernels, wider ones a thread per output element through
// the node's at(). The masks are the forward's (causal, bottom-right aligned); every key is read.
#include "tenfold/core/attention_grad_node.hpp"
#include "tenfold/cuda/attention.hpp"

namespace tenfold::cuda::detail {

// Registers per thread: the rows kept plus the accumulator (floats), at most this many.
inline constexpr index_t grad_head_limit = 192;

template <class N>
constexpr index_t attention_grad_registers() {
  using enum tenfold::detail::attention_part;
  constexpr index_t D = N::D, Dv = N::Dv;
  switch (N::part) {
    case stats: return D + 2 * Dv;  // q, g, o
    case dq: return 2 * D + Dv;     // q, g, dq
    case dk: return 2 * D + Dv;     // k, v, dk
    default: return D + Dv;         // k, dv
  }
}
template <class N>
constexpr bool fast_attention_grad() {
  return attention_grad_registers<N>() <= grad_head_limit;
}
// Rows of the other side per shared tile: its rows (and stats) within 32 KiB.
template <class N>
constexpr index_t attention_grad_tile() {
  return N::D + N::Dv <= 128 ? 32 : 16;
}

struct attention_grad_body {
  static constexpr int max_threads = attention_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};

template <class Dst, class N>
__device__ void attention_grad_body::run(const Dst& dst, const N& n) {
  using enum tenfold::detail::attention_part;
  using S = typename N::shape_type;
  using A = compute_t<typename N::value_type>;
  using F = typename N::forward;
  using CQ = typename N::q_type;
  using CK = typename N::k_type;
  using CV = typename N::v_type;
  using CG = typename N::g_type;
  constexpr auto P = N::part;
  constexpr bool by_query = P == stats || P == dq;
  constexpr int R = S::rank;
  constexpr index_t Sq = N::Sq, Sk = N::Sk, D = N::D, Dv = N::Dv, T = attention_grad_tile<N>();
  constexpr index_t Sp = attention_splits<S>, Rb = attention_rows<S>, Tp = T / Sp; // threads and rows per block, tile rows per split
  constexpr index_t rows = by_query ? Sq : Sk, tiles = (rows + Rb - 1) / Rb;
  constexpr index_t W = D, Wv = Dv; // widths of the shared tiles: k and v by query, q and g by key
  __shared__ alignas(16) A a_s[T][W];
  __shared__ alignas(16) A b_s[T][Wv];
  __shared__ A st_s[by_query ? 1 : T][2]; // a query tile's lse and delta (by key only)
  constexpr index_t acc_width = P == dv || P == stats ? Dv : D;
  constexpr index_t Rs = Sp == 1 ? 1 : Rb;  // rows merged through shared memory
  __shared__ A ml[Sp][Rb][2];               // the splits' online softmaxes (stats only)
  __shared__ A sum[Rs][acc_width + 1];      // the splits' accumulators summed (+1: lanes a bank apart)
  __shared__ A scales[Rs];

  const index_t tile = index_t(blockIdx.x) % tiles, batch = index_t(blockIdx.x) / tiles;
  index_t out[R];
  attention_batch_index<S>(batch, out);
  const index_t r = tile * Rb + attention_lane<Sp>(), fc = attention_split<Sp>() * Tp; // row; first tile row of the split
  const bool active = r < rows;
  const index_t row = active ? r : rows - 1;
  out[R - 1] = 0;

  // Batch bases of the operands (every operand has the output's batch axes), and their strides.
  index_t iq[CQ::rank], ik[CK::rank], iv[CV::rank], ig[CG::rank];
  F::template operand_index<typename CQ::shape_type>(out, 0, 0, iq);
  F::template operand_index<typename CK::shape_type>(out, 0, 0, ik);
  F::template operand_index<typename CV::shape_type>(out, 0, 0, iv);
  F::template operand_index<typename CG::shape_type>(out, 0, 0, ig);
  const auto* qp = tenfold::detail::get<0>(n.args).data() + CQ::offset_of(iq);
  const auto* kp = tenfold::detail::get<1>(n.args).data() + CK::offset_of(ik);
  const auto* vp = tenfold::detail::get<2>(n.args).data() + CV::offset_of(iv);
  const auto* gp = tenfold::detail::get<3>(n.args).data() + CG::offset_of(ig);
  constexpr index_t qi = CQ::strides[CQ::rank - 2], qd = CQ::strides[CQ::rank - 1];
  constexpr index_t kj = CK::strides[CK::rank - 2], kd = CK::strides[CK::rank - 1];
  constexpr index_t vj = CV::strides[CV::rank - 2], ve = CV::strides[CV::rank - 1];
  constexpr index_t gi = CG::strides[CG::rank - 2], ge = CG::strides[CG::rank - 1];
  // The stats (lse, delta) of query i: operand 4 of the gradient parts.
  const auto stat = [&](index_t i, index_t which) -> A {
    if constexpr (P == stats) return A(0);
    else {
      using CS = std::remove_cvref_t<decltype(tenfold::detail::get<4>(n.args))>;
      index_t is[CS::rank];
      F::template operand_index<typename CS::shape_type>(out, i, which, is);
      return static_cast<A>(tenfold::detail::get<4>(n.args).data()[CS::offset_of(is)]);
    }
  };

  const A scale = static_cast<A>(n.scale);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  // This thread's rows: by query, q (scaled) and g; by key, k and (for dk) v.
  A x[D], y[Dv];
#pragma unroll
  for (index_t d = 0; d < D; ++d) x[d] = by_query ? static_cast<A>(qp[row * qi + d * qd]) * scale : static_cast<A>(kp[row * kj + d * kd]);
  if constexpr (P != dv) {
#pragma unroll
    for (index_t e = 0; e < Dv; ++e) y[e] = by_query ? static_cast<A>(gp[row * gi + e * ge]) : static_cast<A>(vp[row * vj + e * ve]);
  }
  A acc[acc_width];
#pragma unroll
  for (index_t e = 0; e < acc_width; ++e) acc[e] = A(0);
  A m = neg_inf, l = A(0);                                     // stats: the online softmax
  const A lse = P == dq ? stat(row, 0) : A(0), delta = P == dq ? stat(row, 1) : A(0); // dq: this row's

  // The other side's range this block walks: by query, the keys its last query sees; by key, the
  // queries that see its first key (all of them without the mask).
  const index_t last = tile * Rb + Rb - 1 < rows ? tile * Rb + Rb - 1 : rows - 1;
  index_t c0 = 0, c1 = by_query ? F::visible(last, Sk) : Sq;
  if constexpr (!by_query && N::causal) {
    const index_t first = tile * Rb - (Sk - Sq); // query i sees key j from i = j - (Sk - Sq)
    c0 = first < 0 ? 0 : first > Sq ? Sq : first;
  }
  const index_t seen = by_query && active ? F::visible(r, Sk) : 0;

  for (index_t t0 = c0; t0 < c1; t0 += T) {
    __syncthreads();
    if constexpr (by_query) {
      load_attention_tile(a_s, kp, kj, kd, t0, c1);
      load_attention_tile(b_s, vp, vj, ve, t0, c1);
    } else {
      load_attention_tile(a_s, qp, qi, qd, t0, c1);
      load_attention_tile(b_s, gp, gi, ge, t0, c1);
    }
    if constexpr (!by_query) {
      for (index_t t = threadIdx.x; t < T * 2; t += attention_block) {
        const index_t c = t0 + t / 2;
        st_s[t / 2][t % 2] = c < c1 ? stat(c, t % 2) : A(0);
      }
    }
    __syncthreads();
    if (!active) continue; // (no return: every thread reaches the barriers)
    if constexpr (P == stats) {
      if (t0 + fc < seen) online_softmax_tile(x, split_part<Sp>(a_s), split_part<Sp>(b_s), t0 + fc, seen, m, l, acc);
    } else if constexpr (P == dq) {
      if (t0 + fc >= seen) continue;
#pragma unroll 1
      for (index_t c = fc; c < fc + Tp; ++c) {
        if (t0 + c >= seen) break;
        A s = A(0), dp = A(0);
#pragma unroll
        for (index_t d = 0; d < D; ++d) s += x[d] * a_s[c][d];
#pragma unroll
        for (index_t e = 0; e < Dv; ++e) dp += y[e] * b_s[c][e];
        const A ds = attention_exp(s - lse) * (dp - delta);
#pragma unroll
        for (index_t d = 0; d < D; ++d) acc[d] += ds * a_s[c][d];
      }
    } else {
#pragma unroll 1
      for (index_t c = fc; c < fc + Tp; ++c) {
        const index_t i = t0 + c;
        if (i >= c1) break;
        if (r >= F::visible(i, Sk)) continue; // key r is masked for query i
        A s = A(0);
#pragma unroll
        for (index_t d = 0; d < D; ++d) s += a_s[c][d] * x[d];
        const A p = attention_exp(s * scale - st_s[c][0]);
        if constexpr (P == dv) {
#pragma unroll
          for (index_t e = 0; e < Dv; ++e) acc[e] += p * b_s[c][e];
        } else {
          A dp = A(0);
#pragma unroll
          for (index_t e = 0; e < Dv; ++e) dp += b_s[c][e] * y[e];
          const A ds = p * (dp - st_s[c][1]);
#pragma unroll
          for (index_t d = 0; d < D; ++d) acc[d] += ds * a_s[c][d];
        }
      }
    }
  }
  if constexpr (P == stats) {
    // The splits merged (as the forward's), then lse = M + log L (-inf where no key is seen) and
    // delta = g·O = g·o / L, written by the row's first split.
    using Tv = typename Dst::value_type;
    const merged_softmax<A> st = merge_softmax<Sp>(m, l, ml);
    A dot = A(0);
    if constexpr (Sp == 1) {
#pragma unroll
      for (index_t e = 0; e < Dv; ++e) dot += y[e] * acc[e];
    } else {
#pragma unroll
      for (index_t e = 0; e < Dv; ++e) acc[e] *= st.factor;
      sum_splits<Sp>(acc, sum);
#pragma unroll
      for (index_t e = 0; e < Dv; ++e) dot += y[e] * sum[attention_lane<Sp>()][e];
    }
    if (!active || attention_split<Sp>() != 0) return;
    out[R - 2] = r;
    out[R - 1] = 0;
    dst.data()[Dst::offset_of(out)] = convert<Tv>(st.norm == A(0) ? neg_inf : st.max + attention_log(st.norm));
    out[R - 1] = 1;
    dst.data()[Dst::offset_of(out)] = convert<Tv>(st.norm == A(0) ? A(0) : dot / st.norm);
  } else {
    write_rows<Sp>(dst, out, tile * Rb, rows, acc, P == dv ? A(1) : scale, sum, scales);
  }
}

template <class Dst, class N>
void run_attention_grad_part(const Dst& dst, const N& n, stream_ref s) {
  launch_attention<attention_grad_body, fast_attention_grad<N>(), attention_rows<typename N::shape_type>>(dst, n, s,
                                                                                                        "tenfold::cuda attention backward kernel");
}

// dst's rows [R0, R0 + Rows) and columns [0, Cols) of every batch element: a leaf on dst's memory.
template <class E, index_t R0, index_t Rows, index_t Cols, class Dst>
auto rows_leaf(const Dst& dst) {
  constexpr int R = Dst::rank;
  constexpr auto dims = [] {
    auto d = Dst::shape_type::dims;
    d[R - 2] = Rows, d[R - 1] = Cols;
    return d;
  }();
  return tenfold::detail::leaf<E, shape_from<dims>, tenfold::detail::canon(Dst::strides), Dst::offset + R0 * Dst::strides[R - 2],
                               typename Dst::holder_type>{{}, dst.holder};
}

// attention_grad_node<all> (dq, dk and dv in one node's rows, core/attention_grad_node.hpp) as the
// separate kernels: the stats into a buffer of the stream's (contiguous [..., Sq, 2]), then dk, dv and
// dq, each reading them, into their rows of dst.
template <class Dst, class N>
void run_attention_grad_all(const Dst& dst, const N& n, stream_ref s) {
  using enum tenfold::detail::attention_part;
  using tenfold::detail::attention_grad_node;
  using E = typename Dst::element_type;
  using V = typename N::value_type;
  constexpr index_t Sq = N::Sq, Sk = N::Sk, D = N::D;
  using CQ = typename N::q_type;
  using CK = typename N::k_type;
  using CV = typename N::v_type;
  using CG = typename N::g_type;
  const auto& a = n.args;
  const auto& q = tenfold::detail::get<0>(a);
  const auto& k = tenfold::detail::get<1>(a);
  const auto& v = tenfold::detail::get<2>(a);
  const auto& g = tenfold::detail::get<3>(a);
  using Stats = attention_grad_node<stats, N::causal, CQ, CK, CV, CG>;
  using SS = typename Stats::shape_type;
  const stream_buffer buffer(std::size_t(SS::size) * sizeof(V), s);
  run_attention_grad_part(device_leaf<V, SS>{{}, {reinterpret_cast<V*>(buffer.data())}}, Stats{{}, {q, k, v, g}, n.scale}, s);
  const device_leaf<const V, SS> st{{}, {reinterpret_cast<const V*>(buffer.data())}};
  using ST = std::remove_cvref_t<decltype(st)>;
  run_attention_grad_part(rows_leaf<E, Sq, Sk, D>(dst), attention_grad_node<dk, N::causal, CQ, CK, CV, CG, ST>{{}, {q, k, v, g, st}, n.scale}, s);
  run_attention_grad_part(rows_leaf<E, Sq + Sk, Sk, D>(dst),
                          attention_grad_node<dv, N::causal, CQ, CK, CV, CG, ST>{{}, {q, k, v, g, st}, n.scale}, s);
  run_attention_grad_part(rows_leaf<E, 0, Sq, D>(dst), attention_grad_node<dq, N::causal, CQ, CK, CV, CG, ST>{{}, {q, k, v, g, st}, n.scale}, s);
}

template <class Dst, class N>
void run_attention_grad(const Dst& dst, const N& n, stream_ref s) {
  if constexpr (N::part == tenfold::detail::attention_part::all) run_attention_grad_all(dst, n, s);
  else run_attention_grad_part(dst, n, s);
}
} // namespace tenfold::cuda::detail
