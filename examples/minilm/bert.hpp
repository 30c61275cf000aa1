#pragma once
// all-MiniLM-L6-v2 (a 6-layer BERT, width 384, 12 heads, FFN 1536) as a C++ type: the weights as
// members named as in the Hugging Face checkpoint (each(): load_parameters fills them by those names),
// and sentence embeddings as one expression per batch shape — the embeddings' sum and layer_norm in
// one nest, the six layers a chain, then mean pooling over the attention mask and L2 normalisation,
// as sentence-transformers' Pooling and Normalize modules do. Padding is masked: sentence b's attention
// reads only its first lens[b] keys (attention's key_lengths, the flash kernel: no score matrix), so a
// padded key carries no weight in any row (Hugging Face adds float's lowest to its score: weight 0 too).
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include <tenfold/io/parameters.hpp>
#include <tenfold/tenfold.hpp>

namespace minilm {

using tenfold::index_t;
constexpr index_t vocab = 30522, width = 384, heads = 12, head_dim = width / heads, ffn = 1536, layers = 6,
                  max_positions = 512;
constexpr float ln_eps = 1e-12f;

template <index_t... N>
using param = tenfold::Tensor<float, tenfold::shape<N...>>;
// The products' weights, packed once when loaded (cpu/prepacked.hpp): a pass over 42 MB of weights
// that every forward pass would otherwise make to pack them.
template <index_t Out, index_t In>
using weight = tenfold::Prepacked<float, tenfold::shape<Out, In>>;

struct layer {
  weight<width, width> wq, wk, wv, wo;
  param<width> bq, bk, bv, bo, ln1_g, ln1_b;
  weight<ffn, width> w1;
  param<ffn> b1;
  weight<width, ffn> w2;
  param<width> b2, ln2_g, ln2_b;

  template <class F>
  void each(F&& f) {
    f("attention.self.query.weight", wq), f("attention.self.query.bias", bq);
    f("attention.self.key.weight", wk), f("attention.self.key.bias", bk);
    f("attention.self.value.weight", wv), f("attention.self.value.bias", bv);
    f("attention.output.dense.weight", wo), f("attention.output.dense.bias", bo);
    f("attention.output.LayerNorm.weight", ln1_g), f("attention.output.LayerNorm.bias", ln1_b);
    f("intermediate.dense.weight", w1), f("intermediate.dense.bias", b1);
    f("output.dense.weight", w2), f("output.dense.bias", b2);
    f("output.LayerNorm.weight", ln2_g), f("output.LayerNorm.bias", ln2_b);
  }

  // Post-norm BERT layer over h [B, S, width]; sentence b has lens[b] tokens, then padding.
  template <index_t B, index_t S, class H>
  auto forward(const H& h, const tenfold::Tensor<std::int32_t, tenfold::shape<B>>& lens) const {
    using namespace tenfold;
    // [B, S, width] -> [B, heads, S, head_dim]: views, folded into the GEMMs' strides.
    auto split = [](const auto& t) { return permute<0, 2, 1, 3>(reshape<B, S, heads, head_dim>(t)); };
    return let(h, [&](const auto& x) {
      auto q = split(linear(x, wq, bq));
      auto k = split(linear(x, wk, bk));
      auto v = split(linear(x, wv, bv));
      // softmax(q kᵀ / √head_dim) v over each sentence's own tokens
      auto context = reshape<B, S, width>(permute<0, 2, 1, 3>(attention(q, k, v, key_lengths(lens))));
      return let(layer_norm(linear(context, wo, bo) + x, ln1_g, ln1_b, ln_eps), [&](const auto& a) {
        return layer_norm(linear(gelu(linear(a, w1, b1)), w2, b2) + a, ln2_g, ln2_b, ln_eps);
      });
    });
  }
};

struct model {
  param<vocab, width> word;
  param<max_positions, width> position;
  param<2, width> token_type;
  param<width> ln_g, ln_b;
  std::array<layer, layers> encoder;

  template <class F>
  void each(F&& f) {
    f("embeddings.word_embeddings.weight", word), f("embeddings.position_embeddings.weight", position);
    f("embeddings.token_type_embeddings.weight", token_type);
    f("embeddings.LayerNorm.weight", ln_g), f("embeddings.LayerNorm.bias", ln_b);
    for (std::size_t i = 0; i < encoder.size(); ++i)
      encoder[i].each(tenfold::io::prefixed("encoder.layer." + std::to_string(i) + ".", f));
  }
  // What the checkpoint holds besides: the unused pooler, and the position ids 0..511 (implied here).
  static tenfold::io::load_options load_options() { return {.ignore = {"pooler.*", "embeddings.position_ids"}}; }

  // Unit-length sentence embeddings [B, width] of token ids [B, S] (every row starting with [CLS]):
  // sentence b has lens[b] tokens, then padding; mask [B, S] says the same as numbers (mask[b, j] is 1
  // for j < lens[b], else 0: the mean pooling's weights). Token type 0 throughout.
  template <index_t B, index_t S>
  auto forward(const tenfold::Tensor<std::int32_t, tenfold::shape<B, S>>& ids, const tenfold::Tensor<float, tenfold::shape<B, S>>& mask,
               const tenfold::Tensor<std::int32_t, tenfold::shape<B>>& lens) const {
    using namespace tenfold;
    static_assert(S <= max_positions, "minilm: at most 512 tokens");
    auto x = layer_norm(embedding(word, ids) + slice<range<0, S>, whole>(position) + slice<range<0, 1>, whole>(token_type),
                        ln_g, ln_b, ln_eps);
    auto h = chain<layers>(x, [this, &lens](index_t i, const auto& t) { return encoder[i].template forward<B, S>(t, lens); });
    auto m = reshape<B, S, 1>(mask);
    auto pooled = sum(h * m, axis<1>) / maximum(sum(m, axis<1>), 1e-9f);
    return let(pooled, [](const auto& e) { return e / maximum(norm(e, axis<1>, keepdims), 1e-12f); });
  }
};

} // namespace minilm
