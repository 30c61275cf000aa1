#pragma once
// exp of 16 floats in AVX-512 with vscalefps: 14 vector instructions, no integer exponent arithmetic
// and no special-case blends or scalar redo (which xsimd's float exp needs in the table's entry for its
// subnormal and overflow ranges). Exp is what bounds softmax on the CPU (bench/RESULTS.md):
// 0.29-0.31 against 0.44 ns per element measured (an L1-resident loop, same run). Within 0.88 ulp of
// the exact result (against double at 4e6 points of [-110, 100] and 2e6 of [-1, 1]), subnormal
// results included (scalef rounds once, to the subnormal grid); exp(-inf) = 0 (masked: no underflow),
// exp(inf) = inf, NaN stays NaN.
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
  // Lanes x <= lo (-inf: masked scores) are 0 by a zeroing mask on the scaling, not by scalef's
  // underflow: without FTZ that underflow is a microcode assist per vector (half the time of a causal
  // attention's forward pass at 64 keys went there). The same results.
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(c::lo), _CMP_NLE_UQ); // (NaN: live)
  x = tenfold::simd::min(_mm512_set1_ps(c::hi), tenfold::simd::max(_mm512_set1_ps(c::lo), x));
  const __m512 n = tenfold::simd::roundscale<_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC>(_mm512_mul_ps(x, _mm512_set1_ps(c::log2e)));
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_lo), r);
  __m512 p = _mm512_set1_ps(c::poly[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 8; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c::poly[i]));
  return _mm512_maskz_scalef_ps(live, p, n);
}
#else
template <class B>
inline constexpr bool avx512_float_v = false;
#endif

// The same exp for 8 floats in AVX2 + FMA (x86-64-v3: Haswell, Zen), which has no vscalefps. Two paths.
//
// Wide (exp_avx2_wide: any x): the reduction and polynomial above, and 2^n built in the exponent field in
// two halves 2^(n/2) 2^(n - n/2) so that each is a normal float for every n in [-150, 128]. The first
// product is exact (p in [0.7, 1.42] times a power of two stays normal), the second rounds once, to the
// subnormal grid where the result is subnormal: the same results as the AVX-512 version. (xsimd's exp,
// which the table used here before, flushes the subnormal range to zero and overflows from 88.38.)
//
// Fast (exp_avx2, when every lane has |x| <= 86.5, the result then normal and finite): what bounds exp in
// a loop here is the length of its dependency chain, not its instruction count: with Horner's seven
// dependent FMAs, the clamps, the rounding and the two scaling products, one vector's chain is ~55
// cycles, and an out-of-order window holds only a few vectors (softmax's exp ran at 0.62 ns per float on
// a Zen 3 that sustains 5.5 FMAs per ns in a GEMM). So: n = round(x log2e) by adding 1.5 x 2^23 (whose
// low mantissa bits then hold n), the same two-part reduction, a degree-6 polynomial fitted for this
// (scripts/fit_exp_poly.py, 5e-9 relative) evaluated as 1 + r (1 + r q(r)) with q by Estrin's scheme
// (3 levels instead of 5), and 2^n added to p's exponent field as an integer (exact: the result is
// normal). About 36 cycles of chain, 18 instructions; 0.94 ulp. Lanes with x <= -104 (the result rounds
// to 0; -inf included) are zeroed by a mask; any other lane outside (NaN, +inf, subnormal or overflowing
// results) sends the whole vector to the wide path: one test per vector.
#if defined(__AVX2__) && defined(__FMA__)
template <class B>
inline constexpr bool avx2_float_v = std::is_same_v<typename B::value_type, float> && B::size == 8 &&
                                     std::is_base_of_v<xsimd::avx2, typename B::arch_type>;

TENFOLD_INLINE __m256 exp_avx2_wide(__m256 x) {
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

struct exp_f32_fast {
  // |x| <= limit: n in [-125, 125], so p 2^n (p in [0.7, 1.42]) is a normal float.
  static constexpr float limit = 86.5f;
  static constexpr float shifter = 12582912.0f; // 1.5 x 2^23: x log2e + shifter rounds to an integer
  // exp(r) = 1 + r (1 + r q(r)), q(r) = q[0] + q[1] r + ... + q[4] r^4 on |r| <= ln2 / 2
  static constexpr float q[5] = {4.9999997020e-01f, 1.6666521132e-01f, 4.1667226702e-02f, 8.3686932921e-03f, 1.3879691251e-03f};
};

TENFOLD_INLINE __m256 exp_avx2(__m256 x) { // inlined: a call per vector costs a third of it
  using c = exp_f32;
  using f = exp_f32_fast;
  // Lanes x <= lo (-inf: masked scores) are 0, by a mask on the fast path's result: a causal mask's
  // boundary moves from row to row, and a branch on it would be mispredicted at every row.
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(c::lo), _CMP_NLE_UQ);
  const __m256 far = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(f::limit), _CMP_NLE_UQ);
  if (!_mm256_testz_ps(far, live)) [[unlikely]] return exp_avx2_wide(x); // (NaN compares "not <=": wide too)
  const __m256 shifter = _mm256_set1_ps(f::shifter);
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(c::log2e), shifter); // n in t's low mantissa bits
  const __m256 n = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_lo), r);
  const __m256 r2 = _mm256_mul_ps(r, r), r4 = _mm256_mul_ps(r2, r2);
  const __m256 a = _mm256_fmadd_ps(_mm256_set1_ps(f::q[1]), r, _mm256_set1_ps(f::q[0]));
  const __m256 b = _mm256_fmadd_ps(_mm256_set1_ps(f::q[3]), r, _mm256_set1_ps(f::q[2]));
  const __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(f::q[4]), r4, _mm256_fmadd_ps(b, r2, a));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 p = _mm256_fmadd_ps(r, _mm256_fmadd_ps(r, q, one), one);
  // t's bits are those of 1.5 x 2^23 plus n: shifted by 23, only n's low bits remain, in the exponent field.
  const __m256i scale = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
  return _mm256_and_ps(live, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), scale)));
}
#else
template <class B>
inline constexpr bool avx2_float_v = false;
#endif
} // namespace tenfold::ops::sc
