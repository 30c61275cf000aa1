#pragma once
// How the CPU attention (cpu/attention.hpp) tiles its work. tools/tune times these choices on the
// machine it runs on (tools/tune/attention.hpp) and writes the fastest into
// include/tenfold/tuned/attention_cpu.hpp; cpu/attention.hpp looks the build's machine up there at
// compile time and falls back to the defaults below elsewhere.
#include "tenfold/core/config.hpp"
#include "tenfold/core/machine.hpp"

namespace tenfold::cpu {

// Run-time values (the tile functions are chosen per call from a table), so that the tuner tries them
// all in one program. Both change where the online softmax rescales (its last bits), not what it computes;
// for one configuration results are bitwise independent of the thread count.
struct attention_config {
  index_t row_panels = 2; // query rows per task: row_panels x MR (panels of one task share each Kᵀ panel in L1)
  index_t key_panels = 4; // keys per block: key_panels x NR (a block's O rescale, Br x Dv, amortised over them)
  friend constexpr bool operator==(const attention_config&, const attention_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct attention_tuned_entry {
  machine_key machine;
  attention_config config;
};
} // namespace tenfold::cpu
