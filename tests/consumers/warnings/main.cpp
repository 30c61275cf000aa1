// Consumer built with -Wall -Wextra -Werror and tenfold's headers as an ordinary (not SYSTEM) include
// directory, at -O2 for this machine's ISA: the paths a model instantiates must compile without a
// warning from tenfold. One small model touches each main path (elementwise with broadcasting, a
// reduction, row-fused softmax and layer_norm, linear with a bias + relu epilogue, conv2d, pooling,
// attention, let, views, and a program with an arena); the values are checked against sums that are
// known in closed form or computed by plain loops here.
#include <cmath>
#include <cstdio>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

namespace {
int failures = 0;

void check(bool ok, const char* what, double got, double want) {
  if (!ok) {
    std::fprintf(stderr, "%s: got %g, expected %g\n", what, got, want);
    ++failures;
  }
}
void check_near(const char* what, double got, double want, double tol = 1e-4) {
  check(std::fabs(got - want) <= tol * (1 + std::fabs(want)), what, got, want);
}

constexpr index_t S = 8, D = 16, H = 2, F = 32;

// A small encoder-style model: a conv stem over an image, pooled; a pre-norm attention block.
struct model {
  Tensor<float, shape<4, 3, 3, 3>> conv_w;
  Tensor<float, shape<4, 1, 1>> conv_b;
  Tensor<float, shape<D>> ln_g, ln_b;
  Tensor<float, shape<3 * D, D>> w_qkv;
  Tensor<float, shape<3 * D>> b_qkv;
  Tensor<float, shape<F, D>> w_1;
  Tensor<float, shape<F>> b_1;
  Tensor<float, shape<D, F>> w_2;
  Tensor<float, shape<D>> b_2;

  explicit model(rng& g) {
    conv_w = normal<shape<4, 3, 3, 3>>(g, 0.0f, 0.2f), conv_b = uniform<shape<4, 1, 1>>(g, -0.1f, 0.1f);
    ln_g = uniform<shape<D>>(g, 0.8f, 1.2f), ln_b = uniform<shape<D>>(g, -0.1f, 0.1f);
    w_qkv = normal<shape<3 * D, D>>(g, 0.0f, 0.25f), b_qkv = uniform<shape<3 * D>>(g, -0.1f, 0.1f);
    w_1 = normal<shape<F, D>>(g, 0.0f, 0.25f), b_1 = uniform<shape<F>>(g, -0.1f, 0.1f);
    w_2 = normal<shape<D, F>>(g, 0.0f, 0.18f), b_2 = uniform<shape<D>>(g, -0.1f, 0.1f);
  }
  auto parameters() const { return std::tie(conv_w, conv_b, ln_g, ln_b, w_qkv, b_qkv, w_1, b_1, w_2, b_2); }

  // [S, D] -> [S, D]: causal multi-head self-attention and a relu MLP, each with a residual.
  auto forward(const Tensor<float, shape<S, D>>& x) const {
    return let(linear(layer_norm(x, ln_g, ln_b), w_qkv, b_qkv), [&x, this](const auto& qkv) {
      auto heads = [](const auto& t) { return permute<1, 0, 2>(reshape<S, H, D / H>(t)); };
      auto q = heads(slice<whole, range<0, D>>(qkv));
      auto k = heads(slice<whole, range<D, 2 * D>>(qkv));
      auto v = heads(slice<whole, range<2 * D, 3 * D>>(qkv));
      return let(x + reshape<S, D>(permute<1, 0, 2>(attention(q, k, v, causal))),
                 [this](const auto& x1) { return x1 + linear(relu(linear(x1, w_1, b_1)), w_2, b_2); });
    });
  }
};
} // namespace

int main() {
  rng g(11);

  // Elementwise with broadcasting, a reduction over an axis, argmax.
  Tensor<float, shape<S, D>> x = normal<shape<S, D>>(g);
  Tensor<float, shape<D>> col = linspace<float, D>(-1, 1);
  Tensor<float, shape<S, 1>> row = reshape<S, 1>(arange<float, S>(0, 1));
  Tensor<float, shape<S, D>> y = exp(x * 0.5f) + col - row;
  Tensor<float, shape<S>> ysum = sum(y, axis<1>);
  float want_total = 0;
  for (index_t i = 0; i < S; ++i)
    for (index_t j = 0; j < D; ++j) want_total += std::exp(x(i, j) * 0.5f) + col(j) - row(i, 0);
  float got_total = 0;
  for (index_t i = 0; i < S; ++i) got_total += ysum(i);
  check_near("sum(exp(x/2) + col - row)", got_total, want_total);
  // log: its xsimd kernel selects between integer lanes, which an AVX-512BW -O0 build once could not compile.
  Tensor<float> logs = sum(log(abs(x) + 1.0f));
  float want_logs = 0;
  for (index_t i = 0; i < S; ++i)
    for (index_t j = 0; j < D; ++j) want_logs += std::log(std::fabs(x(i, j)) + 1.0f);
  check_near("sum(log(|x| + 1))", logs(), want_logs);
  Tensor<std::int64_t, shape<S>> best = argmax(x, axis<1>);
  check(best(0) >= 0 && best(0) < D, "argmax in range", double(best(0)), 0);

  // Row-fused composites: softmax rows sum to 1; layer_norm rows have mean ~0 (gamma 1, beta 0).
  Tensor<float, shape<S, D>> p = softmax(x);
  Tensor<float> psum = sum(p);
  check_near("sum(softmax(x))", psum(), S);
  Tensor<float, shape<D>> ones = linspace<float, D>(1, 1), zeros = linspace<float, D>(0, 0);
  Tensor<float, shape<S, D>> n = layer_norm(x, ones, zeros);
  Tensor<float> nmean = mean(n);
  check_near("mean(layer_norm(x))", nmean(), 0.0, 1e-3);
  // log_softmax over rows of 1024 (a whole number of vectors: GCC 12 at -O3 warned on the dead scalar
  // tail of logsumexp's blocks, -Waggressive-loop-optimizations): exp of each row sums to 1.
  Tensor<float, shape<4, 1024>> wide = reshape<4, 1024>(linspace<float, 4 * 1024>(-2, 2));
  Tensor<float, shape<4, 1024>> lsm = log_softmax(wide);
  Tensor<float> lsum = sum(exp(lsm));
  check_near("sum(exp(log_softmax(wide)))", lsum(), 4);

  // Views: transpose, slice, reshape, and a matmul with a bias + relu epilogue (one nest).
  Tensor<float, shape<D, S>> xt = transpose(x);
  check(xt(3, 2) == x(2, 3), "transpose", xt(3, 2), x(2, 3));
  Tensor<float, shape<S, 4>> xs = slice<whole, range<4, 8>>(x);
  check(xs(1, 2) == x(1, 6), "slice", xs(1, 2), x(1, 6));
  Tensor<float, shape<4, 32>> xr = reshape<4, -1>(x);
  check(xr(1, 17) == x(3, 1), "reshape", xr(1, 17), x(3, 1));
  Tensor<float, shape<D, D>> w = normal<shape<D, D>>(g);
  Tensor<float, shape<D>> b = uniform<shape<D>>(g);
  Tensor<float, shape<S, D>> lin = relu(linear(x, w, b));
  float l01 = b(1);
  for (index_t i = 0; i < D; ++i) l01 += x(0, i) * w(1, i);
  check_near("relu(linear(x, w, b))", lin(0, 1), l01 > 0 ? l01 : 0.0f);
  Tensor<float, shape<S, D>> mm = matmul(x, transpose(w)) + b;
  check_near("matmul(x, wT) + b", mm(0, 1), l01);

  // conv2d with a fused bias + relu, then max and average pooling.
  model m(g);
  Tensor<float, shape<2, 3, 8, 8>> img = uniform<shape<2, 3, 8, 8>>(g);
  Tensor<float, shape<2, 4, 8, 8>> fmap = relu(conv2d(img, m.conv_w, padding<1>) + m.conv_b);
  float c = m.conv_b(2, 0, 0);
  for (index_t ci = 0; ci < 3; ++ci)
    for (index_t r = 0; r < 3; ++r)
      for (index_t s = 0; s < 3; ++s) c += img(1, ci, 2 + r, 4 + s) * m.conv_w(2, ci, r, s);
  check_near("conv2d", fmap(1, 2, 3, 5), c > 0 ? c : 0.0f);
  Tensor<float, shape<2, 4, 4, 4>> pooled = max_pool2d<2>(fmap);
  float pm = std::max(std::max(fmap(0, 1, 2, 2), fmap(0, 1, 2, 3)), std::max(fmap(0, 1, 3, 2), fmap(0, 1, 3, 3)));
  check(pooled(0, 1, 1, 1) == pm, "max_pool2d", pooled(0, 1, 1, 1), pm);
  Tensor<float, shape<2, 4, 4, 4>> avg = avg_pool2d<2>(fmap);
  check_near("avg_pool2d", avg(1, 0, 3, 0),
             (fmap(1, 0, 6, 0) + fmap(1, 0, 6, 1) + fmap(1, 0, 7, 0) + fmap(1, 0, 7, 1)) / 4);
  Tensor<float, shape<2, 4>> gap = global_avg_pool2d(fmap);
  Tensor<float> fsum = sum(slice<range<1, 2>, range<3, 4>>(fmap));
  check_near("global_avg_pool2d", gap(1, 3), fsum() / 64);

  // The attention block as a program: its activations planned into one static arena.
  using prog = program<const model, Tensor<float, shape<S, D>>>;
  static_assert(prog::arena_bytes > 0 && prog::arena_bytes <= 1 << 20);
  alignas(64) static std::byte arena[prog::arena_bytes];
  const model& cm = m;
  prog run(cm, arena);
  Tensor<float, shape<S, D>> out;
  run(out, x);
  Tensor<float, shape<S, D>> direct = cm.forward(x); // the same expression, without the program
  Tensor<float> diff = max(abs(out - direct));
  check_near("program vs direct", diff(), 0.0, 1e-5);
  Tensor<bool> has_nan = any(isnan(out));
  check(!has_nan(), "program output has no NaN", has_nan(), 0);

  if (failures) return 1;
  std::printf("warnings consumer: ok\n");
  return 0;
}
