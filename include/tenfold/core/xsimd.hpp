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
#include <xsimd/xsimd.hpp>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
