#pragma once
// When the elementwise and row evaluators (cpu/evaluator.hpp) write with streaming stores. tools/tune
// measures it on the machine it runs on and writes it into include/tenfold/tuned/elementwise_cpu.hpp,
// keyed by the machine (core/machine.hpp); elsewhere the default below holds. It changes no result: a
// streaming store writes the same bits. (The task grain, cpu::parallel_grain, is not tuned: measured on
// one operation it would fit only that one's cost per element; tools/tune/elementwise.hpp.)
#include "tenfold/core/machine.hpp"

namespace tenfold::cpu {

struct elementwise_config {
  // Outputs of at least this many bytes are written with non-temporal stores (no read for ownership of
  // lines the caches would only evict); long rows (softmax, norms) are then also pipelined row by row
  // (cpu/row_tee.hpp).
  index_t streaming_bytes = index_t(8) << 20;
  friend constexpr bool operator==(const elementwise_config&, const elementwise_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct elementwise_tuned_entry {
  machine_key machine;
  elementwise_config config;
};
} // namespace tenfold::cpu
