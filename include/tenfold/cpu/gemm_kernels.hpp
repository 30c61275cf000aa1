#pragma once
// GEMM register tiles. A micro-kernel keeps an MR x NR tile of C in vector registers and, for each k,
// loads NR/W vectors of B and broadcasts MR scalars of A into them with FMAs. The tile is sized to the
// register file of the target xsimd compiles for:
//  - 32 vector registers (AVX-512): 14 x 2W — 28 accumulators, 2 B vectors and 1 broadcast of A. It
//    reads the fewest bytes per FMA of the tiles that fit (46 values per 28 FMAs; 8 x 3W: 56 per 24,
//    6 x 4W: 70 per 24). Against 8 x 3W, 12 x 2W and 6 x 4W (TENFOLD_GEMM_MR / _NV) on the bench
//    machine no tile was faster by more than the run-to-run noise (±10%).
//  - 16 vector registers (AVX2, SSE, NEON-sized): 6 x 2W — 12 accumulators + 2 B vectors + 1 broadcast.
// Every row count 1..MR has its own instantiation, so an M edge costs only the rows it has (M = 1, the
// inference case, runs a 1 x NR kernel rather than a padded MR x NR one).
#include <array>
#include <utility>

#include "tenfold/cpu/rows.hpp"

namespace tenfold::cpu {

// Rows of B asked for by a kernel as it runs (into L1: prefetcht0): `rows` rows `ld` apart, `width`
// values from each, spread evenly over the kernel's kc steps (one row every kc / rows steps). The
// first row block's kernels over a panel share the rows that later kernels will read (cpu/gemm.hpp:
// panel_prefetch_rows), so that the reads from memory run at an even rate through the whole product,
// not in bursts that only the first kernel of each panel issues. Only the address is formed: a
// prefetch neither faults nor reads anything the program sees.
template <class T>
struct panel_prefetch {
  const T* p = nullptr;
  index_t ld = 0, rows = 0, width = 0, count = 0;
  TENFOLD_INLINE void step(index_t kc) {
    count += rows;
    while (count >= kc) { // (once per step at most, but where a share has more rows than the kernel steps)
      count -= kc;
      for (index_t o = 0; o < width; o += index_t(64 / sizeof(T))) __builtin_prefetch(p + o, 0, 3);
      p += ld;
    }
  }
};

template <class T>
struct gemm_tile {
  static constexpr index_t W = lanes<T>;
  static constexpr bool wide_file = sizeof(batch<T>) == 64; // AVX-512: 32 registers
#if defined(TENFOLD_GEMM_MR) && defined(TENFOLD_GEMM_NV) // for measuring other tiles
  static constexpr index_t MR = TENFOLD_GEMM_MR, NV = TENFOLD_GEMM_NV;
#else
  static constexpr index_t MR = wide_file ? 14 : 6;
  static constexpr index_t NV = 2; // vectors of B per k
#endif
  static constexpr index_t NR = NV * W;
};

// C[rows x cols] (row stride ldc) = (accumulate ? C : 0) + Apanel · Bpanel over kc, and B's k-th row of
// NR values starts at b + k * ldb (ldb = NR for a packed panel; the operand's own row stride when B is
// read in place). The A panel is packed in groups of `Group` consecutive k, each group row by row:
// a[(k / Group) * Rows * Group + r * Group + k % Group]. Group 1 is the classic k-major panel (a transposed A copies
// into it by vectors); Group W lets an A whose k runs are contiguous (NHWC im2col: runs of
// channels) be copied in by vectors instead of transposed. Either way every broadcast is at a constant
// offset and each element of C is summed in k order: the same bits.
// Lda > 0: A is not a packed panel but read where it lies (cpu/conv_padded.hpp: im2col over a padded
// input): group g's value of row r and k % Group = j is a[goff[g] + r * Lda + j] (with Lda = Group and
// goff[g] = g * Rows * Group that is the packed panel). The same values in the same order: the same bits.
// cols < NR goes through a register-sized buffer so that nothing past the tile is touched.
// NV: the vectors of each B row used (the tile's NV, or 1 for a product at most one vector wide, whose
// packed panels' second half is zeros: half the FMAs, the same sums in the same order).
// Pack (gemm_packing_kernel, below): B is read in place and each of its k rows is also stored to `pk`,
// NV W values a row: the packed panel, for the row blocks after this one.
// Pf (the packing and the prefetching kernels): the kernel also asks for rows of B that later kernels
// read, spread evenly over its k loop (a panel_prefetch stream each, see below).
template <class T, int Rows, bool Full, index_t NV, index_t Group, index_t Lda, bool Pack, bool Pf = Pack>
TENFOLD_INLINE void gemm_micro_kernel_body(const T* a, const index_t* goff, const T* b, index_t ldb, index_t kc, T* c, index_t ldc,
                                           index_t cols, bool accumulate, T* pk, panel_prefetch<T> near = {},
                                           panel_prefetch<T> far = {}) {
  using G = gemm_tile<T>;
  using B = batch<T>;
  constexpr index_t W = G::W;
  B acc[Rows][NV];
  // C is added after the k loop, not loaded before it: its tile was last touched a whole KC slice ago
  // and is usually out of L1 and L2, so it is prefetched now and read once the FMAs have hidden the wait.
  // Into L2, not L1: with a row stride of 4 or 8 KiB every row of the tile falls in the same L1 set,
  // and the A and B streams would evict the tile before the k loop ends.
  if (accumulate)
    for (int r = 0; r < Rows; ++r) {
      __builtin_prefetch(c + r * ldc, 0, 2);
      __builtin_prefetch(c + r * ldc + NV * W - 1, 0, 2);
    }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) acc[r][v] = B(T(0));
#pragma GCC unroll 4
  for (index_t k0 = 0; k0 < kc; k0 += Group) {
    const index_t g = Group == 1 ? 1 : std::min(Group, kc - k0);
    const T* ag = Lda > 0 ? a + *goff++ : a;
    for (index_t j = 0; j < g; ++j) {
      B bv[NV];
      if constexpr (Pf) near.step(kc), far.step(kc);
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) bv[v] = B::load_unaligned(b + v * W);
      if constexpr (Pack) {
#pragma GCC unroll 4
        for (index_t v = 0; v < NV; ++v) bv[v].store_aligned(pk + v * W);
        pk += NV * W;
      }
#pragma GCC unroll 16
      for (int r = 0; r < Rows; ++r) {
        const B av(ag[r * (Lda > 0 ? Lda : Group) + j]);
#pragma GCC unroll 4
        for (index_t v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(av, bv[v], acc[r][v]);
      }
      b += ldb;
    }
    if constexpr (Lda == 0) a += Rows * Group;
  }
  // Full tiles (the common case) are a separate instantiation, so that no branch on cols keeps the
  // accumulators from going straight from registers to C.
  if constexpr (Full) {
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) {
        if (accumulate) acc[r][v] += B::load_unaligned(c + r * ldc + v * W);
        acc[r][v].store_unaligned(c + r * ldc + v * W);
      }
  } else {
    alignas(default_alignment) T tmp[NV * W];
    for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) acc[r][v].store_aligned(tmp + v * W);
      for (index_t j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[j] : tmp[j];
    }
  }
}
template <class T, int Rows, bool Full, index_t NV = gemm_tile<T>::NV, index_t Group = 1, index_t Lda = 0>
void gemm_micro_kernel(const T* a, const index_t* goff, const T* b, index_t ldb, index_t kc, T* c, index_t ldc, index_t cols,
                       bool accumulate) {
  gemm_micro_kernel_body<T, Rows, Full, NV, Group, Lda, false>(a, goff, b, ldb, kc, c, ldc, cols, accumulate, nullptr);
}

// A full MR x NR tile over a k-major A panel (Group 1) and a row-major B read in place, rows ldb apart,
// that stores B's panel to pk (kc x NR, as pack_b lays it out) as it goes: the first row block of a
// product packs B while it computes instead of in a pass of its own before. Full rows only: one more
// kernel per element type (every row count cost a translation unit that instantiates the GEMM about
// 1.5 s more at -O3 on AVX-512, 14 kernels).
template <class T>
void gemm_packing_kernel(const T* a, const T* b, index_t ldb, index_t kc, T* c, index_t ldc, bool accumulate, T* pk,
                         const panel_prefetch<T>& near, const panel_prefetch<T>& far) {
  using G = gemm_tile<T>;
  gemm_micro_kernel_body<T, int(G::MR), true, G::NV, 1, 0, true>(a, nullptr, b, ldb, kc, c, ldc, G::NR, accumulate, pk, near, far);
}
// The full MR x NR tile over packed panels of A and B that also asks for rows of B (the first row
// block's other full blocks, cpu/gemm.hpp): the same sums as gemm_micro_kernel's.
template <class T>
void gemm_prefetching_kernel(const T* a, const T* b, index_t kc, T* c, index_t ldc, bool accumulate, const panel_prefetch<T>& near,
                             const panel_prefetch<T>& far) {
  using G = gemm_tile<T>;
  gemm_micro_kernel_body<T, int(G::MR), true, G::NV, 1, 0, false, true>(a, nullptr, b, G::NR, kc, c, ldc, G::NR, accumulate, nullptr,
                                                                       near, far);
}

// The kernel for `rows` (1..MR) rows and full or partial columns, chosen at run time from tables built
// at compile time: gemm_kernel_table<T, NV, G, Lda>[cols == NV * W][rows - 1], for the A panel's grouping
// G (1 or W), NV = 1 for a panel at most one vector wide (N = 16 on AVX-512: a CNN's narrow layers), and
// A's row stride where it is read in place (Lda > 0; goff is unused for packed panels).
template <class T>
using gemm_kernel_fn = void (*)(const T*, const index_t*, const T*, index_t, index_t, T*, index_t, index_t, bool);
template <class T, bool Full, index_t NV, index_t G, index_t Lda>
inline constexpr auto gemm_kernel_row = []<std::size_t... R>(std::index_sequence<R...>) {
  return std::array<gemm_kernel_fn<T>, sizeof...(R)>{&gemm_micro_kernel<T, int(R) + 1, Full, NV, G, Lda>...};
}(std::make_index_sequence<gemm_tile<T>::MR>{});
template <class T, index_t NV, index_t G, index_t Lda = 0>
inline constexpr std::array<std::array<gemm_kernel_fn<T>, gemm_tile<T>::MR>, 2> gemm_kernel_table{gemm_kernel_row<T, false, NV, G, Lda>,
                                                                                                    gemm_kernel_row<T, true, NV, G, Lda>};

// A few rows through a B read in place (cpu/gemm.hpp), on 16 vector registers: row blocks of up to 4
// rows with three vectors of B per k (4 x 3W: 12 accumulators, 3 B vectors, 1 broadcast), 12 FMAs per 7
// loads where a 4-row block of the 6 x 2W tile does 8 per 6. Full tiles only; cpu::gemm_in_place_wide
// says which products take them. (With 32 registers the 14 x 2W tile's blocks load little enough.)
template <class T>
struct gemm_in_place_tile {
  static constexpr bool used = !gemm_tile<T>::wide_file;
  static constexpr index_t MR = 4, NV = 3, NR = NV * gemm_tile<T>::W;
};
template <class T>
inline constexpr auto gemm_in_place_kernels = []<std::size_t... R>(std::index_sequence<R...>) {
  return std::array<gemm_kernel_fn<T>, sizeof...(R)>{&gemm_micro_kernel<T, int(R) + 1, true, gemm_in_place_tile<T>::NV>...};
}(std::make_index_sequence<gemm_in_place_tile<T>::MR>{});
} // namespace tenfold::cpu
