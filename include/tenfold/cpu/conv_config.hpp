#pragma once
// How the CPU convolutions (cpu/conv.hpp) are lowered onto the GEMM and blocked. tools/tune times these
// choices on the machine it runs on (tools/tune/conv.hpp) and writes the fastest into
// include/tenfold/tuned/conv_cpu.hpp; cpu/conv.hpp looks the build's machine up there at compile time
// and falls back to the defaults below elsewhere.
#include "tenfold/cpu/gemm_config.hpp"

namespace tenfold::cpu {

struct conv_config {
  // NHWC windows read in place from a padded copy of the images (cpu/conv_padded.hpp) where the geometry
  // allows it; else packed into the micro-kernel's panels (implicit im2col, cpu/conv_pack.hpp).
  bool read_in_place = true;
  // NCHW convolutions computed in their NHWC form where that form reads in place (cpu/conv.hpp's
  // "turned"); else one product per image with the windows packed as B.
  bool turn_nchw = true;
  // The product's blocking and thread split (the GEMM's, cpu/gemm_config.hpp; a kc of whole vectors).
  gemm_config blocking{};
  friend constexpr bool operator==(const conv_config&, const conv_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct conv_tuned_entry {
  machine_key machine;
  conv_config config;
};
} // namespace tenfold::cpu
