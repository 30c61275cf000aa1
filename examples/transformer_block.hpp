#pragma once
// A pre-norm transformer encoder block as a C++ type: parameters as members, the forward pass as one
// expression. `let` names the values used more than once (the residual stream, the fused QKV
// projection); everything else — which values materialise, where each lives in the arena, which
// elementwise work runs in a GEMM's store or a row-fused loop — follows from the types.
#include <tenfold/tenfold.hpp>

template <tenfold::index_t S, tenfold::index_t D, tenfold::index_t H, tenfold::index_t F>
struct encoder_block {
  static_assert(D % H == 0, "the model width must split evenly into heads");
  static constexpr tenfold::index_t tokens = S, width = D, heads = H, hidden = F, head_dim = D / H;
  template <tenfold::index_t... N>
  using param = tenfold::Tensor<float, tenfold::shape<N...>>;
  // The products' weights, stored [out, in] as in PyTorch and packed once for the GEMM (cpu/prepacked.hpp).
  template <tenfold::index_t Out, tenfold::index_t In>
  using weight = tenfold::Prepacked<float, tenfold::shape<Out, In>>;

  param<D> ln1_g, ln1_b, ln2_g, ln2_b;
  weight<3 * D, D> w_qkv;
  param<3 * D> b_qkv;
  weight<D, D> w_o;
  param<D> b_o;
  weight<F, D> w_1;
  param<F> b_1;
  weight<D, F> w_2;
  param<D> b_2;

  explicit encoder_block(tenfold::rng& g) {
    using namespace tenfold;
    const float sd = 1.0f / std::sqrt(float(D)), sf = 1.0f / std::sqrt(float(F));
    ln1_g = uniform<shape<D>>(g, 0.8f, 1.2f), ln1_b = uniform<shape<D>>(g, -0.1f, 0.1f);
    ln2_g = uniform<shape<D>>(g, 0.8f, 1.2f), ln2_b = uniform<shape<D>>(g, -0.1f, 0.1f);
    w_qkv = normal<shape<3 * D, D>>(g, 0.0f, sd), b_qkv = uniform<shape<3 * D>>(g, -0.1f, 0.1f);
    w_o = normal<shape<D, D>>(g, 0.0f, sd), b_o = uniform<shape<D>>(g, -0.1f, 0.1f);
    w_1 = normal<shape<F, D>>(g, 0.0f, sd), b_1 = uniform<shape<F>>(g, -0.1f, 0.1f);
    w_2 = normal<shape<D, F>>(g, 0.0f, sf), b_2 = uniform<shape<D>>(g, -0.1f, 0.1f);
  }
  auto parameters() const { return std::tie(ln1_g, ln1_b, ln2_g, ln2_b, w_qkv, b_qkv, w_o, b_o, w_1, b_1, w_2, b_2); }
  // The name map for io::load_parameters / io::save_parameters (bench/transformer_block_peers.py reads it).
  template <class Visit>
  void each(Visit&& f) {
    f("ln1.weight", ln1_g), f("ln1.bias", ln1_b), f("ln2.weight", ln2_g), f("ln2.bias", ln2_b);
    f("qkv.weight", w_qkv), f("qkv.bias", b_qkv), f("out.weight", w_o), f("out.bias", b_o);
    f("fc1.weight", w_1), f("fc1.bias", b_1), f("fc2.weight", w_2), f("fc2.bias", b_2);
  }

  // Multi-head self-attention of h [S, D]: softmax(q kᵀ / √d) v per head, heads joined, projected.
  template <class X>
  auto attention(const X& h) const {
    using namespace tenfold;
    return let(linear(h, w_qkv, b_qkv), [this](const auto& qkv) {
      // [S, D] columns of the fused projection -> [H, S, D/H]: views, folded into strides.
      auto split = [](const auto& t) { return permute<1, 0, 2>(reshape<S, H, head_dim>(t)); };
      auto q = split(slice<whole, range<0, D>>(qkv));
      auto k = split(slice<whole, range<D, 2 * D>>(qkv));
      auto v = split(slice<whole, range<2 * D, 3 * D>>(qkv));
      // Tiled, with an online softmax: the S x S scores of a head are never materialised.
      return linear(reshape<S, D>(permute<1, 0, 2>(tenfold::attention(q, k, v))), w_o, b_o);
    });
  }

  // x: a Tensor<float, shape<S, D>>, or any expression of that shape (a layer of a chain, deep_models.hpp).
  template <class X>
  auto forward(const X& x) const {
    using namespace tenfold;
    return let(x + attention(layer_norm(x, ln1_g, ln1_b)), [this](const auto& x1) {
      return x1 + linear(gelu(linear(layer_norm(x1, ln2_g, ln2_b), w_1, b_1)), w_2, b_2);
    });
  }
};
