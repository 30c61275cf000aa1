#pragma once
// The AVX-512 permutes, rounding, min and max, xsimd's horizontal add and its gather as tenfold calls
// them. GCC 12's AVX-512 intrinsics merge into a self-initialised "undefined" vector (GCC bug 105593)
// and warn about it wherever they are inlined (-W(maybe-)uninitialized). The pragmas around
// core/xsimd.hpp's first include of <immintrin.h> silence that, but not where <immintrin.h> came first
// from elsewhere (Eigen, a user's intrinsics) and not through a precompiled header, which keeps no
// diagnostic pragma: tenfold's own calls made the consumer:warnings program print 127 warnings so, in
// a conv-heavy test 117. These call the masked forms with every lane selected and a defined source
// instead: the same instruction (the compiler drops the all-ones mask), nothing undefined. What still
// warns so is xsimd's own calls (README, "Warnings"). (Included by core/xsimd.hpp, after xsimd and
// <immintrin.h>.)
#include <type_traits>

#include "tenfold/core/config.hpp"

namespace tenfold::simd {
// The lanes of b added, as xsimd::hadd adds them (a 512-bit vector: its upper half plus its lower,
// then the 256-bit sum). (Even the cast to the lower half is an extract from an undefined source in
// GCC 12: both halves are extracted here.)
template <class B>
TENFOLD_INLINE typename B::value_type hadd(const B& b) {
#if defined(__AVX512F__)
  using T = typename B::value_type;
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, double>) {
    const __m256d lo = _mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), __mmask8(-1), b, 0),
                  hi = _mm512_mask_extractf64x4_pd(lo, __mmask8(-1), b, 1);
    return xsimd::hadd(xsimd::batch<double, xsimd::avx2>(_mm256_add_pd(hi, lo)));
  } else if constexpr (sizeof(B) == 64 && std::is_same_v<T, float>) {
    const __m512d d = _mm512_castps_pd(b);
    const __m256d lo = _mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), __mmask8(-1), d, 0),
                  hi = _mm512_mask_extractf64x4_pd(lo, __mmask8(-1), d, 1);
    return xsimd::hadd(xsimd::batch<float, xsimd::avx2>(_mm256_add_ps(_mm256_castpd_ps(hi), _mm256_castpd_ps(lo))));
  } else
#endif
    return xsimd::hadd(b);
}
// The lanes at p + idx[i] (xsimd's gather kernel: batch::gather in xsimd 8.1 names template arguments
// the AVX-512/AVX2 overloads do not take, and silently falls back to one lane at a time).
template <class T, class I, class A>
TENFOLD_INLINE xsimd::batch<T, A> gather(const T* p, const xsimd::batch<I, A>& idx) {
#if defined(__AVX512F__)
  if constexpr (sizeof(xsimd::batch<T, A>) == 64 && std::is_same_v<T, float> && sizeof(I) == 4)
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), __mmask16(-1), idx, p, 4);
  else if constexpr (sizeof(xsimd::batch<T, A>) == 64 && std::is_same_v<T, double> && sizeof(I) == 8)
    return _mm512_mask_i64gather_pd(_mm512_setzero_pd(), __mmask8(-1), idx, p, 8);
  else
#endif
    return xsimd::kernel::gather(p, idx, A{});
}
#if defined(__AVX512F__)
// In-lane interleaves and shuffles, and 128-bit-lane shuffles (Imm: the instruction's immediate).
TENFOLD_INLINE __m512 unpacklo(__m512 a, __m512 b) { return _mm512_mask_unpacklo_ps(a, __mmask16(-1), a, b); }
TENFOLD_INLINE __m512 unpackhi(__m512 a, __m512 b) { return _mm512_mask_unpackhi_ps(a, __mmask16(-1), a, b); }
TENFOLD_INLINE __m512d unpacklo(__m512d a, __m512d b) { return _mm512_mask_unpacklo_pd(a, __mmask8(-1), a, b); }
TENFOLD_INLINE __m512d unpackhi(__m512d a, __m512d b) { return _mm512_mask_unpackhi_pd(a, __mmask8(-1), a, b); }
template <int Imm>
TENFOLD_INLINE __m512 shuffle(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_ps(a, __mmask16(-1), a, b, Imm);
}
template <int Imm>
TENFOLD_INLINE __m512 shuffle_lanes(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_f32x4(a, __mmask16(-1), a, b, Imm);
}
template <int Imm>
TENFOLD_INLINE __m512d shuffle_lanes(__m512d a, __m512d b) {
  return _mm512_mask_shuffle_f64x2(a, __mmask8(-1), a, b, Imm);
}
// v's lanes at idx (a full permute), the lanes rounded as Imm says, and lane-wise max and min.
TENFOLD_INLINE __m512 permute(__m512i idx, __m512 v) { return _mm512_mask_permutexvar_ps(v, __mmask16(-1), idx, v); }
TENFOLD_INLINE __m512d permute(__m512i idx, __m512d v) { return _mm512_mask_permutexvar_pd(v, __mmask8(-1), idx, v); }
template <int Imm>
TENFOLD_INLINE __m512 roundscale(__m512 v) {
  return _mm512_mask_roundscale_ps(v, __mmask16(-1), v, Imm);
}
TENFOLD_INLINE __m512 max(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, __mmask16(-1), a, b); }
TENFOLD_INLINE __m512 min(__m512 a, __m512 b) { return _mm512_mask_min_ps(a, __mmask16(-1), a, b); }
#endif
} // namespace tenfold::simd
