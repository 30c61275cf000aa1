#pragma once
// Launch shapes, chosen at compile time from the static shape (host-side constexpr, tested without a
// device in tests/cuda/cuda_host_test.cu). No device query: the numbers below are good across sm_80
// and sm_90 (108-132 SMs, 2048 resident threads each).
#include "tenfold/core/config.hpp"

namespace tenfold::cuda {

inline constexpr int warp_size = 32;

struct launch_shape {
  unsigned grid = 1;    // blocks
  unsigned block = 1;   // threads per block
  int vector = 1;       // elements per thread per step (16-byte accesses)
  unsigned per_block = 1; // rows (or outputs) handled by one block at a time
  constexpr bool operator==(const launch_shape&) const = default;
};

constexpr index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }
constexpr unsigned pow2_at_least(index_t x) {
  unsigned p = 1;
  while (index_t(p) < x) p *= 2;
  return p;
}

// Elementwise: 256 threads, a grid-stride loop over vectors of `vector` elements. The grid is capped
// at a few waves on the largest device: beyond that more blocks only add scheduling work, and each
// thread amortising its index setup over several vectors is cheaper.
inline constexpr unsigned elementwise_block = 256;
inline constexpr unsigned max_grid = 4096;

constexpr launch_shape elementwise_launch(index_t elements, int vector) {
  const index_t work = ceil_div(elements, vector);
  index_t grid = ceil_div(work, elementwise_block);
  grid = grid < 1 ? 1 : grid > index_t(max_grid) ? index_t(max_grid) : grid;
  return {unsigned(grid), elementwise_block, vector, 1};
}

// Elements per 16-byte access of the widest element a flat tree reads or writes.
constexpr int vector_width(std::size_t widest_element_bytes) {
  const int v = int(16 / widest_element_bytes);
  return v < 1 ? 1 : v;
}

// Row-wise work (row-fused composites; reductions along the innermost axis): a row of up to
// `warp_row_limit` elements is one warp's (shuffles only, no block barrier; 8 rows per block); a longer
// one gets a whole block whose size grows with the row, 8+ elements per thread, up to 1024 threads.
inline constexpr index_t warp_row_limit = 1024;
inline constexpr unsigned rows_block = 256;

constexpr launch_shape row_launch(index_t rows, index_t cols) {
  if (cols <= warp_row_limit) {
    constexpr unsigned per_block = rows_block / warp_size;
    index_t grid = ceil_div(rows, per_block);
    grid = grid < 1 ? 1 : grid > index_t(max_grid) ? index_t(max_grid) : grid;
    return {unsigned(grid), rows_block, 1, per_block};
  }
  unsigned block = pow2_at_least(ceil_div(cols, 8));
  block = block < 128 ? 128 : block > 1024 ? 1024 : block;
  index_t grid = rows < 1 ? 1 : rows > index_t(max_grid) * 4 ? index_t(max_grid) * 4 : rows;
  return {unsigned(grid), block, 1, 1};
}

// The vector path of the row kernels (cuda/rows_vector.hpp): each thread keeps up to
// `max_row_chunks` 16-byte chunks of a row in registers (32 registers), so the group is the smallest
// that covers the row that way: a warp up to 32 * 8 chunks (1024 floats), else a block of 64..1024
// threads (a power of two). Longer rows (more than 32768 floats) do not fit: grid 0, the generic kernel.
inline constexpr int max_row_chunks = 8;

constexpr launch_shape vector_row_launch(index_t rows, index_t cols, int vector) {
  const index_t chunks = ceil_div(cols, vector);
  if (chunks <= index_t(warp_size) * max_row_chunks) {
    constexpr unsigned per_block = rows_block / warp_size;
    index_t grid = ceil_div(rows, per_block);
    grid = grid < 1 ? 1 : grid > index_t(max_grid) ? index_t(max_grid) : grid;
    return {unsigned(grid), rows_block, vector, per_block};
  }
  unsigned block = pow2_at_least(ceil_div(chunks, max_row_chunks));
  if (block > 1024) return {0, 0, vector, 1};
  block = block < 64 ? 64 : block;
  index_t grid = rows < 1 ? 1 : rows > index_t(max_grid) * 4 ? index_t(max_grid) * 4 : rows;
  return {unsigned(grid), block, vector, 1};
}
// Threads sharing one row, and the chunks each of them holds.
constexpr unsigned row_group(const launch_shape& l) { return l.per_block > 1 ? unsigned(warp_size) : l.block; }
constexpr int row_chunks(const launch_shape& l, index_t cols) { return int(ceil_div(ceil_div(cols, l.vector), row_group(l))); }
} // namespace tenfold::cuda
