#pragma once
// When the elementwise and row evaluators (cpu/evaluator.hpp) write with streaming stores, and how far
// ahead their row kernels prefetch. tools/tune measures both on the machine it runs on and writes them
// into include/tenfold/tuned/elementwise_cpu.hpp, keyed by the machine (core/machine.hpp); elsewhere the
// defaults below hold. Neither changes a result: a streaming store writes the same bits, and a prefetch
// only moves lines between caches. (The task grain, cpu::parallel_grain, is not tuned: measured on
// one operation it would fit only that one's cost per element; tools/tune/elementwise.hpp.)
#include "tenfold/core/machine.hpp"

namespace tenfold::cpu {

// How a row-fused row (softmax, the norms: cpu/row_tee.hpp) prefetches while it is swept: the same
// positions of the row `ahead` rows later (0: nothing), into L1 where a row has at most `l1_bytes` bytes,
// else into L2, so that a row's compute overlaps the next rows' memory traffic; with `dst`, that row's
// destination too, for writing (its read for ownership then overlaps compute as well).
struct row_prefetch_config {
  int ahead = 1;
  index_t l1_bytes = index_t(16) << 10;
  bool dst = false;
  friend constexpr bool operator==(const row_prefetch_config&, const row_prefetch_config&) = default;
};

struct elementwise_config {
  // Outputs of at least this many bytes are written with non-temporal stores (no read for ownership of
  // lines the caches would only evict); long rows (softmax, norms) are then also pipelined row by row
  // (cpu/row_tee.hpp).
  index_t streaming_bytes = index_t(8) << 20;
  // The row-fused nests' own threshold (softmax, the norms: a row swept two or three times, which changes
  // what streaming saves; on Zen 5 layer_norm's 8 MiB of 128 KiB rows ran 1.4-1.9x faster streamed while
  // the flat loop's 8 MiB ran at 0.72-0.87x: bench/RESULTS.md); 0: streaming_bytes.
  index_t rows_streaming_bytes = 0;
  constexpr index_t rows_streaming() const { return rows_streaming_bytes > 0 ? rows_streaming_bytes : streaming_bytes; }
  // softmax's tee rows of at least this many bytes are pipelined where not streamed too (a row's values
  // kept in a stack row, its tail stored during the next row's sum sweep: cpu/row_tee.hpp); by default
  // never (1 TiB). Within cpu::tee_pipeline_bytes (two rows).
  index_t tee_pipeline_from_bytes = index_t(1) << 40;
  // The row kernels' prefetch: `tee` where a row's reduction sweep also keeps the values it reduces
  // (softmax's exp(x - max)), prefetching during that sweep; `tail` for the other row-fused rows
  // (layer_norm, rms_norm), prefetching during their tail sweep.
  row_prefetch_config tee{}, tail{};
  friend constexpr bool operator==(const elementwise_config&, const elementwise_config&) = default;
};

// One row of the tuned table: on this machine, this configuration.
struct elementwise_tuned_entry {
  machine_key machine;
  elementwise_config config;
};
} // namespace tenfold::cpu
