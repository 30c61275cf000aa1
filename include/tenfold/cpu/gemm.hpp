#pragma once
// A packed, cache-blocked GEMM on xsimd with a store epilogue: C[rows, cols] of C = A B for one batch
// element, in the loop order of the BLIS papers (Van Zee & van de Geijn):
//   for each NC-column block:  for each KC slice of k:  pack B (KC x NC, stays in L2 / L3)
//     for each MC-row block:  pack A (MC x KC, stays in L2)
//       for each NR-column panel of B (KC x NR, stays in L1):  for each MR-row panel of A: micro-kernel.
// The kernels accumulate C in place across the KC slices. Where the assignment is the bare product into
// rows of the same element type, C is the destination itself; otherwise it is a per-thread scratch
// block, and once its last slice is done `epilogue(block, ldc, i0, mc, j0, nc)` stores it through the
// consumer expression (relu(matmul(x, w) + b) is applied in the store, not in a second pass).
#include <algorithm>
#include <memory>

#include "tenfold/cpu/gemm_config.hpp"
#include "tenfold/cpu/gemm_pack.hpp"
#include "tenfold/cpu/scratch.hpp"
#include "tenfold/cpu/thread_pool.hpp"
#include "tenfold/tuned/gemm_cpu.hpp"

namespace tenfold::cpu {

// The configuration for products of this shape on the build's machine: the tuned table's entry where
// one matches (float only: the table is measured in f32), else the defaults. A constant expression.
template <class T>
constexpr gemm_config gemm_config_for(index_t M, index_t N, index_t K) {
  if constexpr (std::is_same_v<T, float>) {
    const gemm_shape_class shape = gemm_shape_class_of(M, N, K);
    for (const gemm_tuned_entry& e : tuned::gemm_cpu)
      if (e.machine == build_machine && e.shape == shape) return e.config;
  }
  return {};
}

// Rows up to which B is read in place rather than packed (a few rows through a weight matrix).
template <class T>
inline constexpr index_t gemm_in_place_rows = 2 * gemm_tile<T>::MR;

// Per-thread packing and scratch buffers for the GEMM.
template <class T>
class gemm_workspace {
  struct a_tag;
  struct b_tag;
  struct c_tag;
  struct k_tag;

 public:
  scratch_buffer<T, a_tag> a;
  scratch_buffer<T, b_tag> b;
  scratch_buffer<T, c_tag> c;
  scratch_buffer<T, k_tag> k; // the partial products of a k-sliced product (gemm_k_sliced)
  static gemm_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] { local().grow_to_largest(); }), true);
    static thread_local gemm_workspace w;
    return w;
  }
  void grow_to_largest() { a.grow_to_largest(), b.grow_to_largest(), c.grow_to_largest(), k.grow_to_largest(); }
  // Room for any part of a product of up to `rows` rows into `cols` columns with k slices of up to kc
  // and row blocks of up to mc (bounds of what gemm_range and gemm_dot_rows ask for): a product whose
  // rows are a run-time length (upto<M>) reserves its capacity's, so that a later, longer run of it
  // allocates nothing (after prepare_scratch has grown every thread's buffers to these).
  void reserve(index_t rows, index_t cols, index_t kc, index_t mc) {
    constexpr index_t NR = gemm_tile<T>::NR, W = gemm_tile<T>::W;
    const index_t np = (cols + NR - 1) / NR * NR;
    c.get(rows * (np + W));
    a.get(std::min(mc, rows) * ((kc + W - 1) / W * W) + W);
    b.get(kc * np);
  }
};

// Where C goes: straight into the destination (direct), or into scratch blocks handed to an epilogue.
template <class T>
struct gemm_direct_out {
  static constexpr bool direct = true;
  T* c; // element (0, 0) of this batch element's C
  index_t ldc;
};
template <class Epilogue>
struct gemm_epilogue_out {
  static constexpr bool direct = false;
  const Epilogue& epilogue;
};

// A rectangle of C: rows [r0, r1), columns [c0, c1); summed over k in [k0, k1) (k1 < 0: to K).
struct gemm_part {
  index_t r0, r1, c0, c1, k0 = 0, k1 = -1;
};

// Pins a loaded vector to a register. GCC otherwise folds every use of a load into its FMA as a memory
// operand and so loads the value once per use: gemm_dot_rows's step compiled to 32 loads for 16 FMAs.
template <class B>
inline void hold_in_register(B& v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  auto r = static_cast<typename B::register_type>(v);
  asm("" : "+v"(r));
  v = B(r);
#else
  (void)v;
#endif
}

// sums[i] = the sum of v[i]'s lanes, for W vectors at once by a transposing tree: log2 W levels of
// shuffles and adds for all W (AVX-512: 45 instructions for 16 sums, against about 9 per vector for a
// horizontal add). Each vector's lanes are added in the same tree whichever slot it has. (xsimd 8.1's
// haddp, the same idea, returns slots 2-5 and 10-13 of 16 permuted.) Elsewhere a horizontal add per vector.
template <class B>
inline void lane_sums(const B* v, typename B::value_type* sums) {
  using T [[maybe_unused]] = typename B::value_type; // (not used without AVX)
  constexpr int W = int(B::size);
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && W == 16) {
    // The tree leaves the sum of its input m in slot 4 (m % 4) + m / 4 (a 4 x 4 transpose), so input m is v[that].
    auto in = [&](int m) { return static_cast<__m512>(v[(m % 4) * 4 + m / 4]); };
    __m512 s[8], u[4], t[2];
    for (int i = 0; i < 8; ++i) // lane j + lane j + 8: eight partial sums each of two vectors
      s[i] = _mm512_add_ps(simd::shuffle_lanes<_MM_SHUFFLE(1, 0, 1, 0)>(in(2 * i), in(2 * i + 1)),
                           simd::shuffle_lanes<_MM_SHUFFLE(3, 2, 3, 2)>(in(2 * i), in(2 * i + 1)));
    for (int i = 0; i < 4; ++i) // four each of four
      u[i] = _mm512_add_ps(simd::shuffle_lanes<_MM_SHUFFLE(2, 0, 2, 0)>(s[2 * i], s[2 * i + 1]),
                           simd::shuffle_lanes<_MM_SHUFFLE(3, 1, 3, 1)>(s[2 * i], s[2 * i + 1]));
    for (int i = 0; i < 2; ++i) // two each of eight
      t[i] = _mm512_add_ps(simd::shuffle<_MM_SHUFFLE(1, 0, 1, 0)>(u[2 * i], u[2 * i + 1]),
                           simd::shuffle<_MM_SHUFFLE(3, 2, 3, 2)>(u[2 * i], u[2 * i + 1]));
    _mm512_storeu_ps(sums, _mm512_add_ps(simd::shuffle<_MM_SHUFFLE(2, 0, 2, 0)>(t[0], t[1]),
                                         simd::shuffle<_MM_SHUFFLE(3, 1, 3, 1)>(t[0], t[1])));
    return;
  }
#endif
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float> && W == 8) {
    // The tree leaves the sum of its input m in slot 4 (m % 2) + m / 2.
    auto in = [&](int m) { return static_cast<__m256>(v[(m % 2) * 4 + m / 2]); };
    __m256 s[4], u[2];
    for (int i = 0; i < 4; ++i)
      s[i] = _mm256_add_ps(_mm256_permute2f128_ps(in(2 * i), in(2 * i + 1), 0x20), _mm256_permute2f128_ps(in(2 * i), in(2 * i + 1), 0x31));
    for (int i = 0; i < 2; ++i)
      u[i] = _mm256_add_ps(_mm256_shuffle_ps(s[2 * i], s[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(s[2 * i], s[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    _mm256_storeu_ps(sums, _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1))));
    return;
  }
#endif
  for (int i = 0; i < W; ++i) sums[i] = tenfold::simd::hadd(v[i]);
}

// C[r0:r1, c0:c1] for a few rows of A (contiguous along k) and B stored transposed, [N, K] with
// contiguous rows: a linear layer's weight in PyTorch's layout. Each element is the dot product of a
// row of A and a row of the weight, R x C elements at a time: W-lane partial sums over k, then summed
// across the lanes, then the k % W tail — one order per element, whatever rectangle a thread gets and
// whatever the tile. A step loads R + C vectors for R x C FMAs, each held in a register: AVX-512 4 x 6
// (24 accumulators + 6 + 1 of 32 registers), 16 registers 2 x 4. On Zen 5, one thread, K = N = 4096,
// GFLOP/s: M = 16 4 x 4 with GCC's folded loads 51-74, loads held 87-96, 4 x 6 98-104 (5 x 5 80-93,
// 6 x 4 90-94, 8 x 3 77-78); AVX2 (x86-64-v3) M = 8 4 x 4 folded 41-48, 2 x 4 46-51, 4 x 3 40-46, 3 x 3
// 36-40, and M = 4 25-34 for each but 3 x 3 (20-22).
// The packed path would first copy all of B with gathers to use each value only M times: for 16 tokens
// through all-MiniLM-L6-v2 that packing took 45% of the forward pass.
template <class T, class Out>
void gemm_dot_rows(const matrix_ref<T>& a, const matrix_ref<T>& b, index_t K, const gemm_part& part, const Out& out) {
  using B = batch<T>;
  constexpr index_t W = index_t(B::size);
#if defined(TENFOLD_DOT_R) && defined(TENFOLD_DOT_C) // for measuring other tiles
  constexpr int R = TENFOLD_DOT_R, C = TENFOLD_DOT_C;
#else
  constexpr int R = gemm_tile<T>::wide_file ? 4 : 2, C = gemm_tile<T>::wide_file ? 6 : 4;
#endif
  const index_t rows = part.r1 - part.r0, cols = part.c1 - part.c0, kv = K / W * W;
  T* c;
  index_t ldc;
  if constexpr (Out::direct) c = out.c + part.r0 * out.ldc + part.c0, ldc = out.ldc;
  else c = gemm_workspace<T>::local().c.get(rows * cols), ldc = cols;
  for (index_t j = 0; j < cols; j += C) {
    const index_t nj = std::min<index_t>(C, cols - j);
    const T* w[C];
    for (index_t q = 0; q < C; ++q) w[q] = b.p + (part.c0 + j + std::min(q, nj - 1)) * b.cs; // short blocks repeat a row
    for (index_t i = 0; i < rows; i += R) {
      const index_t ni = std::min<index_t>(R, rows - i);
      const T* x[R];
      for (index_t p = 0; p < R; ++p) x[p] = a.p + (part.r0 + i + std::min(p, ni - 1)) * a.rs;
      B acc[R][C];
#pragma GCC unroll 8
      for (int p = 0; p < R; ++p)
#pragma GCC unroll 8
        for (int q = 0; q < C; ++q) acc[p][q] = B(T(0));
      for (index_t k = 0; k < kv; k += W) {
        B wv[C];
#pragma GCC unroll 8
        for (int q = 0; q < C; ++q) wv[q] = B::load_unaligned(w[q] + k), hold_in_register(wv[q]);
#pragma GCC unroll 8
        for (int p = 0; p < R; ++p) {
          B xv = B::load_unaligned(x[p] + k);
          hold_in_register(xv);
#pragma GCC unroll 8
          for (int q = 0; q < C; ++q) acc[p][q] = xsimd::fma(xv, wv[q], acc[p][q]);
        }
      }
      // The lane sums W accumulators at a time, the last group padded with zeros. (acc is indexed by
      // constants only, so that it stays in registers through the k loop.)
      constexpr int G = (R * C + int(W) - 1) / int(W);
      T sums[G * W];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        B group[W];
#pragma GCC unroll 16
        for (int e = 0; e < int(W); ++e) group[e] = g * int(W) + e < R * C ? acc[(g * int(W) + e) / C][(g * int(W) + e) % C] : B(T(0));
        lane_sums(group, sums + g * W);
      }
      for (index_t p = 0; p < ni; ++p)
        for (index_t q = 0; q < nj; ++q) {
          T sum = sums[p * C + q];
          for (index_t k = kv; k < K; ++k) sum += x[p][k] * w[q][k];
          c[(i + p) * ldc + j + q] = sum;
        }
    }
  }
  if constexpr (!Out::direct) out.epilogue(static_cast<const T*>(c), ldc, part.r0, rows, part.c0, cols);
}

// c[0, NV W) = a · B[:, 0, NV W) for one row a (its k-th value at a[k * acs]) and B's rows brs apart:
// NV vectors of columns side by side, each element summed in k order.
template <class T, int NV>
void one_row_strip(const T* a, index_t acs, const T* b, index_t brs, index_t K, T* c) {
  using B = batch<T>;
  constexpr index_t W = index_t(B::size);
  B acc[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) acc[v] = B(T(0));
  for (index_t k = 0; k < K; ++k) {
    const B x(a[k * acs]);
    const T* row = b + k * brs;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[v] = xsimd::fma(x, B::load_unaligned(row + v * W), acc[v]);
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) acc[v].store_unaligned(c + v * W);
}

// C[0, c0:c1] for one row of A and a row-major B read in place (a decode step: one token through a
// weight matrix stored [in, out]). The tiled kernels give one row two vectors of accumulators, each
// FMA waiting on the one before (the latency, 4 cycles, bounds them to a quarter of the FMA units);
// here 8 vectors of columns run side by side, and what is left of the columns as 4, 2 and 1 (a thread's
// share of a 128-column weight is 4 vectors: one at a time, each k waited on the one before). Each
// element is summed in k order, whatever rectangle a thread gets and whichever strip it falls in; the
// choice of this kernel depends on M alone.
template <class T, class Out>
void gemm_one_row(const matrix_ref<T>& a, const matrix_ref<T>& b, index_t K, const gemm_part& part, const Out& out) {
  constexpr index_t W = index_t(batch<T>::size);
  const index_t cols = part.c1 - part.c0;
  T* c;
  if constexpr (Out::direct) c = out.c + part.c0;
  else c = gemm_workspace<T>::local().c.get(cols + W);
  const T* bp = b.p + part.c0;
  index_t j = 0;
  for (; j + 8 * W <= cols; j += 8 * W) one_row_strip<T, 8>(a.p, a.cs, bp + j, b.rs, K, c + j);
  if (j + 4 * W <= cols) one_row_strip<T, 4>(a.p, a.cs, bp + j, b.rs, K, c + j), j += 4 * W;
  if (j + 2 * W <= cols) one_row_strip<T, 2>(a.p, a.cs, bp + j, b.rs, K, c + j), j += 2 * W;
  if (j + W <= cols) one_row_strip<T, 1>(a.p, a.cs, bp + j, b.rs, K, c + j), j += W;
  for (; j < cols; ++j) {
    T acc = 0;
    for (index_t k = 0; k < K; ++k) acc = std::fma(a.p[k * a.cs], bp[k * b.rs + j], acc);
    c[j] = acc;
  }
  if constexpr (!Out::direct) out.epilogue(static_cast<const T*>(c), cols, part.r0, 1, part.c0, cols);
}

// Whether B can be read in place by the kernels: a matrix of T in memory (not an implicit operand
// such as conv's im2col), with contiguous rows, for a product of a few rows (cfg.in_place_rows).
template <class T, class OB>
bool reads_b_in_place(const OB& b, index_t M, const gemm_config& cfg) {
  if constexpr (std::is_same_v<OB, matrix_ref<T>>) return b.cs == 1 && M <= (cfg.in_place_rows > 0 ? cfg.in_place_rows : gemm_in_place_rows<T>);
  else return false;
}

// The k slice of a product of M rows that reads B in place: kc_in_place, or where B's rows are a multiple
// of 2 KiB apart (all of a panel's rows in one or two L1 sets) kc_crowded, by default 8 rows with 16
// vector registers for fewer rows than a register tile (M < MR: each B vector feeds at most 5 FMAs, the
// loads decide), else kc_in_place. Measured on Zen 5 (N = K = 4096, 8 rows against 32; bench/RESULTS.md):
// the AVX2 build's M = 2-5 +25-60% on one thread and on two; M = 7-10 +10-25% on one thread but 10-20%
// slower on two, M = 6 and 12 slower on both; the AVX-512 build (MR = 14) M = 8-16 30-40% slower.
template <class T, class OB>
index_t in_place_kc(const OB& b, index_t M, const gemm_config& cfg) {
  if constexpr (std::is_same_v<OB, matrix_ref<T>>)
    if (b.rs > 0 && b.rs * index_t(sizeof(T)) % 2048 == 0) {
      if (cfg.kc_crowded > 0) return cfg.kc_crowded;
      if (!gemm_tile<T>::wide_file && M < gemm_tile<T>::MR) return std::min<index_t>(cfg.kc_in_place, 8);
    }
  return cfg.kc_in_place;
}

// Whether a product of M rows that reads B in place takes gemm_in_place_tile's blocks (up to 4 rows, 3
// vectors of B) rather than the tile's (up to MR rows, NV vectors): where they load fewer values per FMA,
// (NVw bw + M) / (NVw M) < (NV b + M) / (NV M) with bw and b the blocks of each. On 16 registers that is
// M = 3, 4 and 7-12, not 5 and 6 (one block of 5 or 6 rows against two). M = 2 streams B from memory at
// two rows per value and measured 5-10% slower with the wider blocks on two threads: left to the tile.
// Measured on Zen 5's AVX2 build (K = N = 4096, GFLOP/s, bench/RESULTS.md): M = 8 one thread 42 -> 50,
// two threads 73 -> 91-95; M = 7 and 9 +7-20%; M = 5, 6 and 10 (two threads) within the noise.
template <class T>
constexpr bool gemm_in_place_wide(index_t M) {
  using G = gemm_tile<T>;
  using IP = gemm_in_place_tile<T>;
  if (!IP::used || M < 3) return false;
  const index_t b = (M + G::MR - 1) / G::MR, bw = (M + IP::MR - 1) / IP::MR;
  return (IP::NV * bw + M) * G::NV < (G::NV * b + M) * IP::NV;
}

// An A operand the kernels read where it lies instead of packing it (cpu/conv_padded.hpp: im2col over a
// padded input): its row stride `lda` and k grouping `group` are constants, and it provides
// a_offsets(a, k0, kc) (the k slice's group offsets) and a_panel(a, row, most, rows) (a panel's first value;
// rows: its row count, rows of one output row only).
template <class OA>
constexpr index_t a_in_place_lda() {
  if constexpr (requires { OA::lda; }) return OA::lda;
  else return 0;
}

// What the first row block's full kernels ask for from memory (the packing kernel and
// gemm_prefetching_kernel's panel_prefetch streams). B comes from memory once, through the first row
// block: where only its first kernel on each panel asked for the next panels (at most 15 GB/s on Zen 5,
// against 30 for a sequential read), the other kernels on the panel ran with the memory idle. Now each
// full block of that row block asks for a share, so the reads run at an even rate under all its FMAs:
//  - near: a share of the k slice's rows of the panel `prefetch_panels_ahead` on, its NR values each
//    (a Prepacked weight's panel is contiguous: its rows NR apart);
//  - far (a row-major B): a share of the next group of prefetch_group<T> panels, 1 KiB of each row.
//    One line from each of kc rows 16 KiB apart (AVX2, N = 4096) read at 15 GB/s, runs of 1 KiB at
//    22-30 (Zen 5, one thread). The group's rows are cut among its panels, then among the blocks.
// Measured on Zen 5, one thread, K = N = 4096, B in 2 MiB pages (tensors of 2 MiB or more are:
// core/buffer.hpp), GFLOP/s (bench/RESULTS.md): AVX2 M = 16 67-71 -> 79-91, Prepacked 60 -> 90-93;
// AVX-512 M = 64 159 -> 182-185, Prepacked M = 32 141 -> 193; squares alike. (In 4 KiB pages the far
// stream costs more than it gives: M = 16 64 -> 52-59; the near one alone 64 -> 66.)
// Only the first prefetch_blocks full blocks ask: in a taller product the other blocks of the first row
// block run the plain kernels (AVX2 256 x 256 x 256, B in L2 with nothing to ask for: 106 -> 90 GFLOP/s
// with all 24 blocks asking, 108 with 4).
inline constexpr index_t prefetch_panels_ahead = 2, prefetch_blocks = 4;
template <class T>
inline constexpr index_t prefetch_group = std::max<index_t>(1, 1024 / index_t(gemm_tile<T>::NR * sizeof(T)));
struct prefetch_share {
  index_t first, rows;
};
// Part `part` of `parts` of `rows` rows, in order: the parts cover each row once.
constexpr prefetch_share share_of(index_t rows, index_t part, index_t parts) {
  return {rows * part / parts, rows * (part + 1) / parts - rows * part / parts};
}
// Full block `blk` of `blocks` over the panel `panel` of a group of `group`: its share of the group's
// k slice of `kc` rows (the far stream's; over the group's panels and blocks, each row once).
constexpr prefetch_share far_share(index_t kc, index_t panel, index_t group, index_t blk, index_t blocks) {
  const prefetch_share s = share_of(kc, panel % group, group), t = share_of(s.rows, blk, blocks);
  return {s.first + t.first, t.rows};
}

// Where gemm_range's walk over a row-major B is: the block of k rows [k0, k0 + kc) and columns
// [j0, j0 + nc) (its full panels packed by the first row block's kernels), within the range's k rows
// [kb, ke) and columns [c0, c1) walked in blocks of KC rows and NC columns, k innermost.
struct packed_block {
  index_t k0, kc, j0, nc, kb, ke, c1, KC, NC;
  // The block walked next (j0 >= c1: none).
  packed_block next() const {
    const bool next_k = k0 + KC < ke;
    const index_t k = next_k ? k0 + KC : kb, j = next_k ? j0 : j0 + NC;
    return {k, std::min(KC, ke - k), j, std::min(NC, c1 - j), kb, ke, c1, KC, NC};
  }
};
// The near and far streams of full block `blk` of `blocks` over the panel at column j0 + q.
template <class T>
std::array<panel_prefetch<T>, 2> row_major_prefetch(const matrix_ref<T>& b, const packed_block& w, index_t q, index_t blk, index_t blocks) {
  constexpr index_t NR = gemm_tile<T>::NR, ahead = prefetch_panels_ahead * NR, group = prefetch_group<T>;
  std::array<panel_prefetch<T>, 2> s{};
  const index_t full = w.nc / NR * NR;
  if (q + ahead < full) {
    const prefetch_share sh = share_of(w.kc, blk, blocks);
    s[0] = {b.p + (w.k0 + sh.first) * b.rs + w.j0 + q + ahead, b.rs, sh.rows, NR};
  }
  const index_t g = q / NR / group + 1; // the next group: in this block, or the next block's first
  if (g < full / NR / group) {
    const prefetch_share sh = far_share(w.kc, q / NR, group, blk, blocks);
    s[1] = {b.p + (w.k0 + sh.first) * b.rs + w.j0 + g * group * NR, b.rs, sh.rows, group * NR};
  } else if (const packed_block n = w.next(); g == full / NR / group && n.j0 < w.c1 && n.nc >= group * NR) {
    const prefetch_share sh = far_share(n.kc, q / NR, group, blk, blocks);
    s[1] = {b.p + (n.k0 + sh.first) * b.rs + n.j0, b.rs, sh.rows, group * NR};
  }
  return s;
}
// A B stored transposed (a weight [N, K] read as wᵀ) is packed by pack_b, a block at a time in a pass
// of its own (register transposes), before the kernels. The first row block's full blocks ask for the
// next block's rows of w (nc rows of kc values: runs of 1 KiB) while they run over this one, a share
// per full panel and block, and pack_b finds them in cache. Zen 5, one thread, K = N = 4096, GFLOP/s:
// AVX2 M = 16 54 -> 60, M = 32 68 -> 77; AVX-512 M = 32 71 -> 82; AVX2 1024^3 alike.
template <class T>
panel_prefetch<T> transposed_prefetch(const matrix_ref<T>& b, const packed_block& w, index_t q, index_t blk, index_t blocks) {
  constexpr index_t NR = gemm_tile<T>::NR;
  const packed_block n = w.next();
  if (n.j0 >= w.c1 || w.nc < NR) return {};
  const prefetch_share s = share_of(n.nc, q / NR, w.nc / NR), t = share_of(s.rows, blk, blocks);
  return {b.p + (n.j0 + s.first + t.first) * b.cs + n.k0, b.cs, t.rows, n.kc};
}

// C[r0:r1, c0:c1] = A[r0:r1, :] B[:, c0:c1] for an M x K by K x N product. Every element is summed in
// the same order whatever the rectangle, so splitting C over threads never changes a bit. A and B are
// operands that pack_a / pack_b accept: a strided matrix_ref, or an implicit one (cpu/conv_pack.hpp:
// im2col read through the window geometry), found by argument-dependent lookup.
// The blocking comes from `cfg` (cpu/gemm_config.hpp); the same cfg gives the same bits whatever the
// rectangle.
template <class T, class OA, class OB, class Out>
void gemm_range(const OA& a, const OB& b, index_t M, index_t K, const gemm_part& part, const Out& out, const gemm_config& cfg = {}) {
  const index_t r0 = part.r0, r1 = part.r1, c0 = part.c0, c1 = part.c1, kb = part.k0, ke = part.k1 < 0 ? K : part.k1;
  using G = gemm_tile<T>;
  constexpr index_t MR = G::MR, NR = G::NR;
  const index_t MC = MR * std::max<index_t>(1, cfg.mc_panels);
  const index_t NC = NR * std::clamp<index_t>(cfg.nc_panels, 1, gemm_config::max_nc_panels);
  auto& ws = gemm_workspace<T>::local();

  // A few rows (the inference case: M = 1..16 tokens through a weight matrix) use each value of B once
  // or twice, so packing B would only add a pass over it: the kernels read a row-major B in place, in
  // short k slices so that only a few rows of B stream at once (as many as the prefetcher follows).
  // The choice depends on M, not on the rectangle: it sets the order of the sums.
  if constexpr (std::is_same_v<OA, matrix_ref<T>> && std::is_same_v<OB, matrix_ref<T>>) {
    if (kb > 0 || ke < K) { // (a slice of k: gemm_k_sliced's products, which take the blocked path)
    } else if (M <= gemm_in_place_rows<T> && a.cs == 1 && b.rs == 1 && b.cs != 0) return gemm_dot_rows<T>(a, b, K, part, out);
    if (M == 1 && b.cs == 1) return gemm_one_row<T>(a, b, K, part, out);
  }
  const bool b_in_place = reads_b_in_place<T>(b, M, cfg);
  // The blocks and panel width where B is read in place and A is a matrix (packed by blocks of rows).
  const bool wide = std::is_same_v<OA, matrix_ref<T>> && b_in_place && gemm_in_place_wide<T>(M);
  const index_t MRb = wide ? gemm_in_place_tile<T>::MR : MR, NRi = wide ? gemm_in_place_tile<T>::NR : NR;
  // B packed already (a Prepacked weight): its panels are read where pack_b's copy would be; the same
  // values in the same layout, so the same bits. (Its panels start at multiples of NR columns.)
  const T* panels = nullptr;
  index_t panel_k = 0;
  if constexpr (std::is_same_v<OB, matrix_ref<T>>)
    if (b.panels && c0 % NR == 0) panels = b.panels, panel_k = b.panel_k;
  // A row-major B that is packed, under at least MR rows: the first row block's kernel (MR rows) packs
  // each full panel as it reads it (gemm_packing_kernel), pack_b only the last, partial one. The copy's
  // loads then overlap the FMAs instead of running before them. Measured on Zen 5 (one thread, GFLOP/s,
  // bench/RESULTS.md): AVX2 M = 16, K = N = 4096 65-68 -> 70-76, 32 x 4096 x 4096 77 -> 83, AVX-512
  // 112-131 -> 158-164; 1024^3 and 2048^3 within the noise. (pack_a packs a matrix A in Group 1
  // panels, which the packing kernel reads.)
  bool packs_in_kernel = false;
  if constexpr (std::is_same_v<OA, matrix_ref<T>> && std::is_same_v<OB, matrix_ref<T>>)
    packs_in_kernel = !b_in_place && !panels && b.cs == 1 && r1 - r0 >= MR;
  const index_t KC = std::max<index_t>(1, b_in_place ? in_place_kc<T>(b, M, cfg) : cfg.kc), NCr = b_in_place ? c1 - c0 : NC;
  // The first row block's full kernels ask for B ahead (prefetch_share above): B packed by the first
  // kernel, Prepacked, or stored transposed, under an A packed in Group 1 panels.
  bool transposed_b = false;
  if constexpr (std::is_same_v<OB, matrix_ref<T>>) transposed_b = b.rs == 1 && b.cs != 1 && !panels;
  constexpr index_t Lda = a_in_place_lda<OA>();
  const bool prefetching = (packs_in_kernel || panels || transposed_b) && !b_in_place && Lda == 0;
  constexpr index_t pf_ahead = prefetch_panels_ahead * NR;
  for (index_t j0 = c0; j0 < c1; j0 += NCr) {
    const index_t nc = std::min(NCr, c1 - j0), np = (nc + NR - 1) / NR * NR;
    // Scratch C spans every row of the range, so each block is finished before its epilogue runs. Its
    // rows are padded by one vector so that a tile's rows are not all a power of two apart (same cache set).
    const index_t lds = np + G::W;
    T* scratch = Out::direct ? nullptr : ws.c.get((r1 - r0) * lds);
    for (index_t k0 = kb; k0 == kb || k0 < ke; k0 += KC) {
      const index_t kc = std::min(KC, ke - k0);
      const bool last = k0 + kc >= ke;
      const index_t full = b_in_place ? nc / NRi * NRi : 0; // panels read in place (NRi wide)
      const index_t by_kernel = packs_in_kernel ? nc / NR * NR : 0; // panels the first row block packs
      T* bp = panels ? nullptr : ws.b.get(kc * ((nc - full + NR - 1) / NR * NR));
      if (!panels) pack_b<T>(b, k0, kc, j0 + full + by_kernel, nc - full - by_kernel, bp + by_kernel * kc);
      [[maybe_unused]] const index_t* goff = nullptr;
      if constexpr (Lda > 0) goff = a_offsets(a, k0, kc);
      for (index_t i0 = r0; i0 < r1; i0 += MC) {
        const index_t mc = std::min(MC, r1 - i0);
        // The kernels' row blocks: MR rows at a time; where B is read in place (a few rows, each block a
        // pass over a panel of B) and A is a matrix, packed, blocks of equal rows instead: 16 rows as 8 + 8,
        // not 14 + 2, whose 2-row pass loads as much of B as the 14-row one (AVX-512 on Zen 5, M = 16, K =
        // N = 4096: 43-49 -> 58-94 GFLOP/s). Which kernel computes an element does not change its sum.
        // (pack_a packs such a block as one panel of its rows, in groups of 1; conv's implicit A packs in
        // its own groups, and an A read in place cuts its blocks at its output rows.)
        const bool even_blocks = std::is_same_v<OA, matrix_ref<T>> && b_in_place;
        const index_t blocks = (mc + MRb - 1) / MRb, even = mc / blocks, extra = mc % blocks, fblocks = std::min(mc / MR, prefetch_blocks);
        auto block_rows = [&](index_t blk, index_t p) { return even_blocks ? even + (blk < extra ? 1 : 0) : std::min(MR, mc - p); };
        T* ap = nullptr;
        [[maybe_unused]] index_t group, kcg = 0;
        if constexpr (Lda > 0) group = OA::group;
        else { // (rounded up to whole groups of k, plus slack for pack_a's gathers)
          ap = ws.a.get(mc * ((kc + G::W - 1) / G::W * G::W) + G::W);
          if (even_blocks) { // (each block a panel of its own rows: pack_a's group is 1 for such panels)
            for (index_t p = 0, blk = 0; p < mc; ++blk) {
              const index_t rows = block_rows(blk, p);
              pack_a<T>(a, i0 + p, rows, k0, kc, ap + p * kc);
              p += rows;
            }
            group = 1, kcg = kc;
          } else group = pack_a<T>(a, i0, mc, k0, kc, ap), kcg = (kc + group - 1) / group * group;
        }
        index_t ldc;
        T* cblk;
        if constexpr (Out::direct) ldc = out.ldc, cblk = out.c + i0 * ldc + j0;
        else ldc = lds, cblk = scratch + (i0 - r0) * lds;
        for (index_t q = 0; q < nc; q += q < full ? NRi : NR) {
          // Scratch rows are padded to whole panels; the destination is not. A panel at most one vector
          // wide (its other half zeros) takes the one-vector kernels.
          const index_t real = std::min(NR, nc - q), cols = Out::direct ? real : real <= G::W ? G::W : NR;
          const auto& table = [&]() -> const auto& {
            if constexpr (Lda > 0) return real <= G::W ? gemm_kernel_table<T, 1, OA::group, Lda> : gemm_kernel_table<T, G::NV, OA::group, Lda>;
            else
              return real <= G::W ? (group == 1 ? gemm_kernel_table<T, 1, 1> : gemm_kernel_table<T, 1, G::W>)
                                  : (group == 1 ? gemm_kernel_table<T, G::NV, 1> : gemm_kernel_table<T, G::NV, G::W>);
          }();
          const index_t whole = real <= G::W ? G::W : NR;
          // (bp + (q - full) * kc only past the panels read in place: before them bp may be null)
          const T* bq = panels ? panels + (j0 + q) / NR * panel_k * NR + k0 * NR : q < full ? nullptr : bp + (q - full) * kc;
          index_t ldb = NR;
          if constexpr (std::is_same_v<OB, matrix_ref<T>>)
            if (q < full) {
              bq = b.p + k0 * b.rs + j0 + q, ldb = b.rs;
              // The k slice's rows of B (in_place_kc of them, each its own stream) are read a panel at a
              // time, too many streams for the hardware prefetchers: each row's part of the panel 8
              // panels on is asked for now, into L2. Measured on Zen 5 (one thread, K = N = 4096,
              // bench/RESULTS.md): M = 8 +20-30%, M = 16 +15-25% with AVX-512; M = 2 and 4 +40-50% with AVX2.
              const index_t ahead = 8 * NRi;
              if (q + ahead < full)
                for (index_t kk = 0; kk < kc; ++kk) {
                  __builtin_prefetch(bq + kk * ldb + ahead, 0, 2);
                  __builtin_prefetch(bq + kk * ldb + ahead + NR - 1, 0, 2);
                }
            }
          for (index_t p = 0, blk = 0; p < mc; ++blk) {
            index_t rows = block_rows(blk, p);
            const T* at = ap + p * kcg;
            if constexpr (Lda > 0) at = a_panel(a, i0 + p, rows, rows); // (rows of one output row)
            const bool asks = prefetching && i0 == r0 && rows == MR && real == NR && blk < fblocks;
            if (asks && q < by_kernel) { // (B row-major, packed by the first block's kernel)
              if constexpr (std::is_same_v<OB, matrix_ref<T>>) {
                const auto [near, far] = row_major_prefetch<T>(b, {k0, kc, j0, nc, kb, ke, c1, KC, NCr}, q, blk, fblocks);
                if (p == 0) gemm_packing_kernel<T>(at, b.p + k0 * b.rs + j0 + q, b.rs, kc, cblk + q, ldc, k0 > kb, bp + q * kc, near, far);
                else gemm_prefetching_kernel<T>(at, bq, kc, cblk + p * ldc + q, ldc, k0 > kb, near, far);
              }
            } else if (asks && transposed_b && group == 1) { // (wᵀ: the next block, for pack_b)
              if constexpr (std::is_same_v<OB, matrix_ref<T>>)
                gemm_prefetching_kernel<T>(at, bq, kc, cblk + p * ldc + q, ldc, k0 > kb, {},
                                           transposed_prefetch<T>(b, {k0, kc, j0, nc, kb, ke, c1, KC, NCr}, q, blk, fblocks));
            } else if (asks && panels && group == 1) { // (a Prepacked B: its panels lie one after another)
              panel_prefetch<T> near;
              if (q + pf_ahead < nc) {
                const prefetch_share sh = share_of(kc, blk, fblocks);
                near = {panels + (j0 + q + pf_ahead) / NR * panel_k * NR + (k0 + sh.first) * NR, NR, sh.rows, NR};
              }
              gemm_prefetching_kernel<T>(at, bq, kc, cblk + p * ldc + q, ldc, k0 > kb, near, {});
            } else if (wide && q < full) {
              if constexpr (gemm_in_place_tile<T>::used)
                gemm_in_place_kernels<T>[rows - 1](at, goff, bq, ldb, kc, cblk + p * ldc + q, ldc, NRi, k0 > kb);
            } else table[cols == whole][rows - 1](at, goff, bq, ldb, kc, cblk + p * ldc + q, ldc, cols, k0 > kb);
            p += rows;
          }
        }
        if constexpr (!Out::direct)
          if (last) out.epilogue(static_cast<const T*>(cblk), ldc, i0, mc, j0, nc);
      }
    }
  }
}

// How one batch element's C is cut into `parts` rectangles (one per task). Along M when there are
// rows enough: each thread packs only its own rows of A (the scalar, transposing copy) and all of B (a
// vector copy, the cheaper one to repeat). Along N for a few rows (the inference case), where B is the
// big operand and each thread then streams only its share of it. `axis` may force either, where that
// axis has a tile for every part (a tuned `columns` on a product 32 columns wide would leave a thread
// idle: there the automatic choice holds).
template <class T>
gemm_part gemm_split(index_t M, index_t N, index_t part, index_t parts, gemm_split_axis axis = gemm_split_axis::automatic) {
  constexpr index_t MR = gemm_tile<T>::MR, NR = gemm_tile<T>::NR;
  auto cut = [&](index_t n, index_t unit, index_t p) { return std::min(n, (n * p / parts + unit - 1) / unit * unit); };
  if ((axis == gemm_split_axis::columns && N < parts * NR) || (axis == gemm_split_axis::rows && M < parts * MR))
    axis = gemm_split_axis::automatic;
  const bool rows = axis == gemm_split_axis::automatic ? (M >= parts * 4 * MR || N < parts * NR) : axis == gemm_split_axis::rows;
  if (rows) return {cut(M, MR, part), cut(M, MR, part + 1), 0, N};
  return {0, M, cut(N, NR, part), cut(N, NR, part + 1)};
}

// The split of a matmul's C over threads where the configuration leaves it automatic: gemm_split's,
// except where B is the larger operand (N > M; with few rows gemm_split cuts along N anyway) and is not
// packed already: then along N, so that each thread packs all of A and its share of B, less to copy than its rows of A
// and all of B (a weight's gradient xᵀ g, [128, 768] by [768, 384], packed all of g, 1.2 MB, on each
// thread for 64 rows). (Not for convolutions: their A is an implicit im2col, the dearer one to pack.)
// A tuned table's `columns` spares each thread packing all of B; where B is packed already (Prepacked)
// there is nothing to spare and it would only make each thread pack all of A, so gemm_split decides
// (MiniLM at 32 x 128, Intel model 167: 286 -> 303 ms with the large class's columns applied).
template <class T>
constexpr gemm_split_axis matmul_split_axis(index_t M, index_t N, bool b_packed, gemm_split_axis configured) {
  constexpr index_t NR = gemm_tile<T>::NR;
  if (b_packed && configured == gemm_split_axis::columns) return gemm_split_axis::automatic;
  if (configured != gemm_split_axis::automatic || b_packed || N <= M || N < 2 * NR) return configured;
  return gemm_split_axis::columns;
}

// How `batches` independent M x N x K products are spread over the pool: on the calling thread when
// small (waking the pool costs more than they take), whole products per thread when there are enough
// of them, else each one cut into parts (gemm_split). Large products get several parts per thread,
// handed out one at a time: a thread slowed by other work on its core (a shared machine) then takes
// fewer parts instead of holding up the result, for one more packing of B per part (~1% at 1024^3).
// `resident`: a few rows through a large weight, split along N with part i always on thread i, so that
// each core keeps its share of the weight in its own L2 from one call to the next. run_gemm, the
// convolutions and tools/tune all schedule through here.
struct gemm_schedule {
  index_t threads = 1, parts = 1;
  bool resident = false;
};
inline gemm_schedule schedule_gemm(index_t M, index_t N, index_t K, index_t batches, bool resident, const gemm_config& cfg) {
  const double flops = 2.0 * double(M) * double(N) * double(K);
  gemm_schedule s;
  s.resident = resident;
  s.threads = flops * double(batches) < 4e6 && !resident ? 1 : thread_pool::instance().size();
  s.parts = batches >= s.threads ? 1 : s.threads * (flops >= 2e8 ? std::max<index_t>(1, cfg.parts_per_thread) : 1);
  return s;
}
// Runs task(t0, t1) over the schedule's batches x parts tasks.
template <class Task>
void run_gemm_tasks(const gemm_schedule& s, index_t batches, Task&& task) {
  const index_t tasks = batches * s.parts;
  if (s.threads == 1) task(index_t(0), tasks);
  else if (s.resident && s.parts == s.threads) {
    auto own = [&](int t) { task(index_t(t), index_t(t) + 1); };
    thread_pool::instance().run_on_own_threads(own);
  } else if (s.parts > s.threads) {
    auto one = [&](int t) { task(index_t(t), index_t(t) + 1); };
    thread_pool::instance().run(int(tasks), one);
  } else parallel_for(tasks, 1, 1, task);
}

// How many slices of k a product is summed in: more than one where its sums are long beside both of
// C's sides (a weight gradient: 9 x 16 or 144 x 32 outputs, each over a batch's positions), so that
// each slice is a task. Cut along M or N instead, every thread would pack all of the long B (for a
// convolution's kernel, a strided gather) or C would not cut at all. (Each slice's C is a block of
// scratch: at most 64 Ki elements.) A function of the shape alone: the bits do not depend on the
// number of threads.
template <class T>
constexpr index_t gemm_k_slices(index_t M, index_t N, index_t K) {
  if (K < 4096 || K < 16 * std::max(M, N) || M * N > 65536 || 2.0 * double(M) * double(N) * double(K) < 4e6) return 1;
  return K >= 16384 ? 8 : K >= 8192 ? 4 : 2;
}

// Where slice s of `slices` starts (s = slices: K): at a multiple of kc, so each slice is whole KC slices but the last.
constexpr index_t gemm_k_slice_start(index_t K, index_t s, index_t slices, index_t kc) {
  return s == slices ? K : std::min(K, (K * s / slices + kc - 1) / kc * kc);
}

// C = A B over `slices` slices of k (gemm_k_slice_start), the slices' products run on
// the pool into blocks of the calling thread's scratch, then added in slice order and stored as
// gemm_range stores C (into the destination, or a block handed to the epilogue). Call it from the
// thread that owns the product, not from a pool task.
template <class T, class OA, class OB, class Out>
void gemm_k_sliced(const OA& a, const OB& b, index_t M, index_t N, index_t K, index_t slices, const Out& out, const gemm_config& cfg) {
  const index_t block = M * N, kc = std::max<index_t>(1, cfg.kc);
  T* partial = gemm_workspace<T>::local().k.get(slices * block);
  auto bound = [&](index_t s) { return gemm_k_slice_start(K, s, slices, kc); };
  auto task = [&](index_t s0, index_t s1) {
    for (index_t s = s0; s < s1; ++s)
      gemm_range<T>(a, b, M, K, gemm_part{0, M, 0, N, bound(s), bound(s + 1)}, gemm_direct_out<T>{partial + s * block, N}, cfg);
  };
  parallel_for(slices, 1, 1, task); // (one thread: all slices in order on the caller)
  for (index_t s = 1; s < slices; ++s)
    for (index_t i = 0; i < block; ++i) partial[i] += partial[s * block + i];
  if constexpr (Out::direct) {
    for (index_t r = 0; r < M; ++r) std::copy_n(partial + r * N, N, out.c + r * out.ldc);
  } else {
    out.epilogue(static_cast<const T*>(partial), N, 0, M, 0, N);
  }
}
} // namespace tenfold::cpu
