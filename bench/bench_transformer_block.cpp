// examples/transformer_block's forward pass timed (bench/run_transformer_block.sh runs it next to
// PyTorch, bench/transformer_block_peers.py, on the same weights): 128 tokens x width 256, 4 heads, MLP
// 1024, one program with its arena planned at compile time. Writes the weights, the input and tenfold's
// output to DIR/block.safetensors and DIR/io.safetensors for the peer, then prints the median and the
// minimum milliseconds of REPS forward passes after warm-up.
//   tenfold_bench_transformer_block DIR [REPS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <tenfold/io/parameters.hpp>

#include "../examples/transformer_block.hpp"

using namespace tenfold;

using block = encoder_block<128, 256, 4, 1024>; // as examples/transformer_block.cpp
using act = Tensor<float, shape<block::tokens, block::width>>;
using program_t = program<const block, act>;

struct io_tensors {
  act x, y;
  template <class F>
  void each(F&& f) {
    f("x", x), f("y", y);
  }
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [REPS]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  rng g(11);
  static block model(g); // ~3 MB of weights: static, not on the stack
  static io_tensors t;
  t.x = normal<shape<block::tokens, block::width>>(g);
  alignas(64) static std::byte arena[program_t::arena_bytes];
  program_t run(model, arena);
  std::vector<double> ms;
  for (int r = -5; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run(t.y, t.x);
    if (r >= 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  try {
    io::save_parameters(dir + "/block.safetensors", model);
    io::save_parameters(dir + "/io.safetensors", t);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf("tenfold     median %8.3f ms  min %8.3f ms  (%d passes, arena %ld bytes)\n", ms[ms.size() / 2], ms[0], reps,
              long(program_t::arena_bytes));
}
