#pragma once
// A byte-level GPT as a C++ program: token embedding, `layers` pre-norm blocks (LayerNorm without bias ->
// causal self-attention with rotary position embeddings -> residual; LayerNorm -> GELU MLP -> residual),
// a final LayerNorm and the output layer tied to the embedding. nanoGPT's CPU configuration for
// character-level Shakespeare: 4 layers, 4 heads, width 128, context 64, batch 12 (bench/decoder_torch.py
// is the same model in PyTorch).
//
// As in examples/fashion_mnist, the forward pass is written once per stage (the functions below); a
// training step keeps each stage's output in a tensor and runs the stages backward with `vjp` of the
// same functions. Per block: qkv = norm(x) Wqkv | y = attention(rope(q), rope(k), v) | x2 = x + y Wo |
// a = norm(x2) Wup | x' = x2 + gelu(a) Wdown. Every stage of every block has the same types, so each is
// compiled once.
#include <tenfold/autodiff/backward.hpp>
#include <tenfold/autodiff/optim.hpp>
#include <tenfold/tenfold.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace gpt {
using namespace tenfold;

inline constexpr index_t layers = 4, heads = 4, width = 128, head_dim = width / heads, context = 64, hidden = 4 * width;
inline constexpr float norm_eps = 1e-5f;

// ---- the stages ----
// LayerNorm with a weight and no bias (PyTorch's LayerNorm(bias=False)).
inline constexpr auto norm = [](const auto& x, const auto& g) {
  auto centered = x - mean(x, axis<-1>, keepdims);
  return centered * rsqrt(mean(square(centered), axis<-1>, keepdims) + norm_eps) * g;
};

// Rotary position embedding of x [B, H, T, D] (GPT-NeoX's and Llama's layout: dimension i of the first
// half pairs with i + D/2): x cos + rotate_half(x) sin, rotate_half(x) = [x2, x1] exchanging the halves,
// with cos = [cos θ, cos θ] and sin = [-sin θ, sin θ] per position (θ_i = t 10000^(-2i/D)) given as
// [T, D] tables. The halves are an axis of 2 ([B, H, T, 2, D/2]) and exchanging them is a flip of that
// axis: a view (a negative stride), so the whole is one vectorised elementwise pass, and its derivative
// (the rotation by -θ) is what the autodiff walk derives from this form (a flip's adjoint is the same
// flip).
template <class X, class C, class S>
auto rope(const X& x, const C& cos, const S& sin) {
  using XS = detail::shape_of_t<X>;
  static_assert(XS::rank == 4 && XS::dims[3] % 2 == 0, "gpt::rope: x is [B, H, T, D] with D even");
  constexpr index_t B = XS::dims[0], H = XS::dims[1], T = XS::dims[2], D = XS::dims[3], h = D / 2;
  auto halves = reshape<B, H, T, 2, h>(x);
  // computed in the 5-D shape into a buffer (a let), of which [B, H, T, D] is then a view: reshaping
  // the expression instead would reshape the flipped view, which strides cannot express
  return let(halves * reshape<T, 2, h>(cos) + flip<3>(halves) * reshape<T, 2, h>(sin),
             [](const auto& r) { return reshape<B, H, T, D>(r); });
}
// The [T, D] tables of rope for positions 0 .. T-1.
template <index_t T, index_t D>
struct rope_tables {
  Tensor<float, shape<T, D>> cos, sin;
  rope_tables() {
    for (index_t t = 0; t < T; ++t)
      for (index_t i = 0; i < D / 2; ++i) {
        const double theta = double(t) * std::pow(10000.0, -2.0 * double(i) / double(D));
        cos(t, i) = cos(t, i + D / 2) = float(std::cos(theta));
        sin(t, i) = float(-std::sin(theta)), sin(t, i + D / 2) = float(std::sin(theta));
      }
  }
};

inline constexpr auto attention_in = [](const auto& x, const auto& g, const auto& w) { return matmul(norm(x, g), w); };
// Part I of qkv [B * T, 3 * width] (0: q, 1: k, 2: v) as heads [B, heads, T, head_dim].
template <index_t I, index_t B, index_t T>
auto head(const auto& qkv) {
  auto parts = reshape<B, T, 3, heads, head_dim>(qkv);
  return permute<0, 2, 1, 3>(reshape<B, T, heads, head_dim>(slice<whole, whole, range<I, I + 1>, whole, whole>(parts)));
}
// q or k rotated: copied out of qkv first (a let), so that rope's halves are slices of a [B, H, T, D]
// buffer: their adjoint is then a pad of it (halves of a head inside qkv's rows are not yet).
template <index_t I, index_t B, index_t T>
auto rotated_head(const auto& qkv, const auto& cos, const auto& sin) {
  return let(head<I, B, T>(qkv), [&](const auto& x) { return rope(x, cos, sin); });
}
// The heads' outputs [B * T, width] (heads side by side, as the input's) from o [B, heads, T, head_dim].
template <index_t B, index_t T>
auto merge_heads(const auto& o) {
  return reshape<B * T, width>(permute<0, 2, 1, 3>(o));
}
// qkv [B * T, 3 * width] -> the heads' outputs [B * T, width].
template <index_t B, index_t T>
auto self_attention(const auto& qkv, const auto& cos, const auto& sin) {
  return merge_heads<B, T>(attention(rotated_head<0, B, T>(qkv, cos, sin), rotated_head<1, B, T>(qkv, cos, sin),
                                     head<2, B, T>(qkv), causal));
}
inline constexpr auto residual = [](const auto& x, const auto& y, const auto& w) { return x + matmul(y, w); };
inline constexpr auto mlp_in = [](const auto& x, const auto& g, const auto& w) { return matmul(norm(x, g), w); };
inline constexpr auto mlp_out = [](const auto& x, const auto& a, const auto& w) { return x + matmul(gelu_tanh(a), w); };
// The mean cross-entropy of the next-token logits norm(x) Eᵀ (the output layer tied to the embedding).
inline constexpr auto head_loss = [](const auto& x, const auto& g, const auto& embed, const auto& targets) {
  return cross_entropy(matmul(norm(x, g), transpose(embed)), targets);
};

// ---- parameters ----
template <index_t V>
struct parameters {
  static constexpr index_t vocab = V;
  struct block {
    Tensor<float, shape<width>> ln1 = zeros<float, shape<width>>(), ln2 = zeros<float, shape<width>>();
    Tensor<float, shape<width, 3 * width>> qkv = zeros<float, shape<width, 3 * width>>(); // [in, out]: y = x w
    Tensor<float, shape<width, width>> proj = zeros<float, shape<width, width>>();
    Tensor<float, shape<width, hidden>> up = zeros<float, shape<width, hidden>>();
    Tensor<float, shape<hidden, width>> down = zeros<float, shape<hidden, width>>();
  };
  Tensor<float, shape<V, width>> embed = zeros<float, shape<V, width>>();
  block blocks[layers];
  Tensor<float, shape<width>> ln_f = zeros<float, shape<width>>();

  // GPT-2's initialisation (as bench/decoder_torch.py): matrices N(0, 0.02), the blocks' output
  // projections N(0, 0.02 / sqrt(2 layers)), norm weights 1; drawn from Philox.
  explicit parameters(std::uint64_t seed) {
    rng g(seed);
    const float std_out = 0.02f / std::sqrt(2.0f * float(layers));
    embed = normal<shape<V, width>>(g, 0.0f, 0.02f);
    for (auto& b : blocks) {
      b.ln1 = full<float, shape<width>>(1.0f), b.ln2 = full<float, shape<width>>(1.0f);
      b.qkv = normal<shape<width, 3 * width>>(g, 0.0f, 0.02f);
      b.proj = normal<shape<width, width>>(g, 0.0f, std_out);
      b.up = normal<shape<width, hidden>>(g, 0.0f, 0.02f);
      b.down = normal<shape<hidden, width>>(g, 0.0f, std_out);
    }
    ln_f = full<float, shape<width>>(1.0f);
  }
  parameters() = default; // zeros (gradients, optimizer moments)
  static constexpr index_t count = V * width + layers * (2 * width + width * 3 * width + width * width + 2 * width * hidden) + width;
  // Each tensor by name (io/parameters.hpp's interface).
  template <class F>
  void each(F&& f) {
    each_of([&f](const std::string& name, bool, auto& t) { f(name, t); }, *this);
  }
};

// Parameters, gradients and Adam's two moments are objects of the same layout; each_of visits their
// tensors side by side, f(name, decayed, tensor of each object...): the checkpoint's names, and whether
// weight decay applies (to matrices, not to norm weights).
template <class F, index_t V, class... P>
void each_of(F&& f, parameters<V>& first, P&... rest) {
  // the names, made once (a training step calls this and allocates nothing)
  static const auto names = [] {
    std::array<std::string, 2 + 6 * layers> n;
    n[0] = "embed.weight", n[1 + 6 * layers] = "ln_f.weight";
    const char* parts[6] = {"ln1", "qkv", "proj", "ln2", "up", "down"};
    for (index_t l = 0; l < layers; ++l)
      for (int k = 0; k < 6; ++k) n[std::size_t(1 + 6 * l + k)] = "blocks." + std::to_string(l) + "." + parts[k] + ".weight";
    return n;
  }();
  f(names[0], true, first.embed, rest.embed...);
  for (index_t l = 0; l < layers; ++l) {
    const std::string* n = names.data() + 1 + 6 * l;
    f(n[0], false, first.blocks[l].ln1, rest.blocks[l].ln1...);
    f(n[1], true, first.blocks[l].qkv, rest.blocks[l].qkv...);
    f(n[2], true, first.blocks[l].proj, rest.blocks[l].proj...);
    f(n[3], false, first.blocks[l].ln2, rest.blocks[l].ln2...);
    f(n[4], true, first.blocks[l].up, rest.blocks[l].up...);
    f(n[5], true, first.blocks[l].down, rest.blocks[l].down...);
  }
  f(names[1 + 6 * layers], false, first.ln_f, rest.ln_f...);
}
} // namespace gpt
