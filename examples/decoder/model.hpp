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
#include <tuple>

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

// Rotary position embeddings: tenfold::rope (ops/rope.hpp; GPT-NeoX's and Llama's layout, dimension i of
// the first half pairing with i + D/2) with tenfold::rope_tables<float, T, head_dim> (base 10000).

inline constexpr auto attention_in = [](const auto& x, const auto& g, const auto& w) { return matmul(norm(x, g), w); };
// Part I of qkv [B * T, 3 * width] (0: q, 1: k, 2: v) as heads [B, heads, T, head_dim] (of a writable qkv
// a writable view: the trainer's gradients of the heads are written into gqkv through it).
template <index_t I, index_t B, index_t T>
auto head(auto&& qkv) {
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
// The heads attention reads, qkv [B * T, 3 * width] -> [3, B, heads, T, head_dim]: q and k rotated, v as it
// is. The trainer keeps them per layer: attention's backward pass then reads rotated q and k from memory,
// its gradients with respect to all three are one expression (dq, dk and dv once each, their
// statistics once), and that gradient, a tensor, goes back through rope, whose adjoint reads it twice.
// (The trainer runs this stage part by part both ways: forward writes the three parts one by one into
// slices of its tensor, which is what assigning the stack does too, cpu::run_concat; backward writes
// each part's gradient into its columns of qkv's gradient, where the vjp of the stack as a whole would
// compute them into buffers and copy them there.)
template <index_t B, index_t T>
auto rotated_heads(const auto& qkv, const auto& cos, const auto& sin) {
  return stack<0>(rotated_head<0, B, T>(qkv, cos, sin), rotated_head<1, B, T>(qkv, cos, sin), head<2, B, T>(qkv));
}
// Part I of h [3, B, heads, T, head_dim]: [B, heads, T, head_dim].
template <index_t I, index_t B, index_t T>
auto head_part(auto&& h) {
  return reshape<B, heads, T, head_dim>(slice<range<I, I + 1>, whole, whole, whole, whole>(h));
}
// Causal attention over h [3, B, heads, T, head_dim] (rotated_heads) -> the heads' outputs [B * T, width].
template <index_t B, index_t T>
auto attend(const auto& h) {
  return merge_heads<B, T>(attention(head_part<0, B, T>(h), head_part<1, B, T>(h), head_part<2, B, T>(h), causal));
}
inline constexpr auto residual = [](const auto& x, const auto& y, const auto& w) { return x + matmul(y, w); };
inline constexpr auto mlp_in = [](const auto& x, const auto& g, const auto& w) { return matmul(norm(x, g), w); };
// The vjp of attention_in and mlp_in, matmul(norm(x, g), w), at its output's gradient gy, with n = norm(x, g)
// as the forward pass kept it: {x's, g's, w's gradients}. norm's backward in its usual closed form,
// x̂ = (x - mean x) r, r = 1 / sqrt(var + eps), d = (gy wᵀ) ∘ g, dx = r (d - mean d - x̂ mean(d x̂)): two row
// means of the gradient, where `vjp` through norm's definition computes three row sums and a fourth inside
// one of them (the centring's mean seen through the variance: zero, but not known to be). [384, 128] with a
// residual added, one thread, Intel model 167: 26 against 45 us, the same values to 7e-7.
inline constexpr auto norm_linear_vjp = [](const auto& x, const auto& g, const auto& w, const auto& n, const auto& gy) {
  auto c = x - mean(x, axis<-1>, keepdims);
  auto r = rsqrt(mean(square(c), axis<-1>, keepdims) + norm_eps);
  auto xhat = c * r;
  auto dn = matmul(gy, transpose(w)); // (norm(x, g)'s gradient: one product, which both of its readers share in a step)
  auto d = dn * g;
  return std::tuple{r * (d - mean(d, axis<-1>, keepdims) - xhat * mean(d * xhat, axis<-1>, keepdims)), sum(dn * xhat, axis<0>),
                    matmul(transpose(n), gy)};
};
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
