// A transformer encoder block (multi-head attention, layer norm, GELU MLP, residuals) as a C++
// program: one forward expression, its activations planned into one arena at compile time, and a
// forward pass that allocates nothing.
#include <cstdio>

#include "transformer_block.hpp"

using namespace tenfold;

using block = encoder_block<128, 256, 4, 1024>; // 128 tokens, width 256, 4 heads, MLP 1024
using program_t = program<const block, Tensor<float, shape<block::tokens, block::width>>>;

int main() {
  rng g(11);
  const block model(g);
  Tensor<float, shape<block::tokens, block::width>> x = normal<shape<block::tokens, block::width>>(g);

  static_assert(program_t::plan::arena_bytes * 100 <= program_t::plan::lower_bound * 102,
                "the planned arena is within 2% of the lower bound");
  alignas(64) static std::byte arena[program_t::arena_bytes];
  program_t run(model, arena);
  Tensor<float, shape<block::tokens, block::width>> y;
  run(y, x);

  Tensor<float> checksum = sum(y), abs_sum = sum(abs(y));
  Tensor<float> row0 = sum(slice<range<0, 1>>(y));
  std::printf("transformer_block: %ld tokens x %ld wide, %ld heads, MLP %ld\n", long(block::tokens), long(block::width),
              long(block::heads), long(block::hidden));
  std::printf("  weights %ld bytes; activations: arena %ld bytes for %d buffers (lower bound %ld, all apart %ld)\n",
              long(program_t::plan::weight_bytes), long(program_t::arena_bytes), program_t::plan::buffers,
              long(program_t::plan::lower_bound), long(program_t::plan::activation_total));
  std::printf("  checksum sum(y) = %.6f, sum|y| = %.6f, sum(y[0]) = %.6f\n", double(checksum()), double(abs_sum()),
              double(row0()));
  return std::isfinite(abs_sum()) ? 0 : 1;
}
