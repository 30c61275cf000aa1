#pragma once
// How the blocked GEMM (cpu/gemm.hpp) cuts a product, and which machine a tuned choice is for.
// tools/tune times these choices on the machine it runs on and writes the fastest per shape class into
// include/tenfold/tuned/gemm_cpu.hpp; cpu/gemm.hpp looks the build's machine up there at compile time
// and falls back to the defaults below (the heuristics measured on the first bench machine) elsewhere.
#include <string_view>

#include "tenfold/core/config.hpp"
#include "tenfold/core/machine.hpp"

namespace tenfold::cpu {

// How C is cut into one part per task: along M (each thread packs only its rows of A, all of B), along
// N (each thread streams only its share of B: a few rows through a large weight), or along M when
// there are rows enough and else along N.
enum class gemm_split_axis { automatic, rows, columns };

// The choices that do not change the micro-kernel (its register tile is the ISA's, cpu/gemm_kernels.hpp):
// run-time values, so that the tuner tries them all in one program. Only kc, kc_in_place, in_place_rows and
// kc_crowded change the order of the sums (and so the last bits of C); the others move work between caches and threads.
struct gemm_config {
  index_t kc = 256;             // k slice: a KC x NR panel of B and an MR x KC panel of A stay in L1
  index_t mc_panels = 24;       // MC = MR x mc_panels rows of A packed per block (a sixth of a 2 MiB L2)
  index_t nc_panels = 32;       // NC = NR x nc_panels columns of B packed per block (at most max_nc_panels)
  index_t kc_in_place = 32;     // k slice where B is read in place (a few rows: as many rows of B stream)
  index_t parts_per_thread = 2; // products of 2e8 flops or more: parts handed out one at a time
  gemm_split_axis split = gemm_split_axis::automatic;
  // Rows of A up to which a row-major B is read in place rather than packed (0: twice the micro-kernel's
  // rows, cpu::gemm_in_place_rows). Reading in place skips a pass over B but reads it in column panels,
  // a row stride between consecutive values; packing reads it row by row. On Zen 5 (AVX-512, M = 16)
  // packing ran a 64 MiB B about 1.1x faster and a 2 MiB one 5-25% slower (bench/RESULTS.md): the
  // tool's few-rows search decides. Changes the order of the sums, as kc does.
  index_t in_place_rows = 0;
  // k slice where B is read in place and its rows are a multiple of 2 KiB apart (N a multiple of 512
  // floats: a power-of-two width, 1024, 4096), so that a panel's rows all fall into one or two of the
  // L1's 64 sets (0: the ISA's choice, cpu::in_place_kc). On Zen 5's AVX2 build (one thread, M = 2,
  // N = 1024, K = 128: B in L2) 24 GFLOP/s with 32 rows a slice, 42 with 8 (bench/RESULTS.md). Changes
  // the order of the sums, as kc does.
  index_t kc_crowded = 0;
  static constexpr index_t max_nc_panels = 64; // convolution packs one k-row of NC columns on the stack
  friend constexpr bool operator==(const gemm_config&, const gemm_config&) = default;
};

// A tuned choice holds for one class of shapes: few rows (M <= 16, the inference and decode case), and
// by flops (2 M N K) small (< 2 x 128^3), medium (< 2 x 512^3) and large.
enum class gemm_shape_class { few_rows, small, medium, large };
constexpr gemm_shape_class gemm_shape_class_of(index_t M, index_t N, index_t K) {
  const double flops = 2.0 * double(M) * double(N) * double(K);
  if (M <= 16) return gemm_shape_class::few_rows;
  if (flops < 2.0 * 128 * 128 * 128) return gemm_shape_class::small;
  if (flops < 2.0 * 512 * 512 * 512) return gemm_shape_class::medium;
  return gemm_shape_class::large;
}
constexpr std::string_view name_of(gemm_shape_class c) {
  switch (c) {
    case gemm_shape_class::few_rows: return "few_rows";
    case gemm_shape_class::small: return "small";
    case gemm_shape_class::medium: return "medium";
    case gemm_shape_class::large: return "large";
  }
  return "?";
}

// One row of a tuned table: for float GEMMs of this shape class on this machine, this configuration.
struct gemm_tuned_entry {
  machine_key machine;
  gemm_shape_class shape;
  gemm_config config;
};
} // namespace tenfold::cpu
