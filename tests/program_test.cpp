// program<Model, Inputs...>: a transformer block and a recurrent cell as C++ types; their forward
// passes against plain double-precision loops, their arenas against the lower bound, weights, state
// and activations kept apart, and a forward pass that allocates nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../examples/transformer_block.hpp"

using namespace tenfold;

namespace {
// ---- a naive transformer block in double -------------------------------------------------------
using mat = std::vector<double>; // row-major

template <class T>
mat to_mat(const T& t) {
  return mat(t.data(), t.data() + T::size());
}
// y[r, o] = sum_i x[r, i] w[o, i] + b[o]
mat linear_ref(const mat& x, int rows, int in, const mat& w, const mat& b, int out) {
  mat y(rows * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}
mat layer_norm_ref(const mat& x, int rows, int d, const mat& g, const mat& b) {
  mat y(x.size());
  for (int r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < d; ++i) m += x[r * d + i];
    m /= d;
    for (int i = 0; i < d; ++i) v += (x[r * d + i] - m) * (x[r * d + i] - m);
    v /= d;
    for (int i = 0; i < d; ++i) y[r * d + i] = (x[r * d + i] - m) / std::sqrt(v + 1e-5) * g[i] + b[i];
  }
  return y;
}
double gelu_ref(double z) { return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))); }

template <class B>
mat block_ref(const B& m, const mat& x) {
  constexpr int S = B::tokens, D = B::width, H = B::heads, F = B::hidden, E = B::head_dim;
  const mat h = layer_norm_ref(x, S, D, to_mat(m.ln1_g), to_mat(m.ln1_b));
  const mat qkv = linear_ref(h, S, D, to_mat(m.w_qkv), to_mat(m.b_qkv), 3 * D);
  mat joined(S * D);
  for (int hd = 0; hd < H; ++hd)
    for (int i = 0; i < S; ++i) {
      std::vector<double> p(S);
      double mx = -1e300, z = 0;
      for (int j = 0; j < S; ++j) {
        double s = 0;
        for (int e = 0; e < E; ++e) s += qkv[i * 3 * D + hd * E + e] * qkv[j * 3 * D + D + hd * E + e];
        p[j] = s / std::sqrt(double(E));
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j < S; ++j) z += p[j] = std::exp(p[j] - mx);
      for (int e = 0; e < E; ++e) {
        double o = 0;
        for (int j = 0; j < S; ++j) o += p[j] / z * qkv[j * 3 * D + 2 * D + hd * E + e];
        joined[i * D + hd * E + e] = o;
      }
    }
  const mat att = linear_ref(joined, S, D, to_mat(m.w_o), to_mat(m.b_o), D);
  mat x1(S * D);
  for (int i = 0; i < S * D; ++i) x1[i] = x[i] + att[i];
  mat f = linear_ref(layer_norm_ref(x1, S, D, to_mat(m.ln2_g), to_mat(m.ln2_b)), S, D, to_mat(m.w_1), to_mat(m.b_1), F);
  for (auto& v : f) v = gelu_ref(v);
  const mat f2 = linear_ref(f, S, F, to_mat(m.w_2), to_mat(m.b_2), D);
  for (int i = 0; i < S * D; ++i) x1[i] += f2[i];
  return x1;
}

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
