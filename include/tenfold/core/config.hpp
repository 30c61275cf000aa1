#pragma once
// Build-wide switches and the few macros every layer needs.
#include <cstddef>

#if defined(__CUDACC__)
#define TENFOLD_HD __host__ __device__
#else
#define TENFOLD_HD
#endif

#if defined(_MSC_VER)
#define TENFOLD_INLINE inline __forceinline
#define TENFOLD_INLINE_LAMBDA
#else
#define TENFOLD_INLINE inline __attribute__((always_inline))
#define TENFOLD_INLINE_LAMBDA __attribute__((always_inline)) // after a lambda's parameter list
#endif

namespace tenfold {
using index_t = std::ptrdiff_t;
// One cache line, and the widest SIMD register (AVX-512): aligned loads are always legal on owned storage.
inline constexpr std::size_t default_alignment = 64;
inline constexpr int max_rank = 8;
} // namespace tenfold
