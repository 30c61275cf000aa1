#pragma once
// attention(q, k, v) on the CPU without the Sq x Sk score matrix: flash-style tiling with an online
// softmax (Dao et al., FlashAttention; Milakov & Gimelshein, online normaliser). Per batch element and
// block of Br query rows, the keys are visited in blocks of Bc:
//   S = Q_blk K_blkᵀ (Kᵀ packed pre-scaled), m' = max(m, rowmax S), P = exp(S - m'),
//   l = l·exp(m - m') + rowsum P,  O = O·exp(m - m') + P V_blk,  and at the end O / l.
// Only a Br x Bc block of scores lives at a time (in L1); Kᵀ and V of the current batch element are
// packed once per thread (padded to whole register panels, cast to the compute type), and all scratch
// is per thread, grown to the largest size asked for and then kept: nothing is allocated after warm-up.
// Both products run on one register-tiled micro-kernel (rows of A broadcast, panels of B in vectors).
// Every output element is computed by the same sequence of operations whatever the thread count or the
// task a row falls in, so results are bitwise independent of threading. One query row alone (a decode
// step) takes its own path (run_one_query, below: nothing packed); its last bits may differ from the
// same row's evaluated among other queries.
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>

#include "tenfold/core/attention_node.hpp"
#include "tenfold/cpu/gemm_eval.hpp"
#include "tenfold/cpu/gemm_kernels.hpp"
#include "tenfold/cpu/thread_pool.hpp"
#include "tenfold/plan/bounded.hpp"
#include "tenfold/ops/table_unary.hpp"
#include "tenfold/tuned/attention_cpu.hpp"

namespace tenfold::cpu {

// The forward pass's tiles for the build's machine: the tuned table's entry, else the defaults
// (cpu/attention_config.hpp).
constexpr attention_config attention_config_for() {
  for (const attention_tuned_entry& e : tuned::attention_cpu)
    if (e.machine == build_machine) return e.config;
  return {};
}

// The register tile, and the default tiles (which the backward's own passes use: the tuner times the
// forward pass only).
template <class T>
struct attention_blocking {
  using G = gemm_tile<T>;
  static constexpr index_t MR = G::MR, NR = G::NR, W = G::W;
  static constexpr index_t Br = attention_config{}.row_panels * MR;
  static constexpr index_t Bc = attention_config{}.key_panels * NR;
};

// Per-thread scratch: packed Kᵀ and V of one batch element, the query block, its scores and output.
template <class T>
class attention_workspace {
  struct kt_tag;
  struct v_tag;
  struct q_tag;
  struct s_tag;
  struct o_tag;
  struct stats_tag;

 public:
  scratch_buffer<T, kt_tag> kt;
  scratch_buffer<T, v_tag> v;
  scratch_buffer<T, q_tag> q;
  scratch_buffer<T, s_tag> s;
  scratch_buffer<T, o_tag> o;
  scratch_buffer<T, stats_tag> stats;
  // Which K and V the packed buffers hold: the evaluation they were packed for and their addresses.
  std::uint64_t call = 0;
  const void *k_at = nullptr, *v_at = nullptr;
  index_t keys = 0; // the keys packed
  static attention_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] { local().grow_to_largest(); }), true);
    static thread_local attention_workspace w;
    return w;
  }
  void grow_to_largest() {
    kt.grow_to_largest(), v.grow_to_largest(), q.grow_to_largest(), s.grow_to_largest(), o.grow_to_largest(),
        stats.grow_to_largest();
  }
};

// C[Rows x NR] (+)= A[Rows x kd] · B[kd x NR]: A row-major with row stride lda (each value broadcast), or
// with ColumnA stored transposed, its k-th column's Rows values at a + k * lda (a block of scores read as
// its transpose in place); B's k-th row of NR values at b + k * ldb. Each element sums its kd products
// in k order.
template <class T, int Rows, bool ColumnA = false>
void attention_tile(const T* a, index_t lda, const T* b, index_t ldb, index_t kd, T* c, index_t ldc, bool accumulate) {
  using B = batch<T>;
  constexpr index_t W = gemm_tile<T>::W, NV = gemm_tile<T>::NV;
  B acc[Rows][NV];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) acc[r][v] = B(T(0));
  for (index_t k = 0; k < kd; ++k) {
    B bv[NV];
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) bv[v] = B::load_unaligned(b + k * ldb + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const B av(ColumnA ? a[k * lda + r] : a[r * lda + k]);
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) {
      if (accumulate) acc[r][v] += B::load_unaligned(c + r * ldc + v * W);
      acc[r][v].store_unaligned(c + r * ldc + v * W);
    }
}
template <class T>
using attention_tile_fn = void (*)(const T*, index_t, const T*, index_t, index_t, T*, index_t, bool);
template <class T, bool ColumnA = false>
inline constexpr auto attention_tiles = []<std::size_t... R>(std::index_sequence<R...>) {
  return std::array<attention_tile_fn<T>, sizeof...(R)>{&attention_tile<T, int(R) + 1, ColumnA>...};
}(std::make_index_sequence<gemm_tile<T>::MR>{});

// Counts evaluations, so that a thread's packed K and V are never mistaken for a later call's.
inline std::atomic<std::uint64_t> attention_calls{0};

constexpr index_t round_up(index_t n, index_t m) {
  return (n + m - 1) / m * m;
}

// The largest lane of v, as a tree (depth log2 W, not a chain of W - 1 dependent maxima: a row of a
// short block is latency-bound, and this sits on its critical path).
template <class T>
T lanes_max(const batch<T>& v) {
  constexpr index_t W = lanes<T>;
  alignas(default_alignment) T a[W];
  v.store_aligned(a);
#pragma GCC unroll 8
  for (index_t w = W / 2; w > 0; w /= 2)
#pragma GCC unroll 16
    for (index_t q = 0; q < w; ++q) a[q] = a[q + w] > a[q] ? a[q + w] : a[q];
  return a[0];
}

// 0, 1, ..., W - 1 (the lanes of a ragged last vector are compared with it).
template <class T>
batch<T> lane_indices() {
  constexpr index_t W = lanes<T>;
  alignas(default_alignment) T a[W];
  for (index_t q = 0; q < W; ++q) a[q] = T(q);
  return batch<T>::load_aligned(a);
}

// Rows r in [0, rows) of the score block (row stride lds): mask the keys each query does not see, shift
// by the row's new running maximum and exponentiate in place; alpha[r] gets the row's factor
// exp(m_old - m_new), and m[r] and l[r] are updated. `seen(r)`: keys of the block row r sees (may be <= 0),
// `kc`: keys the P·V product reads. Each row has room for whole vectors up to round_up(kc, W): the masked
// lanes and the tail are written by vectors. Stage by stage over the rows (maxima, then exponentials and
// sums): each row's reductions are a chain of dependent steps, and rows side by side overlap.
template <class T, class Seen>
void online_softmax_rows(T* s, index_t lds, index_t rows, Seen&& seen, index_t kc, T* m, T* l, T* alpha) {
  using B = batch<T>;
  constexpr index_t W = lanes<T>;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  const B zero(T(0));
  T shift[gemm_tile<T>::MR];
  for (index_t r = 0; r < rows; ++r) {
    T* sr = s + r * lds;
    const index_t n = seen(r);
    if (n <= 0) {
      for (index_t j = 0; j < kc; j += W) zero.store_unaligned(sr + j);
      alpha[r] = T(1);
      continue;
    }
    const index_t nv = round_up(n, W), full = n - n % W;
    if (full < nv) { // the lanes of the last vector past n: -inf, so that exp gives 0
      const B last = B::load_unaligned(sr + full);
      xsimd::select(lane_indices<T>() < B(T(n - full)), last, B(neg_inf)).store_unaligned(sr + full);
    }
    B mx(neg_inf);
    for (index_t j = 0; j < nv; j += W) mx = xsimd::max(mx, B::load_unaligned(sr + j));
    const T row_max = lanes_max(mx);
    const T m_new = row_max > m[r] ? row_max : m[r];
    // While every score seen is -inf, shift by 0: exp(-inf - 0) = 0, not exp(-inf + inf) = NaN.
    shift[r] = m_new == neg_inf ? T(0) : m_new;
    alpha[r] = m[r] == neg_inf ? T(0) : T(std::exp(m[r] - shift[r]));
    m[r] = m_new;
  }
  for (index_t r = 0; r < rows; ++r) {
    const index_t n = seen(r);
    if (n <= 0) continue;
    T* sr = s + r * lds;
    const index_t nv = round_up(n, W);
    B sum(T(0));
    const B sh(shift[r]);
    for (index_t j = 0; j < nv; j += W) {
      const B p = ops::exp::simd(B::load_unaligned(sr + j) - sh); // the op table's exp (ops/simd_exp.hpp)
      sum += p;
      p.store_unaligned(sr + j);
    }
    for (index_t j = nv; j < kc; j += W) zero.store_unaligned(sr + j); // keys past this row's last in the block
    l[r] = l[r] * alpha[r] + tenfold::simd::hadd(sum);
  }
}

// The tasks of an attention kernel (the forward's, the backward's): on the pool when there is enough
// work, one task at a time from the pool's counter: causal blocks differ in cost, and a thread slowed by
// other work on its core takes fewer. Task indices rise, so a thread repacks its right-hand operands only
// when it moves to the next batch element.
template <class Task>
void run_attention_tasks(index_t tasks, double flops, Task&& task) {
  auto& pool = thread_pool::instance();
  if (flops < 4e6 || pool.size() == 1 || tasks == 1) {
    for (index_t t = 0; t < tasks; ++t) task(t);
  } else {
    auto one = [&](int t) { task(t); };
    pool.run(int(tasks), one);
  }
}

// key_lengths were checked when the node was built; checked again when it runs, as the tensor may have
// changed since (keys_of clamps, so a bad length could never read past k and v, but it is an error).
template <class N>
void check_lengths_on_cpu(const N& n) {
  if (n.lengths && n.lengths_on_device)
    throw error("tenfold::attention: key_lengths in device memory (cuda::key_lengths) on the CPU: evaluate it with the CUDA evaluator");
  if (n.lengths) detail::check_key_lengths(n.lengths, N::shape_type::dims[0], n.keys);
}

// Where a leaf's matrices are read in place by the tiles rather than copied: elements of T in dense
// rows (each row right after the one before: a head of [B, heads, S, D], as measured) whose width is
// whole NR-wide panels (as a right-hand operand, panel p is then the columns [p, p + NR) of the rows
// where they lie; as a left-hand one, the rows). Rows further apart (heads viewed inside [B, S, width])
// are copied as before: read in place they were not faster in MiniLM (bench/RESULTS.md, fifty-fourth
// session).
template <class L, class T, index_t Cols>
inline constexpr bool tile_in_place_v = std::is_same_v<std::remove_const_t<typename L::element_type>, T> &&
                                        L::strides[L::rank - 1] == 1 && L::strides[L::rank - 2] == Cols &&
                                        Cols % gemm_tile<T>::NR == 0;

// A right-hand operand of the tiles: the panel of columns [p, p + NR) from row i at at(p, i), rows ld
// apart; packed by pack_b (panel p at p·rows, rows NR apart) or in place (column p of row i, rows rs apart).
template <class T>
struct tile_rhs {
  const T* base;
  index_t ld, column_step;
  const T* at(index_t p, index_t i) const { return base + p * column_step + i * ld; }
};

// m's rows as a right-hand operand: where they lie, or as pack_b packed them (rows of them) at `packed`.
template <bool InPlace, class T, class M>
tile_rhs<T> rhs_at(const M& m, const T* packed, index_t rows) {
  if constexpr (InPlace) return {m.p, m.rs, 1};
  else return {packed, gemm_tile<T>::NR, rows};
}

// The tiled forward pass of N (attention_node, or the backward's stats node, which reads the same q, k
// and v): per task, a block of query rows of one batch element; at its end `finish(idx, i0, br, o, ldo,
// m, l)` gets the block's unnormalised output rows (o, row stride ldo), their running maxima m of the
// scaled scores and their sums l (row r of the block is query i0 + r; idx the batch index).
// N's operands: strided leaves (the planner makes them so).
// (sq, nk: the queries and the keys read when they are bounded lengths, upto<N>; else Sq and n's keys.
// cfg: the tiles, cpu/attention_config.hpp.)
template <class N, class Finish>
void attention_blocks(const N& n, Finish&& finish, index_t sq = N::Sq, index_t nk = -1, const attention_config& cfg = attention_config_for()) {
  using T = compute_t<typename N::value_type>;
  constexpr int R = N::rank;
  using index_array = std::array<index_t, R + 1>;
  using Bk = attention_blocking<T>;
  constexpr index_t MR = Bk::MR, NR = Bk::NR;
  if (cfg.row_panels < 1 || cfg.key_panels < 1) throw error("tenfold::cpu::attention_config: row_panels and key_panels must be at least 1");
  const index_t Br = cfg.row_panels * MR, Bc = cfg.key_panels * NR;
  constexpr index_t Sk = N::Sk, D = N::D, Dv = N::Dv;
  constexpr index_t ldk = round_up(Sk, NR), ldv = round_up(Dv, NR), ldo = ldv + Bk::W;
  const index_t lds = Bc + Bk::W;
  using S = typename N::shape_type;
  const index_t q_blocks = (sq + Br - 1) / Br;
  constexpr index_t batches = detail::product(S::dims, 0, R - 2);
  using LQ = typename N::q_type;
  using LK = typename N::k_type;
  using LV = typename N::v_type;
  constexpr index_t q_rs = LQ::strides[LQ::rank - 2], q_cs = LQ::strides[LQ::rank - 1];
  constexpr bool q_here = tile_in_place_v<LQ, T, D>, v_here = tile_in_place_v<LV, T, Dv>;
  const LQ& ql = detail::get<0>(n.args);
  const LK& kl = detail::get<1>(n.args);
  const LV& vl = detail::get<2>(n.args);
  const T scale = static_cast<T>(n.scale);
  check_lengths_on_cpu(n);
  const std::uint64_t call = ++attention_calls;
  const auto& tiles = attention_tiles<T>;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();

  auto task = [&](index_t t) {
    auto& ws = attention_workspace<T>::local();
    index_array idx{};
    detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(t / q_blocks, idx.data());
    const auto qm = batch_matrix<LQ, R>(ql, idx.data());
    const auto km = batch_matrix<LK, R>(kl, idx.data());
    const auto vm = batch_matrix<LV, R>(vl, idx.data());
    const index_t keys = nk >= 0 ? nk : n.keys_of(idx[0]); // the keys this batch element reads (first_keys, key_lengths)
    T* kt = ws.kt.get(D * ldk);
    T* vp = ws.v.get(Sk * ldv);
    if (ws.call != call || ws.k_at != km.p || ws.v_at != vm.p || ws.keys != keys) {
      // s Kᵀ (the scale of the scores) and V in NR-wide panels, each contiguous, as the GEMM packs B
      // (cpu/gemm_pack.hpp, transposing in registers): Kᵀ's panel of keys [c, c + NR) at kt + c·D, V's
      // panel of columns [e, e + NR) at vp + e·keys; padding is 0. Contiguous panels keep the
      // micro-kernel's B stream clear of cache-set conflicts (a row stride of Sk = 512 floats is 2 KiB).
      // V's rows are read where they lie when they are whole panels of T (tile_in_place_v).
      pack_b<T>(matrix_ref<std::remove_const_t<typename LK::element_type>>{km.p, km.cs, km.rs}, 0, D, 0, keys, kt);
      for (index_t i = 0; i < D * round_up(keys, NR); ++i) kt[i] *= scale;
      if constexpr (!v_here) pack_b<T>(vm, 0, keys, 0, Dv, vp);
      ws.call = call, ws.k_at = km.p, ws.v_at = vm.p, ws.keys = keys;
    }
    const tile_rhs<T> v_rhs = rhs_at<v_here, T>(vm, vp, keys);
    const index_t i0 = t % q_blocks * Br, br = std::min(Br, sq - i0);
    // the block's query rows: where they lie (tile_in_place_v), else copied as T
    const T* qa;
    index_t ldq = D;
    if constexpr (q_here) {
      qa = qm.p + i0 * q_rs, ldq = q_rs;
    } else {
      T* qs = ws.q.get(Br * D);
      for (index_t r = 0; r < br; ++r)
        for (index_t d = 0; d < D; ++d)
          qs[r * D + d] = static_cast<T>(static_cast<compute_t<typename LQ::value_type>>(qm.p[(i0 + r) * q_rs + d * q_cs]));
      qa = qs;
    }
    T* s = ws.s.get(Br * lds);
    T* o = ws.o.get(Br * ldo);
    T* m = ws.stats.get(2 * Br);
    T* l = m + Br;
    for (index_t r = 0; r < br; ++r) {
      for (index_t e = 0; e < ldo; ++e) o[r * ldo + e] = T(0);
      m[r] = neg_inf, l[r] = T(0);
    }
    const index_t kend = n.visible(i0 + br - 1, keys, sq); // keys any row of the block sees
    for (index_t c0 = 0; c0 < kend; c0 += Bc) {
      // Per panel of MR rows, only the keys its last row sees (a causal mask skips whole tiles).
      for (index_t r0 = 0; r0 < br; r0 += MR) {
        const index_t rows = std::min(MR, br - r0);
        const index_t kc = std::clamp<index_t>(n.visible(i0 + r0 + rows - 1, keys, sq) - c0, 0, Bc);
        for (index_t p = 0; p < kc; p += NR) tiles[rows - 1](qa + r0 * ldq, ldq, kt + (c0 + p) * D, NR, D, s + r0 * lds + p, lds, false);
        bool first[MR];
        T alpha[MR];
        for (index_t r = 0; r < rows; ++r) first[r] = l[r0 + r] == T(0); // O is still 0: no rescale needed
        online_softmax_rows<T>(s + r0 * lds, lds, rows, [&](index_t r) { return std::min(kc, n.visible(i0 + r0 + r, keys, sq) - c0); }, kc,
                               m + r0, l + r0, alpha);
        for (index_t r = 0; r < rows; ++r)
          if (alpha[r] != T(1) && !first[r])
            for (index_t e = 0; e < ldo; ++e) o[(r0 + r) * ldo + e] *= alpha[r];
        if (kc > 0)
          for (index_t p = 0; p < ldv; p += NR) tiles[rows - 1](s + r0 * lds, lds, v_rhs.at(p, c0), v_rhs.ld, kc, o + r0 * ldo + p, ldo, true);
      }
    }
    finish(idx, i0, br, o, ldo, m, l);
  };

  run_attention_tasks(batches * q_blocks, 2.0 * double(sq) * double(Sk) * double(D + Dv) * double(batches), task);
}

// The offset of batch element idx (the leading R - 2 indices) in leaf L.
template <class L, class Idx>
index_t batch_offset(const Idx& idx) {
  index_t off = L::offset;
  for (int i = 0; i + 2 < L::rank; ++i) off += idx[std::size_t(i)] * L::strides[i];
  return off;
}

// One query row (a decode step: the new position against its KV cache). The tiled pass above packs Kᵀ
// and V per batch element for blocks of queries; for one query that packing and the tiles' edges were
// most of the work (examples/decoder's decode step: attention 14% of the step, bench/RESULTS.md). Here
// the keys and values are read where they lie: the scores are dot products of the scaled q with W keys
// at a time (each key's products summed in a vector, the W vectors then summed across lanes together),
// one softmax over the scores, and the value rows weighted in place (two chains of keys, so that the
// FMAs' latency is not the bound). Needs k's and v's rows contiguous, of the compute type
// (one_query_v); other layouts take the tiled pass.
template <class L, class T>
inline constexpr bool rows_in_place_v = std::is_same_v<std::remove_const_t<typename L::element_type>, T> && L::strides[L::rank - 1] == 1;
template <class N, class T>
inline constexpr bool one_query_v = rows_in_place_v<typename N::k_type, T> && rows_in_place_v<typename N::v_type, T>;

template <class T>
class one_query_workspace {
  struct tag;

 public:
  scratch_buffer<T, tag> buf;
  static one_query_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] { local().buf.grow_to_largest(); }), true);
    static thread_local one_query_workspace w;
    return w;
  }
};

// o[0, NV W) = Σ_j p[j] v[j, 0 .. NV W) / l over j < n: NV vectors of columns of v (rows ldv apart).
template <class T, int NV>
void weighted_rows(const T* p, index_t n, const T* v, index_t ldv, T l, T* o) {
  using B = batch<T>;
  constexpr index_t W = lanes<T>;
  B acc[2][NV];
#pragma GCC unroll 8
  for (int u = 0; u < NV; ++u) acc[0][u] = acc[1][u] = B(T(0));
  index_t j = 0;
  for (; j + 2 <= n; j += 2)
#pragma GCC unroll 2
    for (int c = 0; c < 2; ++c) {
      const B pj(p[j + c]);
#pragma GCC unroll 8
      for (int u = 0; u < NV; ++u) acc[c][u] = xsimd::fma(pj, B::load_unaligned(v + (j + c) * ldv + u * W), acc[c][u]);
    }
  if (j < n) {
    const B pj(p[j]);
#pragma GCC unroll 8
    for (int u = 0; u < NV; ++u) acc[0][u] = xsimd::fma(pj, B::load_unaligned(v + j * ldv + u * W), acc[0][u]);
  }
  const B lv(l);
#pragma GCC unroll 8
  for (int u = 0; u < NV; ++u) ((acc[0][u] + acc[1][u]) / lv).store_unaligned(o + u * W);
}

// o[0, Dv) = softmax(q kᵀ) v over the first n keys (q already scaled): s, scratch for round_up(n, W) scores.
// No key, or every score -inf: o = 0 (as the tiled pass).
template <class T, index_t D, index_t Dv>
void one_query_row(const T* q, const T* k, index_t ldk, const T* v, index_t ldv, index_t n, T* s, T* o) {
  using B = batch<T>;
  constexpr index_t W = lanes<T>, dw = D / W * W, ew = Dv / W * W;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  for (index_t j0 = 0; j0 < n; j0 += W) {
    const index_t nj = std::min(W, n - j0);
    const T* kr[W];
    for (index_t e = 0; e < W; ++e) kr[e] = k + (j0 + std::min(e, nj - 1)) * ldk; // a short group repeats its last key
    B acc[W];
#pragma GCC unroll 16
    for (index_t e = 0; e < W; ++e) acc[e] = B(T(0));
    for (index_t d = 0; d < dw; d += W) {
      const B qv = B::load_unaligned(q + d);
#pragma GCC unroll 16
      for (index_t e = 0; e < W; ++e) acc[e] = xsimd::fma(qv, B::load_unaligned(kr[e] + d), acc[e]);
    }
    lane_sums(acc, s + j0);
    if constexpr (dw < D)
      for (index_t e = 0; e < nj; ++e)
        for (index_t d = dw; d < D; ++d) s[j0 + e] += q[d] * kr[e][d];
  }
  const index_t nw = round_up(n, W);
  for (index_t j = n; j < nw; ++j) s[j] = neg_inf; // the last group's repeated keys: weight 0
  B mx(neg_inf);
  for (index_t j = 0; j < nw; j += W) mx = xsimd::max(mx, B::load_unaligned(s + j));
  const T m = n > 0 ? lanes_max(mx) : neg_inf;
  if (m == neg_inf) {
    std::fill(o, o + Dv, T(0));
    return;
  }
  B sum(T(0));
  const B mv(m);
  for (index_t j = 0; j < nw; j += W) {
    const B p = ops::exp::simd(B::load_unaligned(s + j) - mv);
    sum += p;
    p.store_unaligned(s + j);
  }
  const T l = tenfold::simd::hadd(sum);
  constexpr index_t chunks = ew / (4 * W), rest = ew / W % 4;
  for (index_t c = 0; c < chunks; ++c) weighted_rows<T, 4>(s, n, v + c * 4 * W, ldv, l, o + c * 4 * W);
  if constexpr (rest > 0) weighted_rows<T, int(rest)>(s, n, v + chunks * 4 * W, ldv, l, o + chunks * 4 * W);
  for (index_t e = ew; e < Dv; ++e) {
    T a = T(0);
    for (index_t j = 0; j < n; ++j) a += s[j] * v[j * ldv + e];
    o[e] = a / l;
  }
}

// dst = attention for N with one query row (sq = 1), each batch element a task; nk as attention_blocks'.
template <class Dst, class N>
void run_one_query(const Dst& dst, const N& n, index_t nk) {
  using T = compute_t<typename N::value_type>;
  using S = typename N::shape_type;
  constexpr int R = N::rank;
  constexpr index_t D = N::D, Dv = N::Dv, W = lanes<T>;
  constexpr index_t batches = detail::product(S::dims, 0, R - 2);
  using LQ = typename N::q_type;
  using LK = typename N::k_type;
  using LV = typename N::v_type;
  check_lengths_on_cpu(n);
  const LQ& ql = detail::get<0>(n.args);
  const LK& kl = detail::get<1>(n.args);
  const LV& vl = detail::get<2>(n.args);
  const T scale = static_cast<T>(n.scale);
  auto task = [&](index_t t) {
    std::array<index_t, R + 1> idx{};
    detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(t, idx.data());
    const auto qm = batch_matrix<LQ, R>(ql, idx.data());
    const auto km = batch_matrix<LK, R>(kl, idx.data());
    const auto vm = batch_matrix<LV, R>(vl, idx.data());
    const index_t keys = nk >= 0 ? nk : n.keys_of(idx[0]);
    T* q = one_query_workspace<T>::local().buf.get(round_up(D, W) + round_up(N::Sk, W) + round_up(Dv, W));
    T* s = q + round_up(D, W);
    T* o = s + round_up(N::Sk, W);
    for (index_t d = 0; d < D; ++d) q[d] = scale * static_cast<T>(static_cast<compute_t<typename LQ::value_type>>(qm.p[d * qm.cs]));
    one_query_row<T, D, Dv>(q, km.p, km.rs, vm.p, vm.rs, n.visible(0, keys, 1), s, o);
    using E = typename Dst::value_type;
    E* out = dst.data() + batch_offset<Dst>(idx);
    for (index_t e = 0; e < Dv; ++e) out[e * Dst::strides[R - 1]] = static_cast<E>(o[e]);
  };
  run_attention_tasks(batches, 2.0 * double(N::Sk) * double(D + Dv) * double(batches), task);
}


// dst: a writable leaf of N's shape; N's operands: strided leaves (the planner makes them so).
template <class Dst, class N>
void run_attention(const Dst& dst, const N& n, const attention_config& cfg = attention_config_for()) {
  using S = typename N::shape_type;
  using T = compute_t<typename N::value_type>;
  constexpr int R = S::rank;
  if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    // Integer attention: each element through `at`.
    std::array<index_t, R + 1> idx{};
    for (index_t t = 0; t < S::size; ++t) {
      detail::unravel<S>(t, idx.data());
      dst.data()[Dst::offset_of(idx.data())] = static_cast<typename Dst::value_type>(n.at(idx.data()));
    }
  } else {
    // Bounded queries (upto<N>, the destination's length) and keys (k's: at most the first_keys read).
    index_t sq = N::Sq, nk = -1;
    if constexpr (S::has_bounded) sq = dst.length();
    if constexpr (N::k_type::shape_type::has_bounded) {
      detail::find_length(detail::get<1>(n.args), nk);
      nk = std::min(nk, n.keys);
    }
    if constexpr (one_query_v<N, T>)
      if (sq == 1) return run_one_query(dst, n, nk);
    attention_blocks(n, [&](const auto& idx, index_t i0, index_t br, T* o, index_t ldo, const T*, const T* l) {
      // O / l; a row that saw no key (l = 0) is 0.
      const index_t off = batch_offset<Dst>(idx);
      using E = typename Dst::value_type;
      for (index_t r = 0; r < br; ++r) {
        E* out = dst.data() + off + (i0 + r) * Dst::strides[R - 2];
        T* orow = o + r * ldo;
        const batch<T> lr(l[r] > T(0) ? l[r] : T(1)); // l = 0: O is 0 as well
        constexpr index_t ldv = round_up(N::Dv, attention_blocking<T>::NR), W = attention_blocking<T>::W;
        for (index_t e = 0; e < ldv; e += W) (batch<T>::load_unaligned(orow + e) / lr).store_unaligned(orow + e);
        for (index_t e = 0; e < N::Dv; ++e) out[e * Dst::strides[R - 1]] = static_cast<E>(orow[e]);
      }
    }, sq, nk, cfg);
  }
}
} // namespace tenfold::cpu
