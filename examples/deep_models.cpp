// A 48-layer MLP and a 24-layer transformer encoder, each a compile-time loop over its layers
// (examples/deep_models.hpp): planned at compile time, run once, summarised. CI prints the time and
// memory this file takes to compile.
#include <cstdio>

#include "deep_models.hpp"

using namespace tenfold;

using mlp = deep_mlp<64, 256, 48>;
using encoder = deep_encoder<128, 256, 4, 1024, 24>;
using mlp_program = program<const mlp, Tensor<float, shape<mlp::batch, mlp::width>>>;
using encoder_program = program<const encoder, Tensor<float, shape<encoder::tokens, encoder::width>>>;

// Two layers' outputs alive at a time, whatever the depth: each arena is its lower bound.
static_assert(mlp_program::plan::arena_bytes == mlp_program::plan::lower_bound);
static_assert(encoder_program::plan::arena_bytes * 100 <= encoder_program::plan::lower_bound * 102);

template <class Program, class Model, class X>
bool report(const char* name, const Model& model, const X& x) {
  Program run(model);
  const auto y = run(x);
  const Tensor<float> total = sum(y), magnitude = sum(abs(y));
  std::printf("%s: %ld layers; arena %ld bytes in %d buffers (lower bound %ld); sum(y) = %.6f, sum|y| = %.6f\n", name,
              long(Model::layers), long(Program::arena_bytes), Program::plan::buffers, long(Program::plan::lower_bound),
              double(total()), double(magnitude()));
  return std::isfinite(magnitude()) && magnitude() > 0;
}

int main() {
  rng g(7);
  const mlp m(g);
  const encoder e(g);
  const Tensor<float, shape<mlp::batch, mlp::width>> xm = normal<shape<mlp::batch, mlp::width>>(g);
  const Tensor<float, shape<encoder::tokens, encoder::width>> xe = normal<shape<encoder::tokens, encoder::width>>(g);
  const bool ok = report<mlp_program>("deep_mlp", m, xm) & report<encoder_program>("deep_encoder", e, xe);
  return ok ? 0 : 1;
}
