#pragma once
// Small GEMMs with static shapes (4x4, 16x16, 64x64, 128x128, ...): every extent and stride is a compile-time
// constant, so there is no packing, no blocking and no kernel table — each register tile reads A and B
// where they lie and its k loop has a constant trip count the compiler unrolls. For these sizes the
// general path's fixed costs (packing, workspace lookup, the indirect kernel call) are most of the time.
//
// The vector width is the widest that divides N (16, 8 or 4 floats on AVX-512), so a 4x4 product is
// four 128-bit rows rather than a masked 512-bit one; the path is taken only where some width divides N
// and B's rows are contiguous (a transposed B goes to the general path, whose packing handles it).
#include "tenfold/cpu/gemm_kernels.hpp"

namespace tenfold::cpu {

// The xsimd architecture for an N-wide row of T: the build's widest, else a narrower one with FMA.
template <class T, index_t N>
constexpr auto small_gemm_arch() {
  using wide = typename batch<T>::arch_type;
  if constexpr (N % index_t(xsimd::batch<T, wide>::size) == 0) return wide{};
#if XSIMD_WITH_FMA3_AVX2
  else if constexpr (N % index_t(32 / sizeof(T)) == 0) return xsimd::fma3<xsimd::avx2>{};
#endif
#if XSIMD_WITH_SSE4_2
  else if constexpr (N % index_t(16 / sizeof(T)) == 0) return xsimd::sse4_2{};
#endif
  else return; // no width divides N
}

// Products up to 128^3 multiply-adds whose B stays in L2 (<= 128 KiB: it is read in place, once per
// row tile), with contiguous rows of B and a vector width that divides N. Measured on the bench
// machine: at 128^3 this path ran 1.3-1.4x OpenBLAS where the packed path ran 1.1x.
#ifndef TENFOLD_GEMM_SMALL_MAX
#define TENFOLD_GEMM_SMALL_MAX (128 * 128 * 128)
#endif
template <class T, index_t M, index_t N, index_t K, index_t BCs>
inline constexpr bool small_gemm_v = (std::is_same_v<T, float> || std::is_same_v<T, double>) && BCs == 1 && M > 0 && N > 0 && K > 0 &&
                                     M * N * K <= TENFOLD_GEMM_SMALL_MAX && K * N * index_t(sizeof(T)) <= 128 * 1024 &&
                                     !std::is_void_v<decltype(small_gemm_arch<T, N>())>;

// xsimd 8 has no fused multiply-add for 128-bit batches once AVX is enabled (fma3<sse4_2> is then
// switched off), so that width calls the instruction itself.
template <class V>
TENFOLD_INLINE V small_fma(const V& a, const V& b, const V& c) {
#if defined(__FMA__) && XSIMD_WITH_SSE4_2
  if constexpr (std::is_same_v<typename V::arch_type, xsimd::sse4_2>) {
    if constexpr (std::is_same_v<typename V::value_type, float>) return _mm_fmadd_ps(a, b, c);
    else return _mm_fmadd_pd(a, b, c);
  } else
#endif
    return xsimd::fma(a, b, c);
}

template <class T, class A, index_t Rows, index_t NV, index_t K, index_t ARs, index_t ACs, index_t BRs>
TENFOLD_INLINE void small_gemm_tile(const T* a, const T* b, T* c, index_t ldc) {
  using V = xsimd::batch<T, A>;
  constexpr index_t W = index_t(V::size);
  V acc[Rows][NV];
#pragma GCC unroll 24
  for (index_t r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) acc[r][v] = V(T(0));
#pragma GCC unroll 8
  for (index_t k = 0; k < K; ++k) {
    V bv[NV];
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) bv[v] = V::load_unaligned(b + k * BRs + v * W);
#pragma GCC unroll 24
    for (index_t r = 0; r < Rows; ++r) {
      const V av(a[r * ARs + k * ACs]);
#pragma GCC unroll 4
      for (index_t v = 0; v < NV; ++v) acc[r][v] = small_fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 24
  for (index_t r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (index_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(c + r * ldc + v * W);
}

// C (M x N, row stride ldc) = A B, with A's strides ARs, ACs and B's row stride BRs known at compile time.
template <class T, index_t M, index_t N, index_t K, index_t ARs, index_t ACs, index_t BRs>
void small_gemm(const T* a, const T* b, T* c, index_t ldc) {
  using A = decltype(small_gemm_arch<T, N>());
  constexpr index_t W = index_t(xsimd::batch<T, A>::size), vectors = N / W;
  // Up to 4 vectors across and as many rows as keep about 24 accumulators in registers (12 where the
  // register file has 16).
  constexpr bool wide = gemm_tile<T>::wide_file;
  constexpr index_t NV = wide ? (vectors % 4 == 0 ? 4 : vectors % 3 == 0 ? 3 : vectors % 2 == 0 ? 2 : 1)
                              : (vectors % 2 == 0 ? 2 : 1);
  constexpr index_t acc_budget = wide ? 24 : 12;
  constexpr index_t MR = std::max<index_t>(1, std::min<index_t>(M, acc_budget / NV));
  constexpr index_t full_rows = M / MR * MR, rest = M - full_rows;
  for (index_t j = 0; j < N; j += NV * W) {
    for (index_t i = 0; i < full_rows; i += MR)
      small_gemm_tile<T, A, MR, NV, K, ARs, ACs, BRs>(a + i * ARs, b + j, c + i * ldc + j, ldc);
    if constexpr (rest > 0)
      small_gemm_tile<T, A, rest, NV, K, ARs, ACs, BRs>(a + full_rows * ARs, b + j, c + full_rows * ldc + j, ldc);
  }
}
} // namespace tenfold::cpu
