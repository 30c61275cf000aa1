#pragma once
// Packing for the GEMM: copies of A and B laid out in the order the micro-kernel reads them, so that
// it walks memory linearly whatever the operands' strides (a transposed operand costs only a different
// copy loop). The copy also converts (bf16 -> f32), so the kernels see one type.
#include "tenfold/cpu/gemm_kernels.hpp"
#include "tenfold/cpu/transpose.hpp"

namespace tenfold::cpu {

// A strided matrix operand: element (i, k) at p[i * rs + k * cs]. As the right operand, it may come
// packed already (a Prepacked weight, cpu/prepacked.hpp): NR-column panels of all `panel_k` rows,
// panel j at panels + j * panel_k * NR, laid out as pack_b lays out a block.
template <class E>
struct matrix_ref {
  const E* p;
  index_t rs, cs;
  const E* panels = nullptr;
  index_t panel_k = 0;
};

// Packing that transposes (a row-major A, or a B stored [N, K] as linear's weight) with hardware
// gathers: one instruction per k and vector, where a scalar copy moves each value on its own (the
// packing was 5-9% of a 1024^3 product with scalar copies, about half that with gathers).
template <class T, class E>
inline constexpr bool gather_pack_v = std::is_same_v<T, E> && (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                                      requires(const T* q, xsimd::batch<std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>> i) {
                                        xsimd::kernel::gather(q, i, typename batch<T>::arch_type{});
                                      };

// On 8-float vectors (AVX2) a block of 8 k by 8 rows is transposed in registers instead: 24 shuffles
// and 8 loads where 8 gathers take several times as long (Zen 3: packing a weight stored [N, K] was 23%
// of the transformer block with gathers). Rows r < Rows of src (row stride ld, k contiguous) become
// dst[k * ldd + r] for k < 8; rows past Rows repeat the last one (their lanes are slack the caller
// overwrites), and each dst row is stored whole, in k order.
#if defined(__AVX__)
inline constexpr bool transpose8_pack_v = gemm_tile<float>::W == 8;
template <index_t Rows>
TENFOLD_INLINE void transpose8_block(const float* src, index_t ld, float* dst, index_t ldd) {
  __m256 r[8];
#pragma GCC unroll 8
  for (index_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + std::min(i, Rows - 1) * ld);
  __m256 t[8], u[8];
#pragma GCC unroll 4
  for (index_t i = 0; i < 4; ++i) t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]), t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  // u[4 h + q]: rows 4h .. 4h+3 at k = q (low half) and q + 4 (high half).
#pragma GCC unroll 2
  for (index_t h = 0; h < 2; ++h) {
    u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (index_t q = 0; q < 4; ++q) _mm256_storeu_ps(dst + q * ldd, _mm256_permute2f128_ps(u[q], u[4 + q], 0x20));
#pragma GCC unroll 4
  for (index_t q = 0; q < 4; ++q) _mm256_storeu_ps(dst + (q + 4) * ldd, _mm256_permute2f128_ps(u[q], u[4 + q], 0x31));
}
#else
inline constexpr bool transpose8_pack_v = false;
#endif

template <class T>
void gather_panel(const T* src, index_t cs, index_t kc, T* out) {
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  constexpr index_t W = gemm_tile<T>::W, NV = gemm_tile<T>::NV;
  index_t k = 0;
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float> && transpose8_pack_v)
    for (; k + 8 <= kc; k += 8)
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) transpose8_block<8>(src + k + v * W * cs, cs, out + k * NV * W + v * W, NV * W);
#endif
#if defined(__AVX512F__)
  // 16 k of a vector's 16 columns transposed in registers, as pack_a does for a row-major A: the
  // gathers took 16 x 16 values one lane at a time (C = A wᵀ at M = 64, K = N = 4096, wᵀ packed on
  // every call: 0.85x OpenBLAS on Intel model 167 with gathers).
  if constexpr (std::is_same_v<T, float> && W == 16)
    for (; k + W <= kc; k += W)
      for (index_t v = 0; v < NV; ++v) {
        std::array<batch<T>, std::size_t(W)> t;
#pragma GCC unroll 16
        for (index_t c = 0; c < W; ++c) t[std::size_t(c)] = batch<T>::load_unaligned(src + k + (v * W + c) * cs);
        transpose_square(t);
#pragma GCC unroll 16
        for (index_t q = 0; q < W; ++q) t[std::size_t(q)].store_aligned(out + (k + q) * NV * W + v * W);
      }
#endif
  alignas(default_alignment) I offsets[W];
  for (index_t c = 0; c < W; ++c) offsets[c] = I(c * cs);
  const auto idx = xsimd::batch<I>::load_aligned(offsets);
  // (a count of the k left and pointers that advance: indexed by k from where the transposes stopped,
  // GCC 12 could not always bound the loop and warned that a far iteration would overflow,
  // -Waggressive-loop-optimizations)
  const T* from = src + k;
  T* at = out + k * NV * W;
  for (index_t left = kc - k; left > 0; --left, ++from, at += NV * W)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v)
      tenfold::simd::gather(from + v * W * cs, idx).store_aligned(at + v * W);
}

// A[i0 : i0+mc, k0 : k0+kc] as MR-row panels, k-major inside a panel (out[k * rows + r]): the
// micro-kernel's Group 1. The last panel keeps only its rows (a kernel with that many rows reads it), so
// nothing is padded. (A row-major A copied in by vectors into Group W panels measured 7% slower at
// 1024^3 on one thread, the kernel's broadcasts then spread over 14 cache lines: gathers it is.)
template <class T, class E>
index_t pack_a(const matrix_ref<E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  constexpr index_t MR = gemm_tile<T>::MR;
  for (index_t p = 0; p < mc; p += MR) {
    const index_t rows = std::min(MR, mc - p);
    const E* src = a.p + (i0 + p) * a.rs + k0 * a.cs;
    if (a.rs == 1 && std::is_same_v<T, E> && rows == MR && MR <= gemm_tile<T>::W && p + gemm_tile<T>::W <= mc) {
      // A stored transposed, and W rows of the block from this panel's first: a k's MR values are one
      // vector load (its last W - MR lanes are rows of the block, unused) and store (into the next k's
      // slot, written next, or the workspace's slack)
      if constexpr (std::is_same_v<T, E>)
        for (index_t k = 0; k < kc; ++k, src += a.cs, out += MR) batch<T>::load_unaligned(src).store_unaligned(out);
    } else if (a.rs == 1) { // A stored transposed: the rows of a panel are adjacent for each k
      for (index_t k = 0; k < kc; ++k, src += a.cs, out += rows)
        for (index_t r = 0; r < rows; ++r) out[r] = static_cast<T>(src[r]);
    } else if (gather_pack_v<T, E> && rows == MR && MR <= gemm_tile<T>::W && a.rs * MR < (index_t(1) << 30)) {
      // All MR rows of a k in one gather; its store runs W - MR values into the next k's slot (written
      // next) or past the panel (the workspace has W values of slack).
      if constexpr (gather_pack_v<T, E>) {
        using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
        constexpr index_t W = gemm_tile<T>::W;
        alignas(default_alignment) I offsets[W];
        for (index_t r = 0; r < W; ++r) offsets[r] = I(std::min(r, MR - 1) * a.rs);
        const auto idx = xsimd::batch<I>::load_aligned(offsets);
        index_t k = 0;
#if defined(__AVX__)
        if constexpr (std::is_same_v<T, float> && transpose8_pack_v)
          if (a.cs == 1)
            for (; k + 8 <= kc; k += 8, src += 8, out += 8 * MR) transpose8_block<MR>(src, a.rs, out, MR);
#endif
#if defined(__AVX512F__)
        // 16 k of 16 rows (the last row repeated past MR) transposed in registers: 64 shuffles where 16
        // gathers take several times as long (pack_a 5.7% -> 3.7% of MiniLM at 32 x 128, its loads now
        // waiting on memory).
        if constexpr (std::is_same_v<T, float> && W == 16)
          if (a.cs == 1)
            for (; k + W <= kc; k += W, src += W, out += W * MR) {
              std::array<batch<T>, std::size_t(W)> t;
#pragma GCC unroll 16
              for (index_t r = 0; r < W; ++r)
                t[std::size_t(r)] = batch<T>::load_unaligned(src + std::min(r, MR - 1) * a.rs);
              transpose_square(t);
#pragma GCC unroll 16
              for (index_t q = 0; q < W; ++q)
                t[std::size_t(q)].store_unaligned(out + q * MR); // (in k order: see above)
            }
#endif
        for (; k < kc; ++k, src += a.cs, out += MR)
          tenfold::simd::gather(src, idx).store_unaligned(out);
      }
    } else if (rows == MR) {
      for (index_t k = 0; k < kc; ++k, src += a.cs, out += MR)
#pragma GCC unroll 16
        for (index_t r = 0; r < MR; ++r) out[r] = static_cast<T>(src[r * a.rs]);
    } else {
      for (index_t k = 0; k < kc; ++k, src += a.cs, out += rows)
        for (index_t r = 0; r < rows; ++r) out[r] = static_cast<T>(src[r * a.rs]);
    }
  }
  return 1;
}

// B[k0 : k0+kc, j0 : j0+nc] as NR-column panels of kc rows each (out[panel][k][c]); columns past nc
// are zero so that every panel is a full vector width.
template <class T, class E>
void pack_b(const matrix_ref<E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  constexpr index_t NR = gemm_tile<T>::NR;
  const index_t full = b.cs == 1 ? nc / NR * NR : 0;
  if (full > 0) {
    // Row-major B: rows of the block left to right (streams the prefetcher follows, where panel by
    // panel would jump a whole row stride every NR values), four rows at a time, dealt out to the
    // panels: four streams in flight, and each panel receives four consecutive k rows, 4 x NR values
    // contiguous, per visit.
    constexpr index_t rows = 4;
    index_t k = 0;
    for (; k + rows <= kc; k += rows) {
      const E* src = b.p + (k0 + k) * b.rs + j0;
      T* dst = out + k * NR;
      // Rows a page or more apart: the rows two groups on are asked for, line by line, as this group
      // reaches them. A row of the block is only nc values, too short a stream for the hardware
      // prefetchers to ramp up on (they do not cross a page) before the next row starts a row stride away.
      // Measured (Zen 5, one thread, K = N = 4096): M = 16 at AVX2, where packing B was 57% of the
      // product's time, 45-55 -> 60-69 GFLOP/s (one to four groups ahead alike); n = 2048 +5% at AVX2.
      // Nearer rows (n = 256: 1 KiB apart) are left to the hardware: there it measured 3% slower.
      const bool ahead = b.rs * index_t(sizeof(E)) >= 4096 && k + 3 * rows <= kc;
      for (index_t q = 0; q < full; q += NR, dst += kc * NR) {
        if (ahead)
          for (index_t r = 0; r < rows; ++r)
            for (index_t c = 0; c < NR; c += index_t(64 / sizeof(E))) __builtin_prefetch(src + (r + 2 * rows) * b.rs + q + c, 0, 3);
        for (index_t r = 0; r < rows; ++r)
#pragma GCC unroll 16
          for (index_t c = 0; c < NR; ++c) dst[r * NR + c] = static_cast<T>(src[r * b.rs + q + c]);
      }
    }
    // The last kc % rows rows. (At most rows - 1 of them, said in the loop: GCC 12 could not bound it
    // from k < kc alone and warned that a far iteration would overflow, -Waggressive-loop-optimizations,
    // in a -O3 build of attention; likewise with out + k * NR, q < full.)
    T* at = out + k * NR;
    for (index_t r = 1; r < rows && k < kc; ++r, ++k, at += NR) {
      const E* src = b.p + (k0 + k) * b.rs + j0;
      T* dst = at;
      for (index_t left = full / NR; left > 0; --left, src += NR, dst += kc * NR)
#pragma GCC unroll 4
        for (index_t c = 0; c < NR; ++c) dst[c] = static_cast<T>(src[c]);
    }
  }
  out += full * kc;
  for (index_t q = full; q < nc; q += NR, out += kc * NR) {
    const index_t cols = std::min(NR, nc - q);
    const E* src = b.p + k0 * b.rs + (j0 + q) * b.cs;
    if constexpr (gather_pack_v<T, E>) {
      if (b.rs == 1 && cols == NR && b.cs * NR < (index_t(1) << 30)) {
        gather_panel<T>(src, b.cs, kc, out);
        continue;
      }
    }
    // The panel zeroed by vectors, then its columns copied in, along B's contiguous axis. (Element by
    // element with the padding in the same loop, the branch and the scalar stores made a decode step's
    // attention (Kᵀ of 9 keys in a 32-wide panel, per head) spend 70% of its time here.)
    std::fill_n(out, kc * NR, T(0));
    if (b.rs == 1) // B stored transposed ([N, K], as linear's weight or attention's keys): k is adjacent per column
      for (index_t c = 0; c < cols; ++c)
        for (index_t k = 0; k < kc; ++k) out[k * NR + c] = static_cast<T>(src[c * b.cs + k]);
    else
      for (index_t k = 0; k < kc; ++k, src += b.rs)
        for (index_t c = 0; c < cols; ++c) out[k * NR + c] = static_cast<T>(src[c * b.cs]);
  }
}
} // namespace tenfold::cpu
