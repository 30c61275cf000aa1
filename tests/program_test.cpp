// program<Model, Inputs...>: a transformer block and a recurrent cell as C++ types; their forward
// passes against plain double-precision loops, their arenas against the lower bound, weights, state
// and activations kept apart, and a forward pass that allocates nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../examples/transformer_block.hpp"
#include "reference_models.hpp"

using namespace tenfold;
using namespace reference;

namespace {
// ---- a recurrent cell with state ------------------------------------------------------------------
struct rnn_cell {
  Tensor<float, shape<16, 16>> w_h, w_x;
  Tensor<float, shape<4, 16>> w_out;
  Tensor<float, shape<1, 16>> h; // state
  explicit rnn_cell(rng& g) {
    w_h = normal<shape<16, 16>>(g, 0.0f, 0.25f), w_x = normal<shape<16, 16>>(g, 0.0f, 0.25f);
    w_out = normal<shape<4, 16>>(g, 0.0f, 0.25f);
  }
  auto parameters() const { return std::tie(w_h, w_x, w_out); }
  auto state() { return std::tie(h); }
  // h <- tanh(h W_hᵀ + x W_xᵀ) (reading the state it replaces, through a matmul); y = h W_outᵀ.
  auto forward(const Tensor<float, shape<1, 16>>& x) {
    return sequence(update(h, tanh(matmul(h, transpose(w_h)) + matmul(x, transpose(w_x)))), matmul(h, transpose(w_out)));
  }
};
} // namespace

TEST_CASE("a transformer block as a program: values against double loops", "[program]") {
  using B = encoder_block<16, 32, 4, 64>;
  rng g(3);
  const B model(g);
  Tensor<float, shape<16, 32>> x = normal<shape<16, 32>>(g);
  program<const B, Tensor<float, shape<16, 32>>> run(model);
  Tensor<float, shape<16, 32>> y = run(x);
  const mat ref = block_ref(model, to_mat(x));
  double worst = 0;
  for (int i = 0; i < 16 * 32; ++i) worst = std::max(worst, std::abs(y.data()[i] - ref[i]) / (1 + std::abs(ref[i])));
  CHECK(worst < 2e-5);
  // The same expression assigned directly gives the same bits.
  Tensor<float, shape<16, 32>> direct = model.forward(x);
  CHECK(std::equal(direct.begin(), direct.end(), y.begin()));
}

TEST_CASE("the block's tiled attention equals the materialised formula it replaced", "[program][attention]") {
  // Per head of a fused QKV projection, read through the same views as examples/transformer_block.hpp.
  constexpr index_t S = 48, D = 64, H = 4, E = D / H;
  rng g(5);
  Tensor<float, shape<S, 3 * D>> qkv = normal<shape<S, 3 * D>>(g);
  auto split = [](const auto& t) { return permute<1, 0, 2>(reshape<S, H, E>(t)); };
  auto q = split(slice<whole, range<0, D>>(qkv));
  auto k = split(slice<whole, range<D, 2 * D>>(qkv));
  auto v = split(slice<whole, range<2 * D, 3 * D>>(qkv));
  Tensor<float, shape<H, S, E>> tiled = attention(q, k, v);
  Tensor<float, shape<H, S, E>> formula = matmul(softmax(matmul(q, swapaxes<1, 2>(k)) * (1.0f / std::sqrt(float(E)))), v);
  double worst = 0;
  for (index_t i = 0; i < tiled.size(); ++i) worst = std::max(worst, double(std::abs(tiled.data()[i] - formula.data()[i])));
  CHECK(worst < 1e-6);
}

TEST_CASE("a transformer block's arena: at most 2% over the lower bound, far below the sum", "[program][arena]") {
  using B = encoder_block<128, 256, 4, 1024>;
  using P = program_plan<const B, Tensor<float, shape<128, 256>>>;
  STATIC_REQUIRE(P::arena_bytes >= P::lower_bound);
  STATIC_REQUIRE(P::arena_bytes * 100 <= P::lower_bound * 102);
  STATIC_REQUIRE(P::arena_bytes * 2 < P::activation_total);
  // Weights are the model's own, counted apart from the activations.
  STATIC_REQUIRE(P::weight_bytes == 4 * (4 * 256 + 3 * 256 * 256 + 3 * 256 + 256 * 256 + 256 + 2 * 1024 * 256 + 1024 + 256));
  STATIC_REQUIRE(P::state_bytes == 0);
  // Every buffer: LN1 out, QKV, per-head attention output, joined heads, x1, LN2 out, MLP hidden (the
  // tiled attention materialises no S x S scores or probabilities: 786432 bytes, was 917504).
  STATIC_REQUIRE(P::buffers == 8);
  STATIC_REQUIRE(P::arena_bytes == 786432);
}

TEST_CASE("state is updated in place, statement by statement", "[program]") {
  rng g(4);
  rnn_cell cell(g);
  using P = program_plan<rnn_cell, Tensor<float, shape<1, 16>>>;
  STATIC_REQUIRE(P::state_bytes == 16 * 4);
  STATIC_REQUIRE(P::weight_bytes == (2 * 256 + 64) * 4);
  program<rnn_cell, Tensor<float, shape<1, 16>>> run(cell);
  std::vector<double> h(16, 0.0);
  for (int step = 0; step < 3; ++step) {
    Tensor<float, shape<1, 16>> x = uniform<shape<1, 16>>(g, -1.0f, 1.0f);
    Tensor<float, shape<1, 4>> y = run(x);
    std::vector<double> hn(16);
    for (int o = 0; o < 16; ++o) {
      double s = 0;
      for (int i = 0; i < 16; ++i) s += h[i] * cell.w_h(o, i) + x(0, i) * cell.w_x(o, i);
      hn[o] = std::tanh(s);
    }
    h = hn;
    for (int o = 0; o < 16; ++o) CHECK(cell.h(0, o) == Approx(h[o]).margin(1e-5));
    for (int o = 0; o < 4; ++o) {
      double s = 0;
      for (int i = 0; i < 16; ++i) s += h[i] * cell.w_out(o, i);
      CHECK(y(0, o) == Approx(s).margin(1e-5));
    }
  }
}

TEST_CASE("a program's arena can be the caller's; a wrong one is a clear error", "[program]") {
  using B = encoder_block<16, 32, 4, 64>;
  using R = program<const B, Tensor<float, shape<16, 32>>>;
  rng g(5);
  const B model(g);
  alignas(64) static std::byte arena[R::arena_bytes + 64];
  CHECK_THROWS_WITH(R(model, std::span(arena, R::arena_bytes - 1)), Catch::Contains("bytes; this model needs"));
  CHECK_THROWS_WITH(R(model, std::span(arena + 1, R::arena_bytes)), Catch::Contains("64-byte aligned"));
  Tensor<float, shape<16, 32>> x = normal<shape<16, 32>>(g);
  R run(model, std::span(arena, R::arena_bytes));
  Tensor<float, shape<16, 32>> a = run(x), b = model.forward(x);
  CHECK(std::equal(a.begin(), a.end(), b.begin()));
}
