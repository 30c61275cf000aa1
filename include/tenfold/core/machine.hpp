#pragma once
// The machine a tuned table's entry is for (include/tenfold/tuned/): tools/tune measures on the machine
// it runs on and keys what it writes by this; the kernels (and softmax's choice of form, ops/rewrite.hpp)
// look the build's machine up at compile time and fall back to their defaults where no entry matches.
#include <string_view>

#include "tenfold/core/config.hpp"

namespace tenfold {

// The machine a table entry was measured on: the build's ISA, the L1d and L2 of one core, and the
// number of cores (the pool's default size). The ISA comes from the compiler; the caches and cores from
// TENFOLD_L1D_KIB, TENFOLD_L2_KIB and TENFOLD_CORES, which the project's CMake sets for a native build
// (cmake/tenfold_machine.cmake) and a user's build may set by hand. Without them, or with
// TENFOLD_NO_TUNED_TABLES (the benchmarks' untuned build), no entry matches.
struct machine_key {
  std::string_view isa;
  index_t l1d_kib = 0, l2_kib = 0, cores = 0;
  friend constexpr bool operator==(const machine_key&, const machine_key&) = default;
};
constexpr std::string_view build_isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#elif defined(__SSE2__) || defined(_M_X64)
  return "sse2";
#elif defined(__ARM_NEON)
  return "neon";
#else
  return "scalar";
#endif
}
#if defined(TENFOLD_L1D_KIB) && defined(TENFOLD_L2_KIB) && defined(TENFOLD_CORES) && !defined(TENFOLD_NO_TUNED_TABLES)
inline constexpr machine_key build_machine{build_isa(), TENFOLD_L1D_KIB, TENFOLD_L2_KIB, TENFOLD_CORES};
#else
inline constexpr machine_key build_machine{build_isa()};
#endif
} // namespace tenfold
