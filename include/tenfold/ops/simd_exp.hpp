#pragma once
// exp of 16 floats in AVX-512 with vscalefps: 14 vector instructions, no integer exponent arithmetic
// and no special-case blends or scalar redo (which xsimd's float exp needs in the table's entry for its
// subnormal and overflow ranges). Exp is what bounds softmax on the CPU (bench/RESULTS.md):
// 0.29-0.31 against 0.44 ns per element measured (an L1-resident loop, same run). Within 0.88 ulp of
// the exact result (against double at 4e6 points of [-110, 100] and 2e6 of [-1, 1]), subnormal
// results included (scalef rounds once, to the subnormal grid); exp(-inf) = 0, exp(inf) = inf, NaN
// stays NaN.
#include "tenfold/core/config.hpp"
#include "tenfold/core/xsimd.hpp"

namespace tenfold::ops::sc {
// The constants both kernels below use (one reduction, one polynomial, two ways to scale by 2^n).
struct exp_f32 {
  // Clamped first (max/min return their second operand when either is NaN, so NaN stays NaN): below
  // -104 the result rounds to 0 and above 89 to inf, and inside, n * ln2 below is exact.
  static constexpr float lo = -104.0f, hi = 89.0f, log2e = 1.44269504088896341f;
  // x = n ln2 + r, |r| <= ln2 / 2, with ln2 in two parts (Cephes's): exp(x) = 2^n exp(r).
  static constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  // exp(r) by Horner, highest degree first: Cephes's expf coefficients (1 + r + r^2 P(r)) with the last
  // two terms folded in, one FMA each (seven in all, against five, a multiply, an FMA and an add): also
  // more accurate here.
  static constexpr float poly[8] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                                    1.6666665459e-1f, 5.0000001201e-1f, 1.0f,            1.0f};
};

#if defined(__AVX512F__)
template <class B>
inline constexpr bool avx512_float_v = std::is_same_v<typename B::value_type, float> && B::size == 16 &&
                                       std::is_base_of_v<xsimd::avx512f, typename B::arch_type>;

TENFOLD_INLINE __m512 exp_avx512(__m512 x) {
  using c = exp_f32;
  x = _mm512_min_ps(_mm512_set1_ps(c::hi), _mm512_max_ps(_mm512_set1_ps(c::lo), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(c::log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_lo), r);
  __m512 p = _mm512_set1_ps(c::poly[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c::poly[i]));
  return _mm512_scalef_ps(p, n);
}
#else
template <class B>
inline constexpr bool avx512_float_v = false;
#endif

// The same exp for 8 floats in AVX2 + FMA (x86-64-v3: Haswell, Zen), which has no vscalefps: 2^n is
// built in the exponent field, in two halves 2^(n/2) 2^(n - n/2) so that each is a normal float for
// every n in [-150, 128]. The first product is exact (p in [0.7, 1.42] times a power of two stays
// normal), the second rounds once, to the subnormal grid where the result is subnormal: the same
// results as the AVX-512 version. xsimd's exp, which the table used here before, flushes the subnormal
// range to zero and overflows from 88.38, so every batch paid a range test and, near those ranges, a
// scalar redo (bench/RESULTS.md has the softmax rows before and after).
#if defined(__AVX2__) && defined(__FMA__)
template <class B>
inline constexpr bool avx2_float_v = std::is_same_v<typename B::value_type, float> && B::size == 8 &&
                                     std::is_base_of_v<xsimd::avx2, typename B::arch_type>;

TENFOLD_INLINE __m256 exp_avx2(__m256 x) { // inlined: a call per vector costs a third of it
  using c = exp_f32;
  x = _mm256_min_ps(_mm256_set1_ps(c::hi), _mm256_max_ps(_mm256_set1_ps(c::lo), x)); // NaN stays NaN
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(c::log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_lo), r);
  __m256 p = _mm256_set1_ps(c::poly[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c::poly[i]));
  const __m256i k = _mm256_cvtps_epi32(n); // exact: n is integral (INT_MIN for NaN, whose p is NaN)
  const __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
#else
template <class B>
inline constexpr bool avx2_float_v = false;
#endif
} // namespace tenfold::ops::sc
