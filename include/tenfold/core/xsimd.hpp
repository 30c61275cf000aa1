#pragma once
// The one way tenfold includes xsimd and the x86 intrinsics.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12 && defined(__AVX512F__)
// GCC 12's AVX-512 intrinsics return a self-initialised `__Y` (_mm512_undefined_*), on which GCC warns
// wherever they are inlined, falsely (GCC bug 105593). The pragmas hold for the intrinsics' own lines,
// so they cover every caller, if this is the first include of <immintrin.h>; no tenfold or xsimd code
// is inside them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512BW__) && !defined(__OPTIMIZE__)
// Without optimisation GCC 12 defines these two blends as macros that cast their operands C-style,
// which xsimd 8's select for 8- and 16-bit lanes passes batch objects to: an unoptimised (-O0) build
// on an AVX-512BW machine did not compile (xsimd::log, for one, instantiates that select). The
// functions the optimised build has, under the same names.
#include <immintrin.h>
#undef _mm512_mask_blend_epi8
#undef _mm512_mask_blend_epi16
inline __m512i _mm512_mask_blend_epi8(__mmask64 u, __m512i a, __m512i w) {
  return __m512i(__builtin_ia32_blendmb_512_mask(__v64qi(a), __v64qi(w), u));
}
inline __m512i _mm512_mask_blend_epi16(__mmask32 u, __m512i a, __m512i w) {
  return __m512i(__builtin_ia32_blendmw_512_mask(__v32hi(a), __v32hi(w), u));
}
#endif
#include <xsimd/xsimd.hpp>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "tenfold/core/intrinsics.hpp"
