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
#include <memory>

#include "tenfold/cpu/gemm_pack.hpp"
#include "tenfold/cpu/scratch.hpp"
#include "tenfold/cpu/thread_pool.hpp"

namespace tenfold::cpu {

// Cache blocking, sized for the bench machine's caches (48 KiB L1d, 2 MiB L2 per core; bench/RESULTS.md
// has the measurements). A build for other caches can set TENFOLD_GEMM_KC / _MC_PANELS / _NC_PANELS.
#ifndef TENFOLD_GEMM_KC
#define TENFOLD_GEMM_KC 256
#endif
#ifndef TENFOLD_GEMM_MC_PANELS
#define TENFOLD_GEMM_MC_PANELS 24
#endif
#ifndef TENFOLD_GEMM_NC_PANELS
#define TENFOLD_GEMM_NC_PANELS 32
#endif
template <class T>
struct gemm_blocking {
  using G = gemm_tile<T>;
  // A KC x NR panel of B plus an MR x KC panel of A fit the 48 KiB L1 with room for C's tile.
  static constexpr index_t KC = TENFOLD_GEMM_KC;
  // An MC x KC block of A takes about a sixth of the 2 MiB L2, leaving it for the B block and C.
  static constexpr index_t MC = G::MR * TENFOLD_GEMM_MC_PANELS;
  // A KC x NC block of B (1 MiB in f32) is read once per MC block, from L2 or L3.
  static constexpr index_t NC = G::NR * TENFOLD_GEMM_NC_PANELS;
  // B read in place (not packed) when a range has at most this many rows, in slices of this many k.
  static constexpr index_t MR_in_place = 2 * G::MR, KC_in_place = 32;
};

// Per-thread packing and scratch buffers for the GEMM.
template <class T>
class gemm_workspace {
  struct a_tag;
  struct b_tag;
  struct c_tag;

 public:
  scratch_buffer<T, a_tag> a;
  scratch_buffer<T, b_tag> b;
  scratch_buffer<T, c_tag> c;
  static gemm_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] { local().grow_to_largest(); }), true);
    static thread_local gemm_workspace w;
    return w;
  }
  void grow_to_largest() { a.grow_to_largest(), b.grow_to_largest(), c.grow_to_largest(); }
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

// A rectangle of C: rows [r0, r1), columns [c0, c1).
struct gemm_part {
  index_t r0, r1, c0, c1;
};

// C[r0:r1, c0:c1] for a few rows of A (contiguous along k) and B stored transposed, [N, K] with
// contiguous rows: a linear layer's weight in PyTorch's layout. Each element is the dot product of a
// row of A and a row of the weight, 4 x 4 elements at a time: W-lane partial sums over k, then summed
// across the lanes, then the k % W tail — one order per element, whatever rectangle a thread gets.
// The packed path would first copy all of B with gathers to use each value only M times: for 16 tokens
// through all-MiniLM-L6-v2 that packing took 45% of the forward pass.
template <class T, class Out>
void gemm_dot_rows(const matrix_ref<T>& a, const matrix_ref<T>& b, index_t K, const gemm_part& part, const Out& out) {
  using B = batch<T>;
  constexpr index_t W = index_t(B::size);
  const index_t rows = part.r1 - part.r0, cols = part.c1 - part.c0, kv = K / W * W;
  T* c;
  index_t ldc;
  if constexpr (Out::direct) c = out.c + part.r0 * out.ldc + part.c0, ldc = out.ldc;
  else c = gemm_workspace<T>::local().c.get(rows * cols), ldc = cols;
  for (index_t j = 0; j < cols; j += 4) {
    const index_t nj = std::min<index_t>(4, cols - j);
    const T* w[4];
    for (index_t q = 0; q < 4; ++q) w[q] = b.p + (part.c0 + j + std::min(q, nj - 1)) * b.cs; // short blocks repeat a row
    for (index_t i = 0; i < rows; i += 4) {
      const index_t ni = std::min<index_t>(4, rows - i);
      const T* x[4];
      for (index_t p = 0; p < 4; ++p) x[p] = a.p + (part.r0 + i + std::min(p, ni - 1)) * a.rs;
      B acc[4][4];
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p)
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) acc[p][q] = B(T(0));
      for (index_t k = 0; k < kv; k += W) {
        B wv[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) wv[q] = B::load_unaligned(w[q] + k);
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          const B xv = B::load_unaligned(x[p] + k);
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) acc[p][q] = xsimd::fma(xv, wv[q], acc[p][q]);
        }
      }
      for (index_t p = 0; p < ni; ++p)
        for (index_t q = 0; q < nj; ++q) {
          T sum = xsimd::hadd(acc[p][q]);
          for (index_t k = kv; k < K; ++k) sum += x[p][k] * w[q][k];
          c[(i + p) * ldc + j + q] = sum;
        }
    }
  }
  if constexpr (!Out::direct) out.epilogue(static_cast<const T*>(c), ldc, part.r0, rows, part.c0, cols);
}

// C[0, c0:c1] for one row of A and a row-major B read in place (a decode step: one token through a
// weight matrix stored [in, out]). The tiled kernels give one row two vectors of accumulators, each
// FMA waiting on the one before (the latency, 4 cycles, bounds them to a quarter of the FMA units);
// here 8 vectors of columns run side by side. Each element is summed in k order, whatever rectangle a
// thread gets; the choice of this kernel depends on M alone.
template <class T, class Out>
void gemm_one_row(const matrix_ref<T>& a, const matrix_ref<T>& b, index_t K, const gemm_part& part, const Out& out) {
  using B = batch<T>;
  constexpr index_t W = index_t(B::size), V = 8;
  const index_t cols = part.c1 - part.c0;
  T* c;
  if constexpr (Out::direct) c = out.c + part.c0;
  else c = gemm_workspace<T>::local().c.get(cols + W);
  const T* bp = b.p + part.c0;
  index_t j = 0;
  for (; j + V * W <= cols; j += V * W) {
    B acc[V];
#pragma GCC unroll 8
    for (index_t v = 0; v < V; ++v) acc[v] = B(T(0));
    for (index_t k = 0; k < K; ++k) {
      const B x(a.p[k * a.cs]);
      const T* row = bp + k * b.rs + j;
#pragma GCC unroll 8
      for (index_t v = 0; v < V; ++v) acc[v] = xsimd::fma(x, B::load_unaligned(row + v * W), acc[v]);
    }
#pragma GCC unroll 8
    for (index_t v = 0; v < V; ++v) acc[v].store_unaligned(c + j + v * W);
  }
  for (; j + W <= cols; j += W) {
    B acc(T(0));
    for (index_t k = 0; k < K; ++k) acc = xsimd::fma(B(a.p[k * a.cs]), B::load_unaligned(bp + k * b.rs + j), acc);
    acc.store_unaligned(c + j);
  }
  for (; j < cols; ++j) {
    T acc = 0;
    for (index_t k = 0; k < K; ++k) acc = std::fma(a.p[k * a.cs], bp[k * b.rs + j], acc);
    c[j] = acc;
  }
  if constexpr (!Out::direct) out.epilogue(static_cast<const T*>(c), cols, part.r0, 1, part.c0, cols);
}

// Whether B can be read in place by the kernels: a matrix of T in memory (not an implicit operand
// such as conv's im2col), with contiguous rows, for a product of a few rows.
template <class T, class OB>
bool reads_b_in_place(const OB& b, index_t M) {
  if constexpr (std::is_same_v<OB, matrix_ref<T>>) return b.cs == 1 && M <= gemm_blocking<T>::MR_in_place;
  else return false;
}

// C[r0:r1, c0:c1] = A[r0:r1, :] B[:, c0:c1] for an M x K by K x N product. Every element is summed in
// the same order whatever the rectangle, so splitting C over threads never changes a bit. A and B are
// operands that pack_a / pack_b accept: a strided matrix_ref, or an implicit one (cpu/conv_pack.hpp:
// im2col read through the window geometry), found by argument-dependent lookup.
template <class T, class OA, class OB, class Out>
void gemm_range(const OA& a, const OB& b, index_t M, index_t K, const gemm_part& part, const Out& out) {
  const index_t r0 = part.r0, r1 = part.r1, c0 = part.c0, c1 = part.c1;
  using G = gemm_tile<T>;
  using Bk = gemm_blocking<T>;
  constexpr index_t MR = G::MR, NR = G::NR;
  auto& ws = gemm_workspace<T>::local();
  const auto& kernels = gemm_kernels<T>;
  // A few rows (the inference case: M = 1..16 tokens through a weight matrix) use each value of B once
  // or twice, so packing B would only add a pass over it: the kernels read a row-major B in place, in
  // short k slices so that only a few rows of B stream at once (as many as the prefetcher follows).
  // The choice depends on M, not on the rectangle: it sets the order of the sums.
  if constexpr (std::is_same_v<OA, matrix_ref<T>> && std::is_same_v<OB, matrix_ref<T>>) {
    if (M <= Bk::MR_in_place && a.cs == 1 && b.rs == 1 && b.cs != 0) return gemm_dot_rows<T>(a, b, K, part, out);
    if (M == 1 && b.cs == 1) return gemm_one_row<T>(a, b, K, part, out);
  }
  const bool b_in_place = reads_b_in_place<T>(b, M);
  const index_t KC = b_in_place ? Bk::KC_in_place : Bk::KC, NC = b_in_place ? c1 - c0 : Bk::NC;
  for (index_t j0 = c0; j0 < c1; j0 += NC) {
    const index_t nc = std::min(NC, c1 - j0), np = (nc + NR - 1) / NR * NR;
    // Scratch C spans every row of the range, so each block is finished before its epilogue runs. Its
    // rows are padded by one vector so that a tile's rows are not all a power of two apart (same cache set).
    const index_t lds = np + G::W;
    T* scratch = Out::direct ? nullptr : ws.c.get((r1 - r0) * lds);
    for (index_t k0 = 0; k0 == 0 || k0 < K; k0 += KC) {
      const index_t kc = std::min(KC, K - k0);
      const bool last = k0 + kc >= K;
      const index_t full = b_in_place ? nc / NR * NR : 0; // panels read in place
      T* bp = ws.b.get(kc * (np - full));
      pack_b<T>(b, k0, kc, j0 + full, nc - full, bp);
      for (index_t i0 = r0; i0 < r1; i0 += Bk::MC) {
        const index_t mc = std::min(Bk::MC, r1 - i0);
        T* ap = ws.a.get(mc * kc + G::W); // slack for pack_a's gathers
        pack_a<T>(a, i0, mc, k0, kc, ap);
        index_t ldc;
        T* cblk;
        if constexpr (Out::direct) ldc = out.ldc, cblk = out.c + i0 * ldc + j0;
        else ldc = lds, cblk = scratch + (i0 - r0) * lds;
        for (index_t q = 0; q < nc; q += NR) {
          // Scratch rows are padded to whole panels; the destination is not.
          const index_t cols = Out::direct ? std::min(NR, nc - q) : NR;
          const T* bq = bp + (q - full) * kc;
          index_t ldb = NR;
          if constexpr (std::is_same_v<OB, matrix_ref<T>>)
            if (q < full) bq = b.p + k0 * b.rs + j0 + q, ldb = b.rs;
          for (index_t p = 0; p < mc; p += MR)
            kernels[cols == NR][std::min(MR, mc - p) - 1](ap + p * kc, bq, ldb, kc, cblk + p * ldc + q, ldc, cols, k0 > 0);
        }
        if constexpr (!Out::direct)
          if (last) out.epilogue(static_cast<const T*>(cblk), ldc, i0, mc, j0, nc);
      }
    }
  }
}

// How one batch element's C is cut into `parts` rectangles (one per thread). Along M when there are
// rows enough: each thread packs only its own rows of A (the scalar, transposing copy) and all of B (a
// vector copy, the cheaper one to repeat). Along N for a few rows (the inference case), where B is the
// big operand and each thread then streams only its half of it.
template <class T>
gemm_part gemm_split(index_t M, index_t N, index_t part, index_t parts) {
  constexpr index_t MR = gemm_tile<T>::MR, NR = gemm_tile<T>::NR;
  auto cut = [&](index_t n, index_t unit, index_t p) { return std::min(n, (n * p / parts + unit - 1) / unit * unit); };
  if (M >= parts * 4 * MR || N < parts * NR) return {cut(M, MR, part), cut(M, MR, part + 1), 0, N};
  return {0, M, cut(N, NR, part), cut(N, NR, part + 1)};
}
} // namespace tenfold::cpu
