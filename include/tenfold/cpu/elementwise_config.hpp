#pragma once
// When the elementwise and row evaluators (cpu/evaluator.hpp) write with streaming stores, and how far
// ahead their row kernels prefetch. tools/tune measures both on the machine it runs on and writes them
// into include/tenfold/tuned/elementwise_cpu.hpp, keyed by the machine (core/machine.hpp); elsewhere the
// defaults below hold. Neither changes a result: a streaming store writes the same bits, and a prefetch
// only moves lines between caches. (The task grain, cpu::parallel_grain, is not tuned: measured on
// one operation it would fit only that one's cost per element; tools/tune/elementwise.hpp.)
#include "tenfold/core/machine.hpp"

namespace tenfold::cpu {

struct elementwise_config {
  // Outputs of at least this many bytes are written with non-temporal stores (no read for ownership of
  // lines the caches would only evict); long rows (softmax, norms) are then also pipelined row by row
  // (cpu/row_tee.hpp).
  index_t streaming_bytes = index_t(8) << 20;
  // Row-fused rows (softmax, the norms: cpu/row_tee.hpp) prefetch, while one row is swept, the same
  // positions of the row this many rows later (0: no prefetch), so that a row's compute overlaps the
  // next rows' memory traffic: `tee_ahead` where the row's reduction sweep also keeps its values
  // (softmax's exp(x - max)), `tail_ahead` in the tail sweep of the other row-fused rows (layer_norm,
  // rms_norm). Rows of at most `prefetch_l1_bytes` bytes are prefetched into L1, longer ones into L2.
  int tee_ahead = 1;
  int tail_ahead = 1;
  index_t prefetch_l1_bytes = index_t(16) << 10;
  friend constexpr bool operator==(const elementwise_config&, const elementwise_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct elementwise_tuned_entry {
  machine_key machine;
  elementwise_config config;
};
} // namespace tenfold::cpu
