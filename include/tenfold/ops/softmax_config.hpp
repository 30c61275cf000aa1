#pragma once
// softmax's pass structure over a row, chosen per machine: its definition, exp(x - max) / Σ exp(x - max),
// runs in two forms that give the same values to within the op's tolerance (ops/rewrite.hpp):
//  - two-pass (the default): the max in one sweep, then exp(x - max) once per element, kept in the output
//    row while it is summed (cpu/row_tee.hpp), then scaled by 1 / Σ: one exp per element, three sweeps;
//  - online: the max and Σ exp(x - max) together, block by block (ops::shifted_logsumexp_part, one
//    accumulation), then exp(x - max) / Σ computed again into the output: two exps per element, two
//    sweeps, and no pass over the output row.
// tools/tune times both on rows of 256 to 65536 floats and writes the row length, in bytes, from which the
// online form wins on the machine it runs on into include/tenfold/tuned/softmax_cpu.hpp; 0 there, and
// on machines without an entry, keeps the two-pass form everywhere.
#include "tenfold/core/machine.hpp"

namespace tenfold {

struct softmax_config {
  // Rows of at least this many bytes take the online form; 0: none does.
  index_t online_from_bytes = 0;
  friend constexpr bool operator==(const softmax_config&, const softmax_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct softmax_tuned_entry {
  machine_key machine;
  softmax_config config;
};
} // namespace tenfold
