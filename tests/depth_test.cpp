// Deep models as compile-time loops over layers (chain<L>, examples/deep_models.hpp): a 48-layer MLP
// and a 24-layer transformer encoder against plain double loops, with their arenas at the lower bound
// and as small as one or two layers need.
#include <catch2/catch.hpp>

#include <cmath>

#include "../examples/deep_models.hpp"
#include "reference_models.hpp"

using namespace tenfold;
using namespace reference;

TEST_CASE("a 48-layer MLP as chain<48>: values, and two activations' arena", "[chain][program]") {
  using model = deep_mlp<4, 16, 48>;
  rng g(21);
  const model m(g);
  using P = program<const model, Tensor<float, shape<4, 16>>>;
  STATIC_REQUIRE(P::plan::lower_bound == 2 * 4 * 16 * 4);
  STATIC_REQUIRE(P::plan::arena_bytes == P::plan::lower_bound);
  const Tensor<float, shape<4, 16>> x = normal<shape<4, 16>>(g);
  P run(m);
  const auto y = run(x);
  mat h = to_mat(x);
  for (int l = 0; l < 48; ++l) {
    h = linear_ref(h, 4, 16, to_mat(m.w[l]), to_mat(m.b[l]), 16);
    for (auto& v : h) v = v > 0 ? v : 0;
  }
  double scale = 0;
  for (double v : h) scale = std::max(scale, std::fabs(v));
  REQUIRE(scale > 0.1); // the signal survives 48 layers, so the comparison means something
  for (int i = 0; i < 64; ++i) CHECK(y.data()[i] == Approx(h[i]).margin(1e-5 * scale));
}

TEST_CASE("a 24-layer encoder as chain<24>: values, and one block's arena", "[chain][program]") {
  using model = deep_encoder<8, 16, 2, 32, 24>;
  rng g(22);
  const model m(g);
  using P = program<const model, Tensor<float, shape<8, 16>>>;
  using one = program<const model::block, Tensor<float, shape<8, 16>>>;
  STATIC_REQUIRE(P::plan::arena_bytes == P::plan::lower_bound);
  // Depth costs no activation memory: one block's, plus the layer output it reads and the one it writes.
  STATIC_REQUIRE(P::plan::lower_bound <= one::plan::lower_bound + 2 * 8 * 16 * 4);
  const Tensor<float, shape<8, 16>> x = normal<shape<8, 16>>(g);
  P run(m);
  const auto y = run(x);
  mat h = to_mat(x);
  for (const auto& b : m.blocks) h = block_ref(b, h);
  for (int i = 0; i < 8 * 16; ++i) CHECK(y.data()[i] == Approx(h[i]).epsilon(1e-4).margin(1e-4));
}
