#pragma once
// Deep models as compile-time loops over layers: `chain<L>(x, layer)` runs one layer type L times
// (layer i with its own weights), so the model's type holds one layer's expression, not L nested
// ones. A 48-layer MLP and a 24-layer transformer encoder compile as fast as one layer, with the
// compilers' default template and constexpr depths, and their arenas hold two layers' outputs.
#include <vector>

#include "transformer_block.hpp"

// h <- relu(h Wᵢᵀ + bᵢ), L times.
template <tenfold::index_t B, tenfold::index_t D, tenfold::index_t L>
struct deep_mlp {
  static constexpr tenfold::index_t batch = B, width = D, layers = L;
  std::vector<tenfold::Tensor<float, tenfold::shape<D, D>>> w;
  std::vector<tenfold::Tensor<float, tenfold::shape<D>>> b;

  explicit deep_mlp(tenfold::rng& g) : w(L), b(L) {
    using namespace tenfold;
    const float s = 1.5f / std::sqrt(float(D)); // keeps the activations near unit scale through ReLUs
    for (index_t i = 0; i < L; ++i) w[i] = uniform<shape<D, D>>(g, -s, s), b[i] = uniform<shape<D>>(g, -0.1f, 0.1f);
  }
  auto forward(const tenfold::Tensor<float, tenfold::shape<B, D>>& x) const {
    using namespace tenfold;
    return chain<L>(x, [this](index_t i, const auto& h) { return relu(linear(h, w[i], b[i])); });
  }
};

// L pre-norm encoder blocks (examples/transformer_block.hpp), each with its own weights.
template <tenfold::index_t S, tenfold::index_t D, tenfold::index_t H, tenfold::index_t F, tenfold::index_t L>
struct deep_encoder {
  using block = encoder_block<S, D, H, F>;
  static constexpr tenfold::index_t tokens = S, width = D, layers = L;
  std::vector<block> blocks;

  explicit deep_encoder(tenfold::rng& g) {
    blocks.reserve(L);
    for (tenfold::index_t i = 0; i < L; ++i) blocks.emplace_back(g);
  }
  auto forward(const tenfold::Tensor<float, tenfold::shape<S, D>>& x) const {
    return tenfold::chain<L>(x, [this](tenfold::index_t i, const auto& h) { return blocks[i].forward(h); });
  }
};
