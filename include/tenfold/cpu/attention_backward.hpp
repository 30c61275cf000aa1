#pragma once
// attention's backward pass on the CPU (the nodes: core/attention_grad_node.hpp), flash-style: every
// kernel recomputes its block of scores from q and k, and none holds more than a block of them.
//  - stats (lse_i, δ_i per query row): the forward kernel (cpu/attention.hpp) with another epilogue:
//    lse = m + log l, δ = g_i·O_i / l.
//  - dq: per block of query rows (as the forward), over the key blocks: S = s Q Kᵀ, dP = G Vᵀ,
//    dS = exp(S - lse) ∘ (dP - δ), dQ += dS K; then dQ·s.
//  - dk, dv: per block of key rows, over the query blocks, the transposed products: Sᵀ = s K Qᵀ,
//    Pᵀ = exp(Sᵀ - lse) (lse along the row), dV += Pᵀ G; dPᵀ = V Gᵀ, dSᵀ = Pᵀ ∘ (dPᵀ - δ),
//    dK += dSᵀ Q; then dK·s.
//  - all three together (where v is as wide as q and k), per batch element: for each block of query
//    rows S and dP over every key its rows see, kept (Br x Sk), the softmax and δ = Σ_j P_ij dP_ij
//    from them, dS in place; dQ = dS K, and dK += dSᵀ Q, dV += Pᵀ G over the block's keys. Five
//    products a block and one exp per score, against the separate kernels' ten and four.
// Each output block is one task's, summed in a fixed order: results do not depend on the thread count.
// The right-hand operands are packed per thread and batch element in NR-wide panels, as the forward
// packs Kᵀ and V, and every product runs on the forward's micro-kernel (attention_tile).
#include "tenfold/core/attention_grad_node.hpp"
#include "tenfold/cpu/attention.hpp"

namespace tenfold::cpu {

// Per-thread scratch of the dq and dk/dv kernels.
template <class T>
class attention_grad_workspace {
  template <int>
  struct tag;

 public:
  scratch_buffer<T, tag<0>> b1, b2, b3; // packed right-hand operands of one batch element
  scratch_buffer<T, tag<1>> stats;      // lse and δ of its query rows (dk, dv)
  scratch_buffer<T, tag<2>> a1, a2;     // the task's own rows, as the left-hand operands
  scratch_buffer<T, tag<3>> s, dp, acc; // a block of scores, of dP, and the output block
  scratch_buffer<T, tag<4>> b4, b5, dk, dv, pt, dst; // all: Q and G packed, dK and dV, Pᵀ and dSᵀ
  // What the packed buffers hold: the evaluation and the operands' addresses (a batch axis broadcast
  // with stride 0 repeats one operand's address, not the others').
  std::uint64_t call = 0;
  std::array<const void*, 3> at{};
  static attention_grad_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] { local().grow_to_largest(); }), true);
    static thread_local attention_grad_workspace w;
    return w;
  }
  void grow_to_largest() {
    b1.grow_to_largest(), b2.grow_to_largest(), b3.grow_to_largest(), stats.grow_to_largest(), a1.grow_to_largest(),
        a2.grow_to_largest(), s.grow_to_largest(), dp.grow_to_largest(), acc.grow_to_largest(), b4.grow_to_largest(),
        b5.grow_to_largest(), dk.grow_to_largest(), dv.grow_to_largest(), pt.grow_to_largest(), dst.grow_to_largest();
  }
};

// A row of scores s[0, n) into P = exp(s - lse) (or, with Ds, dS = P (dp - δ)), 0 below lo. Along a row
// of the forward's orientation lse and δ are the row's (lse[0], delta[0]); along a transposed row
// (PerColumn) each element has its own, lse[i] and delta[i]. exp is the op table's (ops/simd_exp.hpp on
// AVX2 and AVX-512); a ragged end is one more vector through a buffer (its lanes past n padded), not a
// scalar loop of libm's expf (causal rows end anywhere: a tenth of the decoder's probabilities).
template <class T, bool Ds, bool PerColumn>
void probability_row(T* s, const T* dp, index_t lo, index_t n, const T* lse, const T* delta) {
  using B = batch<T>;
  constexpr index_t W = lanes<T>;
  const auto p_of = [](const B& sv, const B& shift, const B& dpv, const B& dv) {
    B p = ops::exp::simd(sv - shift);
    if constexpr (Ds) p *= dpv - dv;
    return p;
  };
  index_t i = 0;
  for (; i < lo; ++i) s[i] = T(0);
  for (; i + W <= n; i += W) {
    const B shift = PerColumn ? B::load_unaligned(lse + i) : B(lse[0]);
    const B d = Ds ? (PerColumn ? B::load_unaligned(delta + i) : B(delta[0])) : B(T(0));
    p_of(B::load_unaligned(s + i), shift, Ds ? B::load_unaligned(dp + i) : B(T(0)), d).store_unaligned(s + i);
  }
  if (i < n) {
    alignas(default_alignment) T sb[W], lb[W], pb[W], db[W];
    const index_t r = n - i;
    for (index_t q = 0; q < W; ++q) {
      lb[q] = PerColumn ? (q < r ? lse[i + q] : T(0)) : lse[0];
      sb[q] = q < r ? s[i + q] : lb[q]; // a padded lane: exp(0)
      pb[q] = Ds && q < r ? dp[i + q] : T(0);
      db[q] = Ds ? (PerColumn ? (q < r ? delta[i + q] : T(0)) : delta[0]) : T(0);
    }
    p_of(B::load_aligned(sb), B::load_aligned(lb), B::load_aligned(pb), B::load_aligned(db)).store_aligned(sb);
    for (index_t q = 0; q < r; ++q) s[i + q] = sb[q];
  }
}

// Rows [r0, r0 + rows) of a [rows x cols] matrix of leaf L's batch element into a (row stride cols),
// times `scale`, in T.
template <class T, class M>
void load_rows(const M& m, index_t r0, index_t rows, index_t cols, T scale, T* a) {
  for (index_t r = 0; r < rows; ++r)
    for (index_t c = 0; c < cols; ++c) a[r * cols + c] = scale * static_cast<T>(m.p[(r0 + r) * m.rs + c * m.cs]);
}

// Stores an accumulated block (row stride lda) times `scale` at rows [r0, r0 + rows) of dst's batch element.
template <class Dst, class T, class Idx>
void store_block(const Dst& dst, const Idx& idx, index_t r0, index_t rows, index_t cols, const T* acc, index_t lda, T scale) {
  constexpr int R = Dst::rank;
  using E = typename Dst::value_type;
  const index_t off = batch_offset<Dst>(idx);
  for (index_t r = 0; r < rows; ++r) {
    E* out = dst.data() + off + (r0 + r) * Dst::strides[R - 2];
    for (index_t c = 0; c < cols; ++c) out[c * Dst::strides[R - 1]] = static_cast<E>(scale * acc[r * lda + c]);
  }
}

template <class M>
auto transposed(const M& m) {
  return M{m.p, m.cs, m.rs};
}

// lse and δ per query row: the forward pass, then g·O / l.
template <class Dst, class N>
void run_attention_stats(const Dst& dst, const N& n) {
  using T = compute_t<typename N::value_type>;
  constexpr int R = N::rank;
  using LG = typename N::g_type;
  const LG& gl = detail::get<3>(n.args);
  attention_blocks(n, [&](const auto& idx, index_t i0, index_t br, const T* o, index_t ldo, const T* m, const T* l) {
    const auto gm = batch_matrix<LG, R>(gl, idx.data());
    const index_t off = batch_offset<Dst>(idx);
    using E = typename Dst::value_type;
    for (index_t r = 0; r < br; ++r) {
      T delta = T(0);
      for (index_t e = 0; e < N::Dv; ++e) delta += static_cast<T>(gm.p[(i0 + r) * gm.rs + e * gm.cs]) * o[r * ldo + e];
      E* out = dst.data() + off + (i0 + r) * Dst::strides[R - 2];
      out[0] = static_cast<E>(m[r] + std::log(l[r])); // every row sees a key (the derivative requires it)
      out[Dst::strides[R - 1]] = static_cast<E>(delta / l[r]);
    }
  });
}

// dq, per block of query rows.
template <class Dst, class N>
void run_attention_dq(const Dst& dst, const N& n) {
  using T = compute_t<typename N::value_type>;
  constexpr int R = N::rank;
  using Bk = attention_blocking<T>;
  constexpr index_t MR = Bk::MR, NR = Bk::NR, Br = Bk::Br, Bc = Bk::Bc;
  constexpr index_t Sq = N::Sq, Sk = N::Sk, D = N::D, Dv = N::Dv;
  constexpr index_t ldk = round_up(Sk, NR), ldd = round_up(D, NR), lda = ldd + Bk::W, lds = Bc + Bk::W;
  constexpr index_t q_blocks = (Sq + Br - 1) / Br, batches = detail::product(N::shape_type::dims, 0, R - 2);
  const std::uint64_t call = ++attention_calls;
  const auto& tiles = attention_tiles<T>;
  const T scale = static_cast<T>(n.scale);
  run_attention_tasks(batches * q_blocks, 2.0 * Sq * Sk * (2 * D + Dv) * batches, [&](index_t t) {
    auto& ws = attention_grad_workspace<T>::local();
    std::array<index_t, R + 1> idx{};
    detail::unravel<shape_from<prefix_dims<typename N::shape_type, R - 2>()>>(t / q_blocks, idx.data());
    const auto qm = batch_matrix<typename N::q_type, R>(detail::get<0>(n.args), idx.data());
    const auto km = batch_matrix<typename N::k_type, R>(detail::get<1>(n.args), idx.data());
    const auto vm = batch_matrix<typename N::v_type, R>(detail::get<2>(n.args), idx.data());
    const auto gm = batch_matrix<typename N::g_type, R>(detail::get<3>(n.args), idx.data());
    const auto sm = batch_matrix<std::remove_cvref_t<decltype(detail::get<4>(n.args))>, R>(detail::get<4>(n.args), idx.data());
    // Kᵀ (keys [c, c + NR) at kt + c·D), Vᵀ (at vt + c·Dv) and K (columns [d, d + NR) at kp + d·Sk)
    T* kt = ws.b1.get(D * ldk);
    T* vt = ws.b2.get(Dv * ldk);
    T* kp = ws.b3.get(Sk * ldd);
    const std::array<const void*, 3> packed{km.p, vm.p, nullptr};
    if (ws.call != call || ws.at != packed) {
      pack_b<T>(transposed(km), 0, D, 0, Sk, kt);
      pack_b<T>(transposed(vm), 0, Dv, 0, Sk, vt);
      pack_b<T>(km, 0, Sk, 0, D, kp);
      ws.call = call, ws.at = packed;
    }
    const index_t i0 = t % q_blocks * Br, br = std::min(Br, Sq - i0);
    T* qs = ws.a1.get(Br * D);
    T* gs = ws.a2.get(Br * Dv);
    T* s = ws.s.get(Br * lds);
    T* dp = ws.dp.get(Br * lds);
    T* acc = ws.acc.get(Br * lda);
    T* st = ws.stats.get(2 * Br);
    load_rows(qm, i0, br, D, scale, qs);
    load_rows(gm, i0, br, Dv, T(1), gs);
    for (index_t r = 0; r < br; ++r) {
      st[2 * r] = static_cast<T>(sm.p[(i0 + r) * sm.rs]);
      st[2 * r + 1] = static_cast<T>(sm.p[(i0 + r) * sm.rs + sm.cs]);
      for (index_t d = 0; d < lda; ++d) acc[r * lda + d] = T(0);
    }
    const index_t kend = n.visible(i0 + br - 1);
    for (index_t c0 = 0; c0 < kend; c0 += Bc)
      for (index_t r0 = 0; r0 < br; r0 += MR) {
        const index_t rows = std::min(MR, br - r0);
        const index_t kc = std::clamp<index_t>(n.visible(i0 + r0 + rows - 1) - c0, 0, Bc);
        if (kc == 0) continue;
        for (index_t p = 0; p < kc; p += NR) {
          tiles[rows - 1](qs + r0 * D, D, kt + (c0 + p) * D, NR, D, s + r0 * lds + p, lds, false);
          tiles[rows - 1](gs + r0 * Dv, Dv, vt + (c0 + p) * Dv, NR, Dv, dp + r0 * lds + p, lds, false);
        }
        for (index_t r = r0; r < r0 + rows; ++r) {
          const index_t seen = std::clamp<index_t>(n.visible(i0 + r) - c0, 0, kc);
          probability_row<T, true, false>(s + r * lds, dp + r * lds, 0, seen, st + 2 * r, st + 2 * r + 1);
          for (index_t j = seen; j < kc; ++j) s[r * lds + j] = T(0);
        }
        for (index_t p = 0; p < ldd; p += NR)
          tiles[rows - 1](s + r0 * lds, lds, kp + p * Sk + c0 * NR, NR, kc, acc + r0 * lda + p, lda, true);
      }
    store_block(dst, idx, i0, br, D, acc, lda, scale);
  });
}

// dk or dv, per block of key rows.
template <class Dst, class N>
void run_attention_dkv(const Dst& dst, const N& n) {
  using T = compute_t<typename N::value_type>;
  constexpr bool dk = N::part == detail::attention_part::dk;
  constexpr int R = N::rank;
  using Bk = attention_blocking<T>;
  constexpr index_t MR = Bk::MR, NR = Bk::NR, Br = Bk::Br, Bc = Bk::Bc, W = Bk::W;
  constexpr index_t Sq = N::Sq, Sk = N::Sk, D = N::D, Dv = N::Dv;
  constexpr index_t out_cols = dk ? D : Dv, ldq = round_up(Sq, NR), ldd = round_up(out_cols, NR), lda = ldd + W,
                    lds = Bc + W;
  constexpr index_t k_blocks = (Sk + Br - 1) / Br, batches = detail::product(N::shape_type::dims, 0, R - 2);
  const std::uint64_t call = ++attention_calls;
  const auto& tiles = attention_tiles<T>;
  const T scale = static_cast<T>(n.scale);
  constexpr double flops = 2.0 * Sq * Sk * (dk ? 2 * D + Dv : D + Dv) * batches;
  run_attention_tasks(batches * k_blocks, flops, [&](index_t t) {
    auto& ws = attention_grad_workspace<T>::local();
    std::array<index_t, R + 1> idx{};
    detail::unravel<shape_from<prefix_dims<typename N::shape_type, R - 2>()>>(t / k_blocks, idx.data());
    const auto qm = batch_matrix<typename N::q_type, R>(detail::get<0>(n.args), idx.data());
    const auto km = batch_matrix<typename N::k_type, R>(detail::get<1>(n.args), idx.data());
    const auto vm = batch_matrix<typename N::v_type, R>(detail::get<2>(n.args), idx.data());
    const auto gm = batch_matrix<typename N::g_type, R>(detail::get<3>(n.args), idx.data());
    const auto sm = batch_matrix<std::remove_cvref_t<decltype(detail::get<4>(n.args))>, R>(detail::get<4>(n.args), idx.data());
    // Qᵀ (queries [c, c + NR) at qt + c·D); for dk also Gᵀ (at gt + c·Dv) and Q (columns [d, d + NR)
    // at qp + d·Sq), for dv G (columns [e, e + NR) at gp + e·Sq); lse and δ per query, past Sq +inf
    // and 0 (a padded lane's P is then 0).
    T* qt = ws.b1.get(D * ldq);
    T* gt = ws.b2.get(dk ? Dv * ldq : 1);
    T* rhs = ws.b3.get(Sq * ldd);
    T* lse = ws.stats.get(2 * (ldq + W));
    T* delta = lse + ldq + W;
    const std::array<const void*, 3> packed{qm.p, gm.p, sm.p};
    if (ws.call != call || ws.at != packed) {
      pack_b<T>(transposed(qm), 0, D, 0, Sq, qt);
      if constexpr (dk) {
        pack_b<T>(transposed(gm), 0, Dv, 0, Sq, gt);
        pack_b<T>(qm, 0, Sq, 0, D, rhs);
      } else {
        pack_b<T>(gm, 0, Sq, 0, Dv, rhs);
      }
      for (index_t i = 0; i < ldq + W; ++i) {
        lse[i] = i < Sq ? static_cast<T>(sm.p[i * sm.rs]) : std::numeric_limits<T>::infinity();
        delta[i] = i < Sq ? static_cast<T>(sm.p[i * sm.rs + sm.cs]) : T(0);
      }
      ws.call = call, ws.at = packed;
    }
    const index_t j0 = t % k_blocks * Br, bk = std::min(Br, Sk - j0);
    T* ks = ws.a1.get(Br * D);
    T* vs = ws.a2.get(dk ? Br * Dv : 1);
    T* s = ws.s.get(Br * lds);
    T* dp = ws.dp.get(dk ? Br * lds : 1);
    T* acc = ws.acc.get(Br * lda);
    load_rows(km, j0, bk, D, scale, ks);
    if constexpr (dk) load_rows(vm, j0, bk, Dv, T(1), vs);
    for (index_t i = 0; i < bk * lda; ++i) acc[i] = T(0);
    // Query i sees key j when j < visible(i), i.e. i >= j - (Sk - Sq) under the causal mask: the first
    // query block that sees the block's first key (a panel boundary: the packed panels start there).
    const index_t first = N::causal ? std::max<index_t>(0, j0 - (Sk - Sq)) / NR * NR : 0;
    for (index_t c0 = first; c0 < Sq; c0 += Bc) {
      const index_t qc = std::min(Bc, Sq - c0);
      for (index_t r0 = 0; r0 < bk; r0 += MR) {
        const index_t rows = std::min(MR, bk - r0);
        for (index_t p = 0; p < qc; p += NR) {
          tiles[rows - 1](ks + r0 * D, D, qt + (c0 + p) * D, NR, D, s + r0 * lds + p, lds, false);
          if constexpr (dk) tiles[rows - 1](vs + r0 * Dv, Dv, gt + (c0 + p) * Dv, NR, Dv, dp + r0 * lds + p, lds, false);
        }
        for (index_t r = r0; r < r0 + rows; ++r) {
          const index_t j = j0 + r, lo = N::causal ? std::clamp<index_t>(j - (Sk - Sq) - c0, 0, qc) : 0;
          probability_row<T, dk, true>(s + r * lds, dp + r * lds, lo, qc, lse + c0, delta + c0);
        }
        for (index_t p = 0; p < ldd; p += NR)
          tiles[rows - 1](s + r0 * lds, lds, rhs + p * Sq + c0 * NR, NR, qc, acc + r0 * lda + p, lda, true);
      }
    }
    store_block(dst, idx, j0, bk, out_cols, acc, lda, dk ? scale : T(1));
  });
}

// A block's query rows r in [0, rows) (row stride lds): scores s[0, n_r) into P = softmax(s) (in s) and
// their dP, dp[0, n_r), into dS = P (dP - δ)·scale with δ = Σ_j P_j dP_j (in dp); both zero in [n_r, end),
// n_r = visible(r) >= 1; each row has room for whole vectors to end. Stage by stage over the rows (the
// maxima, then the exponentials and their sums, ...): a row's reductions are a chain of dependent steps,
// and rows side by side give the core independent chains to overlap (one row at a time, each waited).
// `red`: scratch for 2 x rows values.
template <class T, class Visible>
void softmax_backward_rows(T* s, T* dp, index_t lds, index_t rows, Visible&& visible, index_t end, T scale, T* red) {
  using B = batch<T>;
  constexpr index_t W = lanes<T>;
  const B sc(scale);
  for (index_t r = 0; r < rows; ++r) { // the lanes past n: a score of -inf (P = 0) and a dP of 0; the maximum
    T* sr = s + r * lds;
    T* dr = dp + r * lds;
    const index_t n = visible(r), nv = round_up(n, W), full = n - n % W;
    if (full < nv) {
      const auto keep = lane_indices<T>() < B(T(n - full));
      xsimd::select(keep, B::load_unaligned(sr + full), B(-std::numeric_limits<T>::infinity())).store_unaligned(sr + full);
      xsimd::select(keep, B::load_unaligned(dr + full), B(T(0))).store_unaligned(dr + full);
    }
    B mx(-std::numeric_limits<T>::infinity());
    for (index_t j = 0; j < nv; j += W) mx = xsimd::max(mx, B::load_unaligned(sr + j));
    red[r] = lanes_max(mx);
  }
  for (index_t r = 0; r < rows; ++r) { // P unnormalised, and its sum
    T* sr = s + r * lds;
    const index_t nv = round_up(visible(r), W);
    const B m(red[r]);
    B sum(T(0));
    for (index_t j = 0; j < nv; j += W) {
      const B p = ops::exp::simd(B::load_unaligned(sr + j) - m);
      sum += p;
      p.store_unaligned(sr + j);
    }
    red[rows + r] = tenfold::simd::hadd(sum);
  }
  for (index_t r = 0; r < rows; ++r) { // P, and δ
    T* sr = s + r * lds;
    const T* dr = dp + r * lds;
    const index_t nv = round_up(visible(r), W);
    const B inv(T(1) / red[rows + r]);
    B dsum(T(0));
    for (index_t j = 0; j < nv; j += W) {
      const B p = B::load_unaligned(sr + j) * inv;
      p.store_unaligned(sr + j);
      dsum = xsimd::fma(p, B::load_unaligned(dr + j), dsum);
    }
    red[r] = tenfold::simd::hadd(dsum);
  }
  for (index_t r = 0; r < rows; ++r) { // dS
    T* sr = s + r * lds;
    T* dr = dp + r * lds;
    const index_t nv = round_up(visible(r), W);
    const B delta(red[r]);
    for (index_t j = 0; j < nv; j += W) (B::load_unaligned(sr + j) * (B::load_unaligned(dr + j) - delta) * sc).store_unaligned(dr + j);
    for (index_t j = nv; j < end; j += W) B(T(0)).store_unaligned(sr + j), B(T(0)).store_unaligned(dr + j);
  }
}

// m's rows as a right-hand operand of the tiles: in place, or packed into buf (rows x cols).
template <bool InPlace, class T, class M>
tile_rhs<T> rhs_of(const M& m, index_t rows, index_t cols, T* buf) {
  if constexpr (!InPlace) pack_b<T>(m, 0, rows, 0, cols, buf);
  return rhs_at<InPlace, T>(m, buf, rows);
}

// dq, dk and dv into rows [0, Sq), [Sq, Sq + Sk) and [Sq + Sk, Sq + 2 Sk) of dst, a task per batch element.
// The scale goes into the packed Kᵀ (S = Q (s Kᵀ)) and into dS (dQ = s dS K, dK = s dSᵀ Q); Q, K and G are
// read where they lie when tile_in_place_v, and dq, dk and dv written into dst where it is T with
// contiguous rows (dK and dV accumulated there over the query blocks, each key's rows first written
// by the first block that sees it), else through the workspace.
template <class Dst, class N>
void run_attention_grad_all(const Dst& dst, const N& n) {
  using T = compute_t<typename N::value_type>;
  constexpr int R = N::rank;
  using Bk = attention_blocking<T>;
  constexpr index_t MR = Bk::MR, NR = Bk::NR, Br = Bk::Br, W = Bk::W;
  constexpr index_t Sq = N::Sq, Sk = N::Sk, D = N::D;
  constexpr index_t ldk = round_up(Sk, NR), ldd = round_up(D, NR), lda = ldd + W, lds = ldk + W;
  constexpr index_t batches = detail::product(N::shape_type::dims, 0, R - 2);
  constexpr bool q_here = tile_in_place_v<typename N::q_type, T, D>, k_here = tile_in_place_v<typename N::k_type, T, D>,
                 g_here = tile_in_place_v<typename N::g_type, T, D>;
  constexpr bool out_here = std::is_same_v<std::remove_const_t<typename Dst::element_type>, T> && Dst::strides[R - 1] == 1 && D % NR == 0;
  const auto& tiles = attention_tiles<T>;
  const auto& tiles_t = attention_tiles<T, true>;
  // the blocks of scores and of dP read as their transposes in place while both fit in a 32 KiB L1
  constexpr bool in_place = 2 * Br * lds * index_t(sizeof(T)) <= 32768;
  const T scale = static_cast<T>(n.scale);
  run_attention_tasks(batches, 10.0 * Sq * Sk * D * batches, [&](index_t t) {
    auto& ws = attention_grad_workspace<T>::local();
    std::array<index_t, R + 1> idx{};
    detail::unravel<shape_from<prefix_dims<typename N::shape_type, R - 2>()>>(t, idx.data());
    const auto qm = batch_matrix<typename N::q_type, R>(detail::get<0>(n.args), idx.data());
    const auto km = batch_matrix<typename N::k_type, R>(detail::get<1>(n.args), idx.data());
    const auto vm = batch_matrix<typename N::v_type, R>(detail::get<2>(n.args), idx.data());
    const auto gm = batch_matrix<typename N::g_type, R>(detail::get<3>(n.args), idx.data());
    // s Kᵀ and Vᵀ (keys [c, c + NR) at kt + c·D); K, Q and G as right-hand operands (dQ, dK, dV)
    T* kt = ws.b1.get(D * ldk);
    T* vt = ws.b2.get(D * ldk);
    pack_b<T>(transposed(km), 0, D, 0, Sk, kt);
    for (index_t i = 0; i < D * ldk; ++i) kt[i] *= scale;
    pack_b<T>(transposed(vm), 0, D, 0, Sk, vt);
    const tile_rhs<T> k_rhs = rhs_of<k_here, T>(km, Sk, D, k_here ? nullptr : ws.b3.get(Sk * ldd));
    const tile_rhs<T> q_rhs = rhs_of<q_here, T>(qm, Sq, D, q_here ? nullptr : ws.b4.get(Sq * ldd));
    const tile_rhs<T> g_rhs = rhs_of<g_here, T>(gm, Sq, D, g_here ? nullptr : ws.b5.get(Sq * ldd));
    T* qs = q_here ? nullptr : ws.a1.get(Br * D);
    T* gs = g_here ? nullptr : ws.a2.get(Br * D);
    T* s = ws.s.get(Br * lds);
    T* dp = ws.dp.get(Br * lds);
    T* red = ws.stats.get(2 * Br);
    // where dq (the block's rows), dk and dv go, rows ldc apart
    T *dq, *dk, *dv;
    index_t ldc;
    if constexpr (out_here) {
      ldc = Dst::strides[R - 2];
      T* out = dst.data() + batch_offset<Dst>(idx);
      dq = out, dk = out + Sq * ldc, dv = out + (Sq + Sk) * ldc;
    } else {
      ldc = lda;
      dq = ws.acc.get(Br * lda), dk = ws.dk.get(Sk * lda), dv = ws.dv.get(Sk * lda);
    }
    const auto zero_rows = [&](index_t from, index_t to) {
      for (index_t j = from; j < to; ++j)
        for (index_t c = 0; c < ldd; ++c) dk[j * ldc + c] = T(0), dv[j * ldc + c] = T(0);
    };
    T* pt = in_place ? nullptr : ws.pt.get(ldk * Br);
    T* dst_t = in_place ? nullptr : ws.dst.get(ldk * Br);
    index_t seen = 0; // keys [0, seen) have rows in dk and dv
    for (index_t i0 = 0; i0 < Sq; i0 += Br) {
      const index_t br = std::min(Br, Sq - i0), kend = n.visible(i0 + br - 1); // (the block's last row sees the most keys)
      const T* qa = qs;
      const T* ga = gs;
      index_t ldq = D, ldg = D;
      if constexpr (q_here) qa = qm.p + i0 * qm.rs, ldq = qm.rs;
      else load_rows(qm, i0, br, D, T(1), qs);
      if constexpr (g_here) ga = gm.p + i0 * gm.rs, ldg = gm.rs;
      else load_rows(gm, i0, br, D, T(1), gs);
      for (index_t r0 = 0; r0 < br; r0 += MR) {
        const index_t rows = std::min(MR, br - r0), kr = n.visible(i0 + r0 + rows - 1);
        for (index_t p = 0; p < kr; p += NR) {
          tiles[rows - 1](qa + r0 * ldq, ldq, kt + p * D, NR, D, s + r0 * lds + p, lds, false);
          tiles[rows - 1](ga + r0 * ldg, ldg, vt + p * D, NR, D, dp + r0 * lds + p, lds, false);
        }
      }
      softmax_backward_rows(s, dp, lds, br, [&](index_t r) { return n.visible(i0 + r); }, round_up(kend, W), scale, red);
      T* dq_block = out_here ? dq + i0 * ldc : dq;
      for (index_t r0 = 0; r0 < br; r0 += MR) {
        const index_t rows = std::min(MR, br - r0);
        for (index_t p = 0; p < ldd; p += NR) tiles[rows - 1](dp + r0 * lds, lds, k_rhs.at(p, 0), k_rhs.ld, kend, dq_block + r0 * ldc + p, ldc, false);
      }
      if constexpr (!out_here) store_block(dst, idx, i0, br, D, dq, lda, T(1));
      // dK += dSᵀ Q and dV += Pᵀ G (a key's rows written, not added to, by the first block that sees it).
      // Where the blocks of dS and P stay in L1 (short rows of keys), read as their transposes where
      // they lie (a key's values of the block's query rows are a column: MR keys at one query row are
      // adjacent); longer rows are copied transposed first, each k of a tile then one line instead of
      // a line per query row (measured, bench_attention's backward on Intel model 167, one thread: 64
      // keys 0.91-0.98 -> 0.69-0.73 ms read in place, 512 keys 1-5% slower).
      const T* at = dp;
      const T* pa = s;
      index_t ldt = lds;
      if constexpr (!in_place) {
        for (index_t j = 0; j < kend; ++j)
          for (index_t r = 0; r < br; ++r) pt[j * Br + r] = s[r * lds + j], dst_t[j * Br + r] = dp[r * lds + j];
        at = dst_t, pa = pt, ldt = Br;
      }
      index_t q_lo = 0; // the block's first query row that sees key j0 (those before it add nothing: P = dS = 0)
      for (index_t j0 = 0; j0 < kend; j0 += MR) {
        const index_t rows = std::min(MR, kend - j0);
        while (n.visible(i0 + q_lo) <= j0) ++q_lo; // (a row sees j0 < kend: the block's last)
        if (j0 < seen && j0 + rows > seen) zero_rows(seen, j0 + rows);
        const bool add = j0 < seen;
        const T* a_ds = in_place ? at + q_lo * ldt + j0 : at + j0 * Br + q_lo;
        const T* a_p = in_place ? pa + q_lo * ldt + j0 : pa + j0 * Br + q_lo;
        const auto& tl = in_place ? tiles_t : tiles;
        for (index_t p = 0; p < ldd; p += NR) {
          tl[rows - 1](a_ds, ldt, q_rhs.at(p, i0 + q_lo), q_rhs.ld, br - q_lo, dk + j0 * ldc + p, ldc, add);
          tl[rows - 1](a_p, ldt, g_rhs.at(p, i0 + q_lo), g_rhs.ld, br - q_lo, dv + j0 * ldc + p, ldc, add);
        }
      }
      seen = std::max(seen, kend);
    }
    zero_rows(seen, Sk); // keys no query sees
    if constexpr (!out_here) {
      store_block(dst, idx, Sq, Sk, D, dk, lda, T(1));
      store_block(dst, idx, Sq + Sk, Sk, D, dv, lda, T(1));
    }
  });
}

// dst: a writable leaf of N's shape; N's operands: strided leaves (the planner makes them so).
template <class Dst, class N>
void run_attention_grad(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using T = compute_t<typename N::value_type>;
  if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    std::array<index_t, S::rank + 1> idx{}; // other element types: each element through `at`
    for (index_t t = 0; t < S::size; ++t) {
      detail::unravel<S>(t, idx.data());
      dst.data()[Dst::offset_of(idx.data())] = static_cast<typename Dst::value_type>(n.at(idx.data()));
    }
  } else if constexpr (N::part == detail::attention_part::all) {
    run_attention_grad_all(dst, n);
  } else if constexpr (N::part == detail::attention_part::stats) {
    run_attention_stats(dst, n);
  } else if constexpr (N::part == detail::attention_part::dq) {
    run_attention_dq(dst, n);
  } else {
    run_attention_dkv(dst, n);
  }
}
} // namespace tenfold::cpu
